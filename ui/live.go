package ui

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

const (
	// reloadInterval coalesces bursts of events (a sweep hibernating hundreds of projects) into
	// at most a few incremental reads a second.
	reloadInterval = 250 * time.Millisecond
	// watchInterval is how often, at most, the watcher asks the store for what no event told:
	// another process's writes on an in-process bus (SQLite), activity. It is an indexed read
	// off the UI loop: the console renders nothing for it. Where the store tells of writes
	// (engine.WriteWatcher) the watcher reads only after one; elsewhere it reads at this pace.
	watchInterval = 500 * time.Millisecond
	// sharedWatchInterval is the watcher's pace when events reach every process (Postgres):
	// then it only catches what no event carries (activity), as the old 5 s reload did.
	sharedWatchInterval = 5 * time.Second
	// refreshInterval is the safety resync while the projects pane is on top: an incremental
	// read, and the usage of the rows on screen read again (a container that died by itself).
	refreshInterval = 30 * time.Second
	// paneRefreshInterval is the resync while another pane is on top: those show the runtime's
	// own state (containers, logs), which no store change announces.
	paneRefreshInterval = 5 * time.Second
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
	// cursor is where the next incremental read starts (0: nothing read yet, a full list).
	cursor int64
	// first, when set, brings the first full read, started before the program ran: the first
	// reload takes it rather than read again.
	first <-chan tea.Msg
	// changed collects the projects named by events since the last reload.
	changed map[string]bool
	// after delivers msg once d has passed; tests replace it to see what was scheduled
	// without waiting for it.
	after func(d time.Duration, msg tea.Msg) tea.Cmd

	// watchEvery paces the watcher (0: no watcher, as in unit tests that drive reads
	// themselves). The watcher runs from one load to the next: each load stops it and starts
	// one from the new cursor (watchGen tells the stopped one's answer apart).
	watchEvery time.Duration
	watchGen   int
	stopWatch  context.CancelFunc
	// lastRead is the projects the last incremental read gave: a store may give them again
	// (reads overlap), which is no news for the watcher.
	lastRead []engine.Project
	// checked is when the watcher last found the store unchanged (Unix nanoseconds), shared
	// with its goroutine; the header's "refreshed" age counts from it.
	checked *atomic.Int64
	// writes tells of writes to the store by any process (nil: the store cannot tell, or has
	// not said yet); the watcher then reads only after one. It outlives the watchers: each
	// takes it over from the one before.
	writes <-chan struct{}
	// current is held while a watcher waits on writes, having read the store since the last
	// one: the list is current whatever the time since that read (the header says so).
	current *currentFlag
	// refreshGen tells the current safety resync tick from one made stale by a pane change.
	refreshGen int
	refreshAt  time.Time
	// clockAt is when the next re-render for the clock is due (zero: none scheduled).
	clockAt time.Time
	// loadGCPercent, when not 0, is the GC percentage to go back to after the first list
	// (Run lets the heap grow more while that one big read runs).
	loadGCPercent int
}

func tick(d time.Duration, msg tea.Msg) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return msg })
}

type (
	projectsLoadedMsg struct {
		ch  engine.ProjectChanges
		err error
		// full is a load from cursor 0: the whole list, not changes to it.
		full bool
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
	// watchedMsg is the watcher's news: the store changed (or could not be read).
	watchedMsg struct {
		gen int
		err error
	}
	// writesMsg brings the store's notices of writes (WatchStoreWrites), or why there are none.
	writesMsg struct {
		ch  <-chan struct{}
		err error
	}
	eventsClosedMsg struct{}
	resubscribeMsg  struct{}
	reloadDueMsg    struct{}
	refreshTickMsg  struct{ gen int }
	// clockMsg re-renders what the clock moved on (ages, countdowns); nothing is read. due is
	// when it was scheduled for.
	clockMsg struct{ due time.Time }
)

// reload reads what changed since the last read (everything, the first time), or remembers
// to once the running read ends.
func (m *model) reload() tea.Cmd {
	if m.live.loading {
		m.live.pending = true
		return nil
	}
	m.live.loading = true
	if first := m.live.first; first != nil && m.live.cursor == 0 {
		m.live.first = nil
		return func() tea.Msg { return <-first }
	}
	return m.load(m.live.cursor)
}

// load is the read of what changed since cursor (everything, from 0).
func (m *model) load(cursor int64) func() tea.Msg {
	ctx, src, asked := m.env.ctx, m.env.src, m.env.now
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		ch, err := src.ProjectsChangedSince(ctx, cursor)
		return projectsLoadedMsg{ch: ch, err: err, full: cursor == 0, asked: asked}
	}
}

// startFirstLoad starts the first full read now, before the program and the terminal are set
// up, for the first reload to take: that set-up took 5-20 ms here before the read began, and
// the read need not wait for it (issue 19).
func (m *model) startFirstLoad() {
	first := make(chan tea.Msg, 1)
	load := m.load(0)
	go func() { first <- load() }()
	m.live.first = first
}

// requestReload asks for a reload soon, merging every request until then into one.
func (m *model) requestReload() tea.Cmd {
	if m.live.scheduled {
		return nil
	}
	m.live.scheduled = true
	return m.live.after(reloadInterval, reloadDueMsg{})
}

// scheduleRefresh schedules the next safety resync, sooner while a pane other than projects
// is on top.
func (m *model) scheduleRefresh() tea.Cmd {
	d := refreshInterval
	if m.top() != pane(m.projects) {
		d = paneRefreshInterval
	}
	m.live.refreshGen++
	m.live.refreshAt = m.env.now.Add(d)
	return m.live.after(d, refreshTickMsg{gen: m.live.refreshGen})
}

// paneChanged brings the resync forward when a pane that shows runtime state came on top.
func (m *model) paneChanged() tea.Cmd {
	if m.top() != pane(m.projects) && m.live.refreshAt.After(m.env.now.Add(paneRefreshInterval)) {
		return m.scheduleRefresh()
	}
	return nil
}

// watch starts the watcher from the current cursor, stopping the one before.
//
// With notices of writes (m.live.writes) it reads once, watchInterval after it starts, and
// then only after a write, at most once a watchInterval: while nothing is written it does
// not run at all. The first read is unconditional because a notice may have gone to the
// watcher this one replaces, which was stopped before it could tell. Without notices it reads
// every watchInterval.
func (m *model) watch() tea.Cmd {
	if m.live.stopWatch != nil {
		m.live.stopWatch()
		m.live.stopWatch = nil
	}
	if m.live.watchEvery <= 0 || m.live.cursor == 0 {
		return nil
	}
	ctx, stop := context.WithCancel(m.env.ctx)
	m.live.stopWatch = stop
	m.live.watchGen++
	gen, every, src, cursor, known, checked := m.live.watchGen, m.live.watchEvery, m.env.src, m.live.cursor, m.live.lastRead, m.live.checked
	writes, current := m.live.writes, m.live.current
	return func() tea.Msg {
		defer current.release(gen)
		seen := make(map[string]engine.Project, len(known))
		for _, p := range known {
			seen[p.ID] = p
		}
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			read := time.Now()
			rctx, cancel := context.WithTimeout(ctx, loadTimeout)
			ch, err := src.ProjectsChangedSince(rctx, cursor)
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return watchedMsg{gen: gen, err: fmt.Errorf("watch the projects list: %w", err)}
			}
			for _, p := range ch.Projects {
				if o, ok := seen[p.ID]; !ok || !sameRecord(o, p) {
					return watchedMsg{gen: gen}
				}
			}
			checked.Store(time.Now().UnixNano())
			if writes != nil {
				current.claim(gen)
				select {
				case <-ctx.Done():
					return nil
				case _, ok := <-writes:
					if !ok {
						writes = nil // the notices stopped: read on the clock from now on
					}
				}
				current.release(gen)
			}
			t.Reset(max(time.Until(read.Add(every)), 0))
		}
	}
}

// currentFlag says the list is current: held by the watcher (its generation) that read the
// store and now waits on its notices. Only the watcher that holds it may clear it, since a
// watcher a reload stopped may end after the one that replaced it claimed the flag.
type currentFlag struct{ gen atomic.Int64 }

func (f *currentFlag) claim(gen int)   { f.gen.Store(int64(gen)) }
func (f *currentFlag) release(gen int) { f.gen.CompareAndSwap(int64(gen), 0) }
func (f *currentFlag) held() bool      { return f != nil && f.gen.Load() != 0 }

// watchWrites asks the store to tell of writes (once: the notices outlive the watchers).
func (m *model) watchWrites() tea.Cmd {
	if m.live.watchEvery <= 0 {
		return nil
	}
	ctx, src := m.env.ctx, m.env.src
	return func() tea.Msg {
		ch, err := src.WatchStoreWrites(ctx)
		return writesMsg{ch: ch, err: err}
	}
}

// sameRecord reports whether two reads of a project found the same record.
func sameRecord(a, b engine.Project) bool {
	return a.Status == b.Status && a.OpID == b.OpID && a.StatusReason == b.StatusReason &&
		a.UpdatedAt.Equal(b.UpdatedAt) && a.LastActivity.Equal(b.LastActivity) && a.OpHeartbeat.Equal(b.OpHeartbeat)
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
	var cmds []tea.Cmd
	if msg.err != nil {
		m.setErr(msg.err)
		m.header.storeFailed(msg.err)
	} else {
		m.header.storeAnswered()
		ps := msg.ch.Projects
		if msg.full {
			m.projects.setProjects(ps)
			// The full list is not kept: the rows hold what they show.
			m.live.lastRead = nil
		} else {
			m.projects.applyChanges(ps)
			m.live.lastRead = ps
		}
		m.live.cursor = msg.ch.Cursor
		// A read also sees hibernations the notifier did not carry (another process on an
		// in-process bus), and those from before the console started.
		m.sweep.listed(ps, m.env.now)
		m.header.loadedAt = m.env.now
		if !m.status.rowLoaded(ps, msg.full, msg.asked) {
			m.status.over = true
		}
		if msg.full {
			// The first list's garbage (the store's rows) is most of what the process ever
			// held; give it back now rather than keep it resident while idle.
			gcPercent := m.live.loadGCPercent
			m.live.loadGCPercent = 0
			cmds = append(cmds, func() tea.Msg {
				if gcPercent != 0 {
					debug.SetGCPercent(gcPercent)
				}
				debug.FreeOSMemory()
				return nil
			})
		}
	}
	cmds = append(cmds, m.watch())
	if m.live.pending {
		m.live.pending = false
		cmds = append(cmds, m.requestReload())
	}
	return tea.Batch(cmds...)
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
	case writesMsg:
		if msg.err != nil {
			// The watcher goes on reading on the clock: the list stays current, at the cost
			// of a read twice a second, so nothing on screen is wrong and nothing is shown
			// (no store tells of writes but SQLite; no inotify instance left, say).
			return nil
		}
		m.live.writes = msg.ch
		// The running watcher ticks; one that waits on the notices replaces it.
		return m.watch()
	case watchedMsg:
		if msg.gen != m.live.watchGen {
			return nil // from a watcher a load has replaced
		}
		m.live.stopWatch = nil
		if msg.err != nil {
			m.setErr(msg.err)
			m.header.storeFailed(msg.err)
			// The resync tick starts a new watcher through its load.
			return nil
		}
		return m.reload()
	case refreshTickMsg:
		if msg.gen != 0 && msg.gen != m.live.refreshGen {
			return nil // replaced by a sooner one when a pane came on top
		}
		return tea.Batch(m.refreshPanes(true, nil), m.reload(), m.scheduleRefresh())
	case clockMsg:
		// Only the re-render scheduled last frees the way for the next: one that an earlier,
		// later-due schedule left on its way must not, or two chains would tick for ever.
		if msg.due.Equal(m.live.clockAt) {
			m.live.clockAt = time.Time{}
		}
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
