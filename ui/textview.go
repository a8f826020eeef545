package ui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// textView is a scrollable block of read-only text (describe output, the sweep preview). The
// text is split into lines once, when it arrives; a frame renders only the lines on screen.
type textView struct {
	lines []string
	top   int
	w, h  int
}

func (t *textView) setText(s string) {
	s = strings.ReplaceAll(s, "\t", "    ")
	t.lines = strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range t.lines {
		t.lines[i] = sanitize(l)
	}
	t.clamp()
}

func (t *textView) setSize(w, h int) {
	t.w, t.h = w, h
	t.clamp()
}

func (t *textView) clamp() { t.top = max(min(t.top, len(t.lines)-t.h), 0) }

// scroll applies a navigation key; every key moves the text, there is no cursor.
func (t *textView) scroll(k navKeys, msg tea.KeyPressMsg) bool {
	switch {
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
	return t.lines[t.top:end]
}
