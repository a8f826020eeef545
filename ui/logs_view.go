package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
)

const (
	stampLayout = "15:04:05.000 "
	// stampDayLayout is for a line from another day than today (a log kept across a
	// hibernation): the time of day alone would mislead.
	stampDayLayout = "Jan 02 15:04:05.000 "
)

// stamp is a line's time as the pane shows it: the time of day, with the date when that is
// not today.
func (l *logsPane) stamp(at time.Time) string {
	at, now := at.In(l.env.loc), l.env.now.In(l.env.loc)
	if y, m, d := at.Date(); y != now.Year() || m != now.Month() || d != now.Day() {
		return at.Format(stampDayLayout)
	}
	return at.Format(stampLayout)
}

func (l *logsPane) view() string {
	lines := make([]string, 0, l.h)
	lines = append(lines, l.statusView())
	rows := max(l.h-1, 0)
	if l.ring.len() == 0 {
		th := &l.env.theme
		msg := "  waiting for lines…"
		if l.state == streamFailed || l.state == streamEnded {
			msg = "  no lines"
		}
		lines = append(lines, th.Muted.Render(msg))
		return block(lines, l.w, l.h)
	}
	if l.shownLen() == 0 {
		th := &l.env.theme
		msg := "  no line matches &" + sanitize(l.filter.flt.raw) + "  (esc clears the filter)"
		return block(append(lines, th.Muted.Render(msg)), l.w, l.h)
	}
	lines = append(lines, l.window(rows)...)
	return block(lines, l.w, l.h)
}

// window renders the rows ending at the bottom line, newest at the bottom: it walks back from
// there over the lines shown and stops once the screen is full, so the cost is the screen's,
// not the log's.
func (l *logsPane) window(rows int) []string {
	var rev []string
	for i := l.bottomPos(); i >= 0 && len(rev) < rows; i-- {
		s := l.seqAt(i)
		r := l.renderLine(l.ring.at(s), l.hasCur && s == l.cur)
		for i := len(r) - 1; i >= 0 && len(rev) < rows; i-- {
			rev = append(rev, r[i])
		}
	}
	out := make([]string, len(rev))
	for i, r := range rev {
		out[len(rev)-1-i] = r
	}
	return out
}

// renderLine renders one log line: one row, or several when wrapping. The current match
// carries the selection marker in front, and its matches the selection's colours.
func (l *logsPane) renderLine(ln logLine, current bool) []string {
	th := &l.env.theme
	prefix := ""
	if current {
		prefix = th.Match.Render(strings.TrimSpace(selMarker)) + " "
	}
	if l.stamps {
		prefix += th.LogTime.Render(l.stamp(ln.at))
	}
	hl := l.highlight
	if current {
		hl = l.highlightCurrent
	}
	avail := max(l.w-width(prefix), 1)
	if ln.marker || engine.IsLogMarker(ln.text) {
		return []string{prefix + th.LogMarker.Render(ansi.Truncate(ln.text, avail, "…"))}
	}
	if !l.wrap {
		return []string{prefix + hl(ansi.Truncate(ln.text, avail, "…"))}
	}
	parts := strings.Split(ansi.Hardwrap(ln.text, avail, true), "\n")
	pad := strings.Repeat(" ", width(prefix))
	for i, p := range parts {
		if i == 0 {
			parts[i] = prefix + hl(p)
		} else {
			parts[i] = pad + hl(p)
		}
	}
	return parts
}

// highlight styles the search matches in one row of plain text.
func (l *logsPane) highlight(s string) string { return l.mark(s, l.env.theme.Match) }

// highlightCurrent styles the matches of the current match's line.
func (l *logsPane) highlightCurrent(s string) string { return l.mark(s, l.env.theme.Selected) }

// mark styles the search matches in one row of plain text with st.
func (l *logsPane) mark(s string, st lipgloss.Style) string {
	th := &l.env.theme
	if l.re == nil {
		return th.Value.Render(s)
	}
	idx := l.re.FindAllStringIndex(s, -1)
	if len(idx) == 0 {
		return th.Value.Render(s)
	}
	var b strings.Builder
	at := 0
	for _, m := range idx {
		if m[1] == m[0] {
			continue
		}
		b.WriteString(th.Value.Render(s[at:m[0]]))
		b.WriteString(st.Render(s[m[0]:m[1]]))
		at = m[1]
	}
	b.WriteString(th.Value.Render(s[at:]))
	return b.String()
}

// statusView is the pane's first line: the stream's state, then the view's toggles.
func (l *logsPane) statusView() string {
	th := &l.env.theme
	var state string
	var st lipgloss.Style
	now := l.env.now
	switch l.state {
	case streamConnecting:
		state, st = "◌ connecting", th.StreamWarn
	case streamOpen:
		if s, style, ok := l.notRunning(); ok {
			state, st = s, style
			break
		}
		// Quiet counts from when the last line was written, not from the pane's opening.
		switch quiet := now.Sub(l.lastLine); {
		case l.lastLine.IsZero() && now.Sub(l.openedAt) >= quietAfter:
			state, st = "◌ quiet: no line received yet", th.StreamWarn
		case !l.lastLine.IsZero() && quiet >= quietAfter:
			state, st = "◌ quiet "+span(quiet.Truncate(time.Second)), th.StreamWarn
		default:
			state, st = "● streaming", th.StreamOK
		}
	case streamEnded:
		state, st = "■ stream ended", th.StreamWarn
		if s, style, ok := l.notRunning(); ok {
			state, st = s+", stream ended", style
		}
	case streamFailed:
		state, st = "✗ stream failed: "+sanitize(errText(l.err)), th.StreamBad
	}
	if l.reconnect {
		state += ", reconnecting in " + span(max(l.retryAt.Sub(now), 0).Truncate(time.Second))
	}
	parts := []string{
		"follow " + onOff(l.follow), "wrap " + onOff(l.wrap), "time " + onOff(l.stamps),
		fmt.Sprintf("tail %d", tailSizes[l.tailIdx]),
	}
	if l.filtering() {
		parts = append(parts, "&"+sanitize(l.filter.flt.raw))
	}
	if l.query != "" {
		parts = append(parts, "/"+sanitize(l.query)+" "+l.matchCount())
	}
	return st.Render(state) + th.Muted.Render("  "+strings.Join(parts, " · "))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
