package ui

import (
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// dialog is a modal box over the pane: it takes every key (but ctrl+c) until it closes, so a
// stray key meant for the list underneath can never act on it.
type dialog interface {
	title() string
	// content renders the lines inside the frame for an inner width w.
	content(w int) []string
	// update handles a key; closed tells the root to take the dialog down.
	update(msg tea.KeyPressMsg) (cmd tea.Cmd, closed bool)
	keyMap() help.KeyMap
	// cursor is where the terminal cursor goes, relative to the first content line; nil hides it.
	cursor() *tea.Cursor
	paste(msg tea.PasteMsg) tea.Cmd
}

// openDialogMsg asks the root to show a dialog.
type openDialogMsg struct{ d dialog }

const (
	// dialogMaxW keeps dialogs readable on wide terminals instead of stretching a sentence
	// over 200 columns.
	dialogMaxW = 72
	// dialogPadX is the space between the frame and the text on each side.
	dialogPadX = 1
)

// dialogWidth is the frame's width on a screen w wide.
func dialogWidth(w int) int { return max(min(dialogMaxW, w-4), 20) }

// frameDialog draws d in a rounded frame of width bw; the title sits in the top edge.
func frameDialog(e *env, d dialog, bw int) (lines []string, cur *tea.Cursor) {
	th := &e.theme
	inner := bw - 2 - 2*dialogPadX
	title := " " + sanitize(d.title()) + " "
	title = ansi.Truncate(title, max(bw-4, 0), "…")
	top := th.DialogBorder.Render("╭─") + th.DialogTitle.Render(title) +
		th.DialogBorder.Render(strings.Repeat("─", max(bw-3-width(title), 0))+"╮")
	lines = append(lines, top)
	pad := strings.Repeat(" ", dialogPadX)
	side := th.DialogBorder.Render("│")
	body := append([]string{""}, d.content(inner)...)
	for _, l := range body {
		lines = append(lines, side+pad+fit(l, inner)+pad+side)
	}
	lines = append(lines, th.DialogBorder.Render("╰"+strings.Repeat("─", max(bw-2, 0))+"╯"))
	if c := d.cursor(); c != nil {
		c.Position.X += 1 + dialogPadX
		c.Position.Y += 2 // the top edge and the blank line under it
		cur = c
	}
	return lines, cur
}

// overlay puts box over lines (a pane of width w), centred; the pane stays visible around it.
func overlay(lines, box []string, w int) (out []string, x, y int) {
	bw := 0
	for _, b := range box {
		bw = max(bw, width(b))
	}
	x = max((w-bw)/2, 0)
	y = max((len(lines)-len(box))/2, 0)
	out = append([]string(nil), lines...)
	for i, b := range box {
		row := y + i
		if row >= len(out) {
			break
		}
		l := fit(out[row], w)
		out[row] = ansi.Truncate(l, x, "") + b + ansi.Cut(l, x+bw, w)
	}
	return out, x, y
}

// para is a paragraph of dialog text: wrapped to the dialog's width, with an optional label
// in a left column (a hanging indent keeps the label column clean).
type para struct {
	label string
	text  string
	style lipgloss.Style
}

const paraLabelW = 10

func renderParas(e *env, ps []para, w int) []string {
	var out []string
	for _, p := range ps {
		if p.text == "" && p.label == "" {
			out = append(out, "")
			continue
		}
		indent := 0
		if p.label != "" {
			indent = paraLabelW
		}
		wrapped := wrapText(sanitize(p.text), max(w-indent, 8))
		for i, l := range wrapped {
			prefix := strings.Repeat(" ", indent)
			if i == 0 && p.label != "" {
				prefix = e.theme.Label.Render(fit(p.label, paraLabelW))
			}
			out = append(out, prefix+p.style.Render(l))
		}
	}
	return out
}

// buttons is a dialog's row of buttons; index 0 is Cancel and has the focus to begin with, so
// enter on a fresh dialog never destroys anything.
type buttons struct {
	labels []string
	focus  int
}

func (b *buttons) move(d int) {
	n := len(b.labels)
	b.focus = ((b.focus+d)%n + n) % n
}

// view renders the row right-aligned in w columns. The focused button is bracketed as well as
// styled, so it stays visible under NO_COLOR.
func (b buttons) view(e *env, w int) string {
	th := &e.theme
	parts := make([]string, len(b.labels))
	for i, l := range b.labels {
		if i == b.focus {
			parts[i] = th.ButtonFocused.Render("[ " + l + " ]")
		} else {
			parts[i] = th.Button.Render("  " + l + "  ")
		}
	}
	row := strings.Join(parts, " ")
	return strings.Repeat(" ", max(w-width(row), 0)) + row
}

// dialogKeys are the keys every confirming dialog shares.
type dialogKeys struct {
	Confirm key.Binding
	Cancel  key.Binding
	Press   key.Binding
	Next    key.Binding
	Prev    key.Binding
}

func newDialogKeys(confirm string) dialogKeys {
	return dialogKeys{
		Confirm: key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", strings.ToLower(confirm))),
		Cancel:  key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n/esc", "cancel")),
		Press:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "press focused")),
		Next:    key.NewBinding(key.WithKeys("tab", "right", "l"), key.WithHelp("tab/→", "next button")),
		Prev:    key.NewBinding(key.WithKeys("shift+tab", "left", "h"), key.WithHelp("shift+tab/←", "previous button")),
	}
}

// handleButtons applies the shared dialog keys: confirmed reports y or enter on the confirming
// button, closed any key that ends the dialog.
func (k dialogKeys) handleButtons(msg tea.KeyPressMsg, b *buttons) (confirmed, closed bool) {
	switch {
	case key.Matches(msg, k.Confirm):
		return true, true
	case key.Matches(msg, k.Cancel):
		return false, true
	case key.Matches(msg, k.Press):
		return b.focus != 0, true
	case key.Matches(msg, k.Next):
		b.move(1)
	case key.Matches(msg, k.Prev):
		b.move(-1)
	}
	return false, false
}
