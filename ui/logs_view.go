package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

const stampLayout = "15:04:05.000 "

func (l *logsPane) view() string {
	lines := make([]string, 0, l.h)
	lines = append(lines, l.statusView())
	rows := max(l.h-1, 0)
	if l.ring.len() == 0 {
		th := l.env.theme
		msg := "  waiting for lines…"
		if l.state == streamFailed || l.state == streamEnded {
			msg = "  no lines"
		}
		lines = append(lines, th.Muted.Render(msg))
		return block(lines, l.w, l.h)
	}
	lines = append(lines, l.window(rows)...)
	return block(lines, l.w, l.h)
}

// window renders the rows ending at the bottom line, newest at the bottom: it walks back from
// there and stops once the screen is full, so the cost is the screen's, not the log's.
func (l *logsPane) window(rows int) []string {
	bottom := l.ring.end() - 1
	if !l.follow {
		bottom = max(min(l.bottom, bottom), l.ring.start())
	}
	var rev []string
	for s := bottom; s >= l.ring.start() && len(rev) < rows; s-- {
		r := l.renderLine(l.ring.at(s))
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

// renderLine renders one log line: one row, or several when wrapping.
func (l *logsPane) renderLine(ln logLine) []string {
	th := l.env.theme
	prefix := ""
	if l.stamps {
		prefix = th.LogTime.Render(ln.at.In(l.env.loc).Format(stampLayout))
	}
	avail := max(l.w-width(prefix), 1)
	if ln.marker {
		return []string{prefix + th.LogMarker.Render(ansi.Truncate(ln.text, avail, "…"))}
	}
	if !l.wrap {
		return []string{prefix + l.highlight(ansi.Truncate(ln.text, avail, "…"))}
	}
	parts := strings.Split(ansi.Hardwrap(ln.text, avail, true), "\n")
	pad := strings.Repeat(" ", width(prefix))
	for i, p := range parts {
		if i == 0 {
			parts[i] = prefix + l.highlight(p)
		} else {
			parts[i] = pad + l.highlight(p)
		}
	}
	return parts
}

// highlight styles the search matches in one row of plain text.
func (l *logsPane) highlight(s string) string {
	th := l.env.theme
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
		b.WriteString(th.Match.Render(s[m[0]:m[1]]))
		at = m[1]
	}
	b.WriteString(th.Value.Render(s[at:]))
	return b.String()
}

// statusView is the pane's first line: the stream's state, then the view's toggles.
func (l *logsPane) statusView() string {
	th := l.env.theme
	var state string
	var st lipgloss.Style
	now := l.env.now
	switch l.state {
	case streamConnecting:
		state, st = "◌ connecting", th.StreamWarn
	case streamOpen:
		// Quiet counts from the last line received, not from the pane's opening.
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
	if l.query != "" {
		parts = append(parts, "/"+sanitize(l.query))
	}
	return st.Render(state) + th.Muted.Render("  "+strings.Join(parts, " · "))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
