package ui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

// promptDialog asks for one line of text (a snapshot label, a file name). What it starts is
// not destructive, so enter submits and esc cancels; y and n are letters here.
type promptDialog struct {
	env      *env
	head     string
	body     []para
	input    textinput.Model
	keys     promptKeys
	onSubmit func(value string) tea.Cmd
}

type promptKeys struct {
	Submit key.Binding
	Cancel key.Binding
}

func newPrompt(e *env, head, verb string, body []para, value, placeholder string, charLimit int, onSubmit func(string) tea.Cmd) *promptDialog {
	in := newInput(e, "> ", placeholder)
	in.CharLimit = charLimit
	in.SetValue(value)
	in.CursorEnd()
	in.Focus()
	return &promptDialog{
		env: e, head: head, body: body, input: in, onSubmit: onSubmit,
		keys: promptKeys{
			Submit: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", verb)),
			Cancel: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		},
	}
}

func (d *promptDialog) title() string { return d.head }

// inputRow is the input's line within the content (the cursor is placed on it).
func (d *promptDialog) inputRow(w int) int { return len(renderParas(d.env, d.body, w)) + 1 }

func (d *promptDialog) content(w int) []string {
	d.input.SetWidth(max(w-3, 1))
	lines := renderParas(d.env, d.body, w)
	th := &d.env.theme
	hint := th.HelpKey.Render("enter") + " " + th.HelpDesc.Render(d.keys.Submit.Help().Desc) + "   " +
		th.HelpKey.Render("esc") + " " + th.HelpDesc.Render("cancel")
	return append(lines, "", d.input.View(), "", hint)
}

func (d *promptDialog) update(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(msg, d.keys.Submit):
		return d.onSubmit(d.input.Value()), true
	case key.Matches(msg, d.keys.Cancel):
		return nil, true
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	return cmd, false
}

func (d *promptDialog) paste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	return cmd
}

func (d *promptDialog) keyMap() help.KeyMap {
	ks := []keyBinding{d.keys.Submit, d.keys.Cancel}
	return staticKeys{short: ks, full: [][]keyBinding{ks}}
}

func (d *promptDialog) cursor() *tea.Cursor {
	c := d.input.Cursor()
	if c == nil {
		return nil
	}
	// content() ran for this frame before the cursor is asked for, so the width is current.
	c.Position.Y += d.inputRow(d.input.Width() + 3)
	return c
}
