package ui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

const (
	// reloadInterval coalesces bursts of events (a sweep hibernating hundreds of projects) into
	// at most a few list reloads a second.
	reloadInterval = 250 * time.Millisecond
	// refreshInterval is the slow poll for what the notifier cannot tell: an in-process bus
	// does not hear other processes, and ages and countdowns move on by themselves.
	refreshInterval = 5 * time.Second
	// resubscribeDelay paces reconnecting a notifier that failed or closed its stream.
	resubscribeDelay = 3 * time.Second
	// maxEventBatch bounds how many queued events one message carries.
	maxEventBatch = 512
)

// liveState keeps the projects list current without ever running two loads at once.
type liveState struct {
	loading bool
	// pending is a reload asked for while one ran; it runs when that one ends.
	pending bool
	// scheduled is true while a reloadDueMsg is on its way.
	scheduled bool
	// changed collects the projects named by events since the last reload.
	changed map[string]bool
	// after delivers msg once d has passed; tests replace it to see what was scheduled
	// without waiting for it.
	after func(d time.Duration, msg tea.Msg) tea.Cmd
}

func tick(d time.Duration, msg tea.Msg) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return msg })
}

type (
	projectsLoadedMsg struct {
		ps  []engine.Project
		err error
		// asked is when the load was asked for (the status line's rows are compared only
		// with loads asked for after its message).
		asked time.Time
	}
	subscribedMsg struct {
		ch  <-chan engine.Event
		err error
	}
	eventsMsg struct {
		ch  <-chan engine.Event
		evs []engine.Event
	}
	eventsClosedMsg struct{}
	resubscribeMsg  struct{}
	reloadDueMsg    struct{}
	refreshTickMsg  struct{}
)

// reload loads the projects list, or remembers to once the running load ends.
func (m *model) reload() tea.Cmd {
	if m.live.loading {
		m.live.pending = true
		return nil
	}
	m.live.loading = true
	ctx, src, asked := m.env.ctx, m.env.src, m.env.now
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		ps, err := src.ListProjects(ctx)
		return projectsLoadedMsg{ps: ps, err: err, asked: asked}
	}
}

// requestReload asks for a reload soon, merging every request until then into one.
func (m *model) requestReload() tea.Cmd {
	if m.live.scheduled {
		return nil
	}
	m.live.scheduled = true
	return m.live.after(reloadInterval, reloadDueMsg{})
}

func (m *model) scheduleRefresh() tea.Cmd {
	return m.live.after(refreshInterval, refreshTickMsg{})
}

func (m *model) subscribe() tea.Cmd {
	ctx, src := m.env.ctx, m.env.src
	return func() tea.Msg {
		ch, err := src.Subscribe(ctx)
		return subscribedMsg{ch: ch, err: err}
	}
}

// waitEvents blocks for the next event, then takes whatever else is already queued, so a
// burst arrives as one message rather than one Update (and one frame) per event.
func waitEvents(ch <-chan engine.Event) tea.Cmd {
	return func() tea.Msg {
		e, ok := <-ch
		if !ok {
			return eventsClosedMsg{}
		}
		evs := []engine.Event{e}
		for len(evs) < maxEventBatch {
			select {
			case e, ok := <-ch:
				if !ok {
					// The close is seen again by the next wait.
					return eventsMsg{ch: ch, evs: evs}
				}
				evs = append(evs, e)
			default:
				return eventsMsg{ch: ch, evs: evs}
			}
		}
		return eventsMsg{ch: ch, evs: evs}
	}
}

func (m *model) onProjects(msg projectsLoadedMsg) tea.Cmd {
	m.live.loading = false
	if msg.err != nil {
		m.setErr(msg.err)
	} else {
		m.projects.setProjects(msg.ps)
		// A reload also sees hibernations the notifier did not carry (another process on an
		// in-process bus), and those from before the console started.
		m.sweep.listed(msg.ps, m.env.now)
		m.header.loadedAt = m.env.now
		if !m.status.rowLoaded(msg.ps, msg.asked) {
			m.status.over = true
		}
	}
	if m.live.pending {
		m.live.pending = false
		return m.requestReload()
	}
	return nil
}

func (m *model) updateLive(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case subscribedMsg:
		if msg.err != nil || msg.ch == nil {
			m.header.events = eventsDown
			if msg.err != nil {
				m.setErr(fmt.Errorf("subscribe to events: %w", msg.err))
			}
			return m.retrySubscribe()
		}
		wasDown := m.header.events == eventsDown
		m.header.events = eventsLive
		cmds := []tea.Cmd{waitEvents(msg.ch)}
		if wasDown {
			// Whatever happened while deaf is only in the store now.
			cmds = append(cmds, m.requestReload())
		}
		return tea.Batch(cmds...)
	case eventsMsg:
		if m.live.changed == nil {
			m.live.changed = map[string]bool{}
		}
		for _, e := range msg.evs {
			if e.ProjectID != "" {
				m.live.changed[e.ProjectID] = true
			}
			if (e.Kind == "" || e.Kind == "status") && e.To == engine.StatusHibernated {
				m.sweep.hibernated(e.Slug, e.Time, m.env.now)
			}
		}
		return tea.Batch(waitEvents(msg.ch), m.requestReload())
	case eventsClosedMsg:
		if m.env.ctx.Err() != nil {
			return nil
		}
		m.header.events = eventsDown
		return m.retrySubscribe()
	case resubscribeMsg:
		return m.subscribe()
	case reloadDueMsg:
		m.live.scheduled = false
		changed := m.live.changed
		m.live.changed = nil
		return tea.Batch(m.refreshPanes(false, changed), m.reload())
	case refreshTickMsg:
		return tea.Batch(m.refreshPanes(true, nil), m.reload(), m.scheduleRefresh())
	}
	return nil
}

func (m *model) retrySubscribe() tea.Cmd {
	if m.env.ctx.Err() != nil {
		return nil
	}
	return m.live.after(resubscribeDelay, resubscribeMsg{})
}

// refreshPanes tells the projects pane (always) and the pane on top what changed.
func (m *model) refreshPanes(force bool, changed map[string]bool) tea.Cmd {
	cmds := []tea.Cmd{m.projects.refresh(force, changed)}
	if top := m.top(); top != pane(m.projects) {
		cmds = append(cmds, top.refresh(force, changed))
	}
	return tea.Batch(cmds...)
}
