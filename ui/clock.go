package ui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// minClock is the shortest wait between two re-renders for the clock alone.
const minClock = time.Second

// scheduleClock asks for a re-render when the next text on screen that moves with the clock
// (an age, a countdown, a status message running out) will read differently, and not before:
// an idle console shows "5m ago" for a minute without drawing a frame.
func (m *model) scheduleClock() tea.Cmd {
	next := m.nextClockChange()
	if next.IsZero() {
		return nil
	}
	next = latest(next, m.env.now.Add(minClock))
	if !m.live.clockAt.IsZero() && !m.live.clockAt.After(next) && m.live.clockAt.After(m.env.now) {
		return nil // a re-render no later than that is on its way
	}
	m.live.clockAt = next
	return m.live.after(next.Sub(m.env.now), clockMsg{due: next})
}

// nextClockChange is the earliest time a clock-derived text of the projects screen changes
// (zero: none will). Other panes keep their own pace (paneRefreshInterval).
func (m *model) nextClockChange() time.Time {
	if m.top() != pane(m.projects) || m.tooSmall() {
		return time.Time{}
	}
	now := m.env.now
	var next time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	p := m.projects
	if p.loaded && !m.showHelp {
		start, end := p.nav.window()
		for _, i := range p.shown[start:end] {
			r := &p.rows[i]
			last := fromMicros(r.lastActivity)
			soonest(agoChange(now, last))
			if p.tables.status.get(r.status) == engine.StatusActive && !last.IsZero() && p.env.idle > 0 {
				soonest(countdownChange(now, last.Add(p.env.idle)))
			}
		}
	}
	// While the watcher runs the list is checked all the time: "refreshed just now" holds.
	if m.live.stopWatch == nil {
		soonest(agoChange(now, m.header.loadedAt))
	}
	if m.status.shown(now) {
		d := infoShownFor
		if m.status.kind == statusErr {
			d = errShownFor
		}
		soonest(m.status.at.Add(d))
	}
	if m.sweep.lastAt.IsZero() {
		soonest(agoChange(now, m.sweep.since))
	} else {
		soonest(agoChange(now, m.sweep.lastAt))
	}
	return next
}

// agoChange is when ago(now, t) next reads differently.
func agoChange(now, t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	d := now.Sub(t)
	var unit time.Duration
	switch {
	case d < 5*time.Second:
		return t.Add(5 * time.Second)
	case d < time.Minute:
		unit = time.Second
	case d < 24*time.Hour:
		unit = time.Minute
	default:
		unit = time.Hour
	}
	return t.Add((d/unit + 1) * unit)
}

// countdownChange is when span(deadline-now, truncated to seconds) next reads differently
// (zero once it is due: "due" stays).
func countdownChange(now, deadline time.Time) time.Time {
	left := deadline.Sub(now)
	if left <= 0 {
		return time.Time{}
	}
	unit := time.Hour
	switch {
	case left < time.Minute:
		unit = time.Second
	case left < 24*time.Hour:
		unit = time.Minute
	}
	return now.Add(left%unit + time.Nanosecond)
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
