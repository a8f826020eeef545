package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
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
	Wrap  key.Binding
}

func newTextKeys() textKeys {
	return textKeys{
		navKeys: newNavKeys(),
		Left:    key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "scroll left")),
		Right:   key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "scroll right")),
		Wrap:    key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wrap")),
	}
}

// sideStep is how far one left/right moves the text.
const sideStep = 8

// keyMap is the help for a text view: the sideways keys only when some line is cut, wrap
// when some line is wider than the screen.
func (t *textView) keyMap(k textKeys) staticKeys {
	short := []keyBinding{k.Up, k.Down, k.PageDown}
	full := k.bindings()
	if t.wide > t.w || t.wrap {
		wrap := k.Wrap
		wrap.SetHelp("w", pick(t.wrap, "no wrap", "wrap"))
		short = append(short, wrap)
		full = append(full, wrap)
	}
	if t.wide > t.w && !t.wrap {
		short = append(short, k.Right, k.Left)
		full = append(full, k.Left, k.Right)
	}
	return staticKeys{short: short, full: [][]keyBinding{full}}
}

// textView is a scrollable block of read-only text (describe output, the sweep preview). The
// text is split into lines once, when it arrives; a frame renders only the lines on screen.
type textView struct {
	// raw is the text's lines; lines is what is shown: raw, or raw wrapped to the width.
	raw   []string
	lines []string
	wrap  bool
	top   int
	// left is the first column shown; wide is the widest line's width.
	left int
	wide int
	w, h int
}

func (t *textView) setText(s string) {
	s = strings.ReplaceAll(s, "\t", "    ")
	t.raw = strings.Split(strings.TrimRight(s, "\n"), "\n")
	t.wide = 0
	for i, l := range t.raw {
		t.raw[i] = sanitize(l)
		t.wide = max(t.wide, ansi.StringWidth(t.raw[i]))
	}
	t.layout()
}

func (t *textView) setSize(w, h int) {
	resized := w != t.w
	t.w, t.h = w, h
	if resized && t.wrap {
		t.layout()
		return
	}
	t.clamp()
}

// layout rebuilds the shown lines: only when the text, the width or wrap change, never per
// frame. Wrapping cuts at the width and keeps every space (a table, a script's indentation).
func (t *textView) layout() {
	if !t.wrap || t.wide <= t.w || t.w <= 0 {
		t.lines = t.raw
	} else {
		t.lines = make([]string, 0, len(t.raw))
		for _, l := range t.raw {
			if ansi.StringWidth(l) <= t.w {
				t.lines = append(t.lines, l)
				continue
			}
			t.lines = append(t.lines, strings.Split(ansi.Hardwrap(l, t.w, true), "\n")...)
		}
	}
	t.clamp()
}

func (t *textView) clamp() {
	t.top = max(min(t.top, len(t.lines)-t.h), 0)
	if t.wrap {
		t.left = 0
	}
	t.left = max(min(t.left, t.wide-t.w), 0)
}

// scroll applies a navigation key; every key moves the text, there is no cursor.
func (t *textView) scroll(k textKeys, msg tea.KeyPressMsg) bool {
	switch {
	case key.Matches(msg, k.Wrap):
		t.wrap = !t.wrap
		t.layout()
		return true
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

// textPane is the common part of the panes that show the text of one engine call (describe,
// the sweep preview, the doctor): the text, its scroll keys, the load in flight and what it
// said last. Each pane adds what it asks and how it words the answer.
type textPane struct {
	noInput
	env  *env
	keys textKeys
	text textView
	gate loadGate
	// loaded is true once some answer arrived; err is the last failure, shown in place of
	// the text only while there is none.
	loaded bool
	err    error
	// waiting is the line shown until the first answer.
	waiting string
	// headers shows upper-case lines as section headers (the engine's reports); describe
	// output is the runtime's own text and stays as it is.
	headers bool
}

func newTextPane(e *env, waiting string, headers bool) textPane {
	return textPane{env: e, keys: newTextKeys(), waiting: waiting, headers: headers}
}

func (t *textPane) close()              {}
func (t *textPane) setSize(w, h int)    { t.text.setSize(w, h) }
func (t *textPane) keyMap() help.KeyMap { return t.text.keyMap(t.keys) }
func (t *textPane) update(msg tea.KeyPressMsg) tea.Cmd {
	t.text.scroll(t.keys, msg)
	return nil
}

// took takes an answer: its text on success, else the error for the status line (prefixed
// with what was asked) while the text already shown stays. again is the follow-up load when
// one was asked for meanwhile; nil drops such a request.
func (t *textPane) took(text string, err error, what string, again func() tea.Cmd) tea.Cmd {
	t.err = err
	var cmds []tea.Cmd
	if err == nil {
		t.text.setText(text)
		t.loaded = true
	} else {
		cmds = append(cmds, msgCmd(errMsg{err: fmt.Errorf("%s: %w", what, err)}))
	}
	if t.gate.done() && again != nil {
		cmds = append(cmds, again())
	}
	return tea.Batch(cmds...)
}

// view renders the text; until some arrived, its error or the waiting line.
func (t *textPane) view() string {
	th := &t.env.theme
	var lines []string
	switch {
	case t.err != nil && !t.loaded:
		lines = []string{th.Error.Render("  " + sanitize(t.err.Error()))}
	case !t.loaded:
		lines = []string{th.Muted.Render("  " + t.waiting)}
	default:
		for _, l := range t.text.view() {
			if t.headers && l != "" && !strings.HasPrefix(l, " ") && strings.ToUpper(l) == l {
				lines = append(lines, th.TableHeader.Render(l))
			} else {
				lines = append(lines, th.Value.Render(l))
			}
		}
	}
	return block(lines, t.text.w, t.text.h)
}
