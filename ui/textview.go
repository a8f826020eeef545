package ui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// textKeys scroll a text view: up and down as a list does, and sideways, since describe
// output (a compose file, a kubectl-like table) is often wider than the screen.
type textKeys struct {
	navKeys
	Left  key.Binding
	Right key.Binding
}

func newTextKeys() textKeys {
	return textKeys{
		navKeys: newNavKeys(),
		Left:    key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "scroll left")),
		Right:   key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "scroll right")),
	}
}

// sideStep is how far one left/right moves the text.
const sideStep = 8

// keyMap is the help for a text view: the sideways keys only when some line is cut.
func (t *textView) keyMap(k textKeys) staticKeys {
	short := []keyBinding{k.Up, k.Down, k.PageDown}
	full := k.bindings()
	if t.wide > t.w {
		short = append(short, k.Right, k.Left)
		full = append(full, k.Left, k.Right)
	}
	return staticKeys{short: short, full: [][]keyBinding{full}}
}

// textView is a scrollable block of read-only text (describe output, the sweep preview). The
// text is split into lines once, when it arrives; a frame renders only the lines on screen.
type textView struct {
	lines []string
	top   int
	// left is the first column shown; wide is the widest line's width.
	left int
	wide int
	w, h int
}

func (t *textView) setText(s string) {
	s = strings.ReplaceAll(s, "\t", "    ")
	t.lines = strings.Split(strings.TrimRight(s, "\n"), "\n")
	t.wide = 0
	for i, l := range t.lines {
		t.lines[i] = sanitize(l)
		t.wide = max(t.wide, ansi.StringWidth(t.lines[i]))
	}
	t.clamp()
}

func (t *textView) setSize(w, h int) {
	t.w, t.h = w, h
	t.clamp()
}

func (t *textView) clamp() {
	t.top = max(min(t.top, len(t.lines)-t.h), 0)
	t.left = max(min(t.left, t.wide-t.w), 0)
}

// scroll applies a navigation key; every key moves the text, there is no cursor.
func (t *textView) scroll(k textKeys, msg tea.KeyPressMsg) bool {
	switch {
	case key.Matches(msg, k.Left):
		t.left -= sideStep
	case key.Matches(msg, k.Right):
		t.left += sideStep
	case key.Matches(msg, k.Up):
		t.top--
	case key.Matches(msg, k.Down):
		t.top++
	case key.Matches(msg, k.PageUp):
		t.top -= max(t.h-1, 1)
	case key.Matches(msg, k.PageDown):
		t.top += max(t.h-1, 1)
	case key.Matches(msg, k.Top):
		t.top = 0
	case key.Matches(msg, k.Bottom):
		t.top = len(t.lines)
	default:
		return false
	}
	t.clamp()
	return true
}

func (t *textView) view() []string {
	end := min(t.top+t.h, len(t.lines))
	if t.top >= end {
		return nil
	}
	if t.left == 0 {
		return t.lines[t.top:end]
	}
	out := make([]string, 0, end-t.top)
	for _, l := range t.lines[t.top:end] {
		out = append(out, ansi.Cut(l, t.left, t.left+t.w))
	}
	return out
}

// reportView renders a pane that shows a text report of the engine's (the sweep preview, the
// doctor): upper-case lines as section headers, the rest as values; until the report is loaded,
// its error or the waiting line.
func reportView(e *env, t *textView, loaded bool, err error, waiting string, w, h int) string {
	th := e.theme
	var lines []string
	switch {
	case err != nil && !loaded:
		lines = []string{th.Error.Render("  " + sanitize(err.Error()))}
	case !loaded:
		lines = []string{th.Muted.Render("  " + waiting)}
	default:
		for _, l := range t.view() {
			if l != "" && !strings.HasPrefix(l, " ") && strings.ToUpper(l) == l {
				lines = append(lines, th.TableHeader.Render(l))
			} else {
				lines = append(lines, th.Value.Render(l))
			}
		}
	}
	return block(lines, w, h)
}
