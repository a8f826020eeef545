package ui

import (
	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
)

// confirmDialog asks before a destructive action: it says what will be replaced or removed,
// and runs onConfirm only on y or on enter with the confirming button focused.
type confirmDialog struct {
	env       *env
	head      string
	body      []para
	buttons   buttons
	keys      dialogKeys
	onConfirm tea.Cmd
}

func newConfirm(e *env, head, verb string, body []para, onConfirm tea.Cmd) *confirmDialog {
	return &confirmDialog{
		env: e, head: head, body: body, onConfirm: onConfirm,
		buttons: buttons{labels: []string{"Cancel", verb}},
		keys:    newDialogKeys(verb),
	}
}

func (d *confirmDialog) title() string { return d.head }

func (d *confirmDialog) content(w int) []string {
	lines := renderParas(d.env, d.body, w)
	return append(lines, "", d.buttons.view(d.env, w))
}

func (d *confirmDialog) update(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	ok, closed := d.keys.handleButtons(msg, &d.buttons)
	if ok {
		return d.onConfirm, true
	}
	return nil, closed
}

func (d *confirmDialog) keyMap() help.KeyMap {
	k := d.keys
	all := []keyBinding{k.Confirm, k.Cancel, k.Press, k.Next}
	return staticKeys{short: all, full: [][]keyBinding{all, {k.Prev}}}
}

func (d *confirmDialog) cursor() *tea.Cursor        { return nil }
func (d *confirmDialog) paste(tea.PasteMsg) tea.Cmd { return nil }
