package engine

import (
	"bytes"
	"context"
	"strings"
	"time"
)

// LogTimeLayout is how a log line's time is written in front of it when LogOptions.Timestamps
// asks for times: RFC 3339 in UTC with nanoseconds, fixed width so the lines of a file sort as
// text (Docker's own layout). ParseLogLine also reads the variable-width RFC3339Nano that
// Kubernetes writes.
const LogTimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Log marker texts: what a runtime that keeps logs (LogKeeper) writes into a container's log
// at the moments that explain a gap in it.
const (
	LogMarkStarted    = "started"
	LogMarkStopped    = "stopped"
	LogMarkHibernated = "hibernated"
	LogMarkWoke       = "woke"
	LogMarkRestored   = "restored from snapshot"
)

// LogMarker is the line a marker reads as in a log: "— stopped —". Console and CLI show it
// like any other line, so a gap in a log says what happened there.
func LogMarker(what string) string { return "— " + what + " —" }

// IsLogMarker reports whether a line's text (without its time) is a marker.
func IsLogMarker(text string) bool {
	text = strings.TrimSuffix(text, "\n")
	return len(text) > len("— ")*2 && strings.HasPrefix(text, "— ") && strings.HasSuffix(text, " —")
}

// FormatLogLine is line (without its newline) with its time in front, as a runtime delivers it
// when LogOptions.Timestamps is set.
func FormatLogLine(at time.Time, line []byte) []byte {
	out := make([]byte, 0, len(LogTimeLayout)+2+len(line))
	out = at.UTC().AppendFormat(out, LogTimeLayout)
	out = append(out, ' ')
	out = append(out, line...)
	return append(out, '\n')
}

// ParseLogLine splits a line read with LogOptions.Timestamps into its time and its text. A line
// without a time in front (written before sailtui kept times, or by a runtime that has none)
// comes back whole, with ok false.
func ParseLogLine(line []byte) (at time.Time, text []byte, ok bool) {
	i := bytes.IndexByte(line, ' ')
	// The shortest RFC 3339 time is 20 bytes (no fraction, Z); the longest is a few more than
	// the layout.
	if i < 20 || i > len(LogTimeLayout)+6 || line[4] != '-' || line[7] != '-' || line[10] != 'T' {
		return time.Time{}, line, false // cheap: most lines are not near a time
	}
	t, err := time.Parse(time.RFC3339Nano, string(line[:i]))
	if err != nil {
		return time.Time{}, line, false
	}
	return t, line[i+1:], true
}

// LogKeeper is offered by runtimes that keep each container's log on this machine, outside the
// project's storage (so it is in no snapshot) and across hibernate and wake. The engine marks
// the moments only it knows of (hibernated, woke) and drops the logs with the project.
type LogKeeper interface {
	// MarkLog appends LogMarker(what), timed now, to the log of each of cs.
	MarkLog(ctx context.Context, p Project, cs []Container, what string) error
	// DropLogs removes every log kept for p (the project is deleted). Idempotent.
	DropLogs(ctx context.Context, p Project) error
}

// markLogs writes a marker where the runtime keeps logs; a log is a convenience, so a marker
// that cannot be written is logged, never an operation's failure.
func (e *Engine) markLogs(ctx context.Context, p Project, cs []Container, what string) {
	lk, ok := e.runtime.(LogKeeper)
	if !ok || len(cs) == 0 {
		return
	}
	if err := lk.MarkLog(context.WithoutCancel(ctx), p, cs, what); err != nil {
		e.log.Warn("mark container logs", "project", p.Slug, "marker", what, "err", err)
	}
}

// dropLogs removes the logs of a deleted project where the runtime keeps them.
func (e *Engine) dropLogs(ctx context.Context, p Project) {
	lk, ok := e.runtime.(LogKeeper)
	if !ok {
		return
	}
	if err := lk.DropLogs(context.WithoutCancel(ctx), p); err != nil {
		e.log.Warn("remove the logs of a deleted project", "project", p.Slug, "err", err)
	}
}
