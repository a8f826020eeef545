package ui

import (
	"fmt"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// replaceDialog is the offer made when the timeline is full: pick the manual snapshot to give
// up for the new one. Giving one up deletes it, so it confirms like any destructive action.
type replaceDialog struct {
	env     *env
	proj    engine.Project
	label   string
	cands   []engine.Snapshot
	nav     listNav
	buttons buttons
	keys    dialogKeys
	up      key.Binding
	down    key.Binding
	onPick  func(engine.Snapshot) tea.Cmd
}

func newReplaceDialog(e *env, p engine.Project, cands []engine.Snapshot, label string, onPick func(engine.Snapshot) tea.Cmd) *replaceDialog {
	d := &replaceDialog{
		env: e, proj: p, label: label, cands: cands, onPick: onPick,
		buttons: buttons{labels: []string{"Cancel", "Replace"}},
		keys:    newDialogKeys("replace"),
		up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
	}
	d.nav.setHeight(engine.MaxManualSnapshots)
	d.nav.setLen(len(cands))
	// The oldest goes first by default: the list is newest first.
	d.nav.bottom()
	return d
}

func (d *replaceDialog) title() string { return "Timeline full" }

func (d *replaceDialog) content(w int) []string {
	th := &d.env.theme
	lines := renderParas(d.env, []para{{text: fmt.Sprintf(
		"%s already has %d manual snapshots. Replace one with the new snapshot%s? The one replaced is deleted (kept %d days, then purged).",
		d.proj.Slug, engine.MaxManualSnapshots, quoteLabel(d.label), int(engine.SnapshotRetention.Hours()/24))}}, w)
	lines = append(lines, "")
	if len(d.cands) == 0 {
		lines = append(lines, th.Muted.Render("  every manual snapshot is still being taken; try again when one is ready"))
	}
	start, end := d.nav.window()
	for i := start; i < end; i++ {
		s := d.cands[i]
		label := s.Label
		if label == "" {
			label = s.ID
		}
		row := fmt.Sprintf("%s  %s", s.CreatedAt.In(d.env.loc).Format("01-02 15:04"), sanitize(label))
		if i == d.nav.cursor {
			lines = append(lines, th.Selected.Render(fit(selMarker+row, w)))
		} else {
			lines = append(lines, "  "+th.Value.Render(row))
		}
	}
	return append(lines, "", d.buttons.view(d.env, w))
}

func (d *replaceDialog) update(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(msg, d.up):
		d.nav.move(-1)
		return nil, false
	case key.Matches(msg, d.down):
		d.nav.move(1)
		return nil, false
	}
	ok, closed := d.keys.handleButtons(msg, &d.buttons)
	if ok && len(d.cands) > 0 {
		return d.onPick(d.cands[d.nav.cursor]), true
	}
	return nil, closed
}

func (d *replaceDialog) keyMap() help.KeyMap {
	k := d.keys
	short := []keyBinding{d.up, d.down, k.Confirm, k.Cancel, k.Press}
	return staticKeys{short: short, full: [][]keyBinding{short, {k.Next, k.Prev}}}
}

func (d *replaceDialog) cursor() *tea.Cursor        { return nil }
func (d *replaceDialog) paste(tea.PasteMsg) tea.Cmd { return nil }
