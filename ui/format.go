package ui

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
)

// ago renders how long before now t was, coarse enough to stay the same for a while so rows
// do not flicker on every refresh.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	// A negative age (another host's clock running ahead) also reads as "just now".
	if d < 5*time.Second {
		return "just now"
	}
	return span(d) + " ago"
}

// span renders a duration with its largest unit only, or two for hours so that a
// hibernation an hour and a half away does not read as "1h".
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		h := int(d / time.Hour)
		if m := int(d%time.Hour) / int(time.Minute); m != 0 && h < 10 {
			return fmt.Sprintf("%dh%02dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// seg is a run of text in one style; cells are made of a few of them (a name and its slug).
// The style is the theme's own, by reference: a lipgloss.Style is 648 bytes, and a copy per
// cell was most of the garbage a frame of the projects table made.
type seg struct {
	text  string
	style *lipgloss.Style
}

type cell []seg

func txt(s string, st *lipgloss.Style) cell { return cell{{text: s, style: st}} }

// width is how many columns the cell takes unclipped.
func (c cell) width() int {
	n := 0
	for _, s := range c {
		n += width(sanitize(s.text))
	}
	return n
}

// render fits the cell into exactly w columns, truncating with an ellipsis. Styles are applied
// after truncation so no escape sequence is ever cut in half. The selected row renders its
// cells unstyled: the selection styles the whole line, and a cell's own reset sequence would
// cut the selection's background short.
func (c cell) render(w int, styled bool) string {
	if w <= 0 {
		return ""
	}
	texts := make([]string, len(c))
	widths := make([]int, len(c))
	total := 0
	for i, s := range c {
		texts[i] = sanitize(s.text)
		widths[i] = width(texts[i])
		total += widths[i]
	}
	budget, cut := w, total > w
	if cut {
		budget = w - 1 // room for the ellipsis
	}
	var b strings.Builder
	used := 0
	for i, s := range c {
		t, tw := texts[i], widths[i]
		last := used+tw > budget
		if last {
			t = ansi.Truncate(t, budget-used, "") + "…"
			tw = width(t)
		}
		if styled {
			b.WriteString(renderInline(s.style, t))
		} else {
			b.WriteString(t)
		}
		used += tw
		if last {
			break
		}
	}
	if used < w {
		b.WriteString(strings.Repeat(" ", w-used))
	}
	return b.String()
}

// inlineWrap is what a style writes around any text it renders inline: lipgloss works that out
// again on each Render, from some 40 properties, and that was most of a frame's cost when the
// clock moves every row of the table (a fresh fleet's "12s ago", once a second).
type inlineWrap struct {
	pre, post string
	plain     bool // the text comes out as it went in, between pre and post
}

// inlineWraps caches inlineWrap per style. Cells hold the theme's own styles by reference, and
// the theme is never changed once built, so the pointer names the style for good; the map
// keeps each style alive, so an address is never reused for another while it is a key.
var inlineWraps sync.Map // *lipgloss.Style → inlineWrap

// renderInline is st.Inline(true).Render(t) for text that sanitize let through.
func renderInline(st *lipgloss.Style, t string) string {
	var w inlineWrap
	if v, ok := inlineWraps.Load(st); ok {
		w = v.(inlineWrap)
	} else {
		w = wrapOf(st.Inline(true))
		inlineWraps.Store(st, w)
	}
	if !w.plain || t == "" {
		return st.Inline(true).Render(t)
	}
	return w.pre + t + w.post
}

// wrapOf finds what st writes around text, if it writes the same around different texts
// (spaces, digits, wide and accented runes) and leaves them as they are. A style that pads,
// aligns, transforms or styles spaces apart does not, and keeps rendering each text.
func wrapOf(st lipgloss.Style) inlineWrap {
	const probe = "x"
	r := st.Render(probe)
	i := strings.Index(r, probe)
	if i < 0 {
		return inlineWrap{}
	}
	w := inlineWrap{pre: r[:i], post: r[i+len(probe):]}
	for _, t := range []string{"ab 1 é世 ", " 12s ago", "-"} {
		if st.Render(t) != w.pre+t+w.post {
			return inlineWrap{}
		}
	}
	w.plain = true
	return w
}

// sanitize keeps data from the store (names, URLs, error text) from moving the terminal's
// cursor, reordering the text around it (bidi overrides) or breaking the one-line-per-row
// layout: what engine.Unprintable names is blanked.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}

func isControl(r rune) bool { return engine.Unprintable(r) }

// fit makes a rendered line exactly w columns wide.
func fit(line string, w int) string {
	if w <= 0 {
		return ""
	}
	lw := width(line)
	switch {
	case lw > w:
		return ansi.Truncate(line, w, "")
	case lw < w:
		return line + strings.Repeat(" ", w-lw)
	}
	return line
}

// block turns lines into exactly h lines of width w, so every pane fills its area and the
// screen never keeps stale text below a shorter pane.
func block(lines []string, w, h int) string {
	if h <= 0 {
		return ""
	}
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
	}
	return strings.Join(out, "\n")
}

// splitLines splits a rendered block into lines, for placing it inside another block.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// center puts a rendered line in the middle of a w-wide line.
func center(line string, w int) string {
	lw := width(line)
	if lw >= w {
		return fit(line, w)
	}
	return strings.Repeat(" ", (w-lw)/2) + line
}

// wrapText word-wraps plain text to w columns at spaces only (slugs and dates keep their
// hyphens), cutting a word longer than a line.
func wrapText(s string, w int) []string {
	w = max(w, 1)
	var out []string
	var line strings.Builder
	lw := 0
	flush := func() {
		out = append(out, line.String())
		line.Reset()
		lw = 0
	}
	for _, word := range strings.Fields(s) {
		ww := ansi.StringWidth(word)
		for ww > w {
			if lw > 0 {
				flush()
			}
			head := ansi.Truncate(word, w, "")
			out = append(out, head)
			word = strings.TrimPrefix(word, head)
			ww = ansi.StringWidth(word)
		}
		if ww == 0 {
			continue
		}
		if lw > 0 && lw+1+ww > w {
			flush()
		}
		if lw > 0 {
			line.WriteByte(' ')
			lw++
		}
		line.WriteString(word)
		lw += ww
	}
	if lw > 0 || len(out) == 0 {
		flush()
	}
	return out
}

// width is ansi.StringWidth with a fast path for what most of a frame is: ASCII text and SGR
// sequences. Measuring every line of every frame by grapheme cluster was a third of a frame.
func width(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			return ansi.StringWidth(s)
		case c == 0x1b:
			// CSI: ESC [ parameters final-byte (0x40-0x7e); anything else takes the slow path.
			if i+1 >= len(s) || s[i+1] != '[' {
				return ansi.StringWidth(s)
			}
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
		case c >= 0x20 && c != 0x7f:
			n++
		}
	}
	return n
}
