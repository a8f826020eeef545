package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// changesSource answers incremental reads with exactly what a test queues, as a store would:
// only the projects that changed, deleted ones as deleted records.
type changesSource struct {
	*fakeSource
	mu      sync.Mutex
	queue   []engine.ProjectChanges
	cursors []int64
}

func (c *changesSource) ProjectsChangedSince(ctx context.Context, cursor int64) (engine.ProjectChanges, error) {
	if cursor == 0 {
		return c.fakeSource.ProjectsChangedSince(ctx, 0)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cursors = append(c.cursors, cursor)
	if len(c.queue) == 0 {
		return engine.ProjectChanges{Cursor: cursor}, nil
	}
	ch := c.queue[0]
	c.queue = c.queue[1:]
	return ch, nil
}

// An incremental read changes only what it names: a status moves, a new project shows, a
// deleted one goes, the rest keep their usage, and a read of nothing redraws nothing.
func TestIncrementalReadMergesChanges(t *testing.T) {
	ps := genProjects(4)
	fake := newFakeSource(ps)
	for _, p := range ps {
		fake.containers[p.ID] = []engine.ContainerView{{Container: engine.Container{Name: "web"}, Status: engine.ContainerStatus{State: engine.ContainerRunning}}}
	}
	src := &changesSource{fakeSource: fake}
	h := newHarness(t, fake, Options{}, true)
	h.m.env.src = src
	h.start(120, 24)
	first := h.m.live.cursor
	if first == 0 || !strings.Contains(h.plainView(), "4 projects:") {
		t.Fatalf("first read: cursor %d, screen:\n%s", first, h.plainView())
	}
	calls := fake.containerCalls.Load()

	b := ps[1]
	b.Status, b.UpdatedAt = engine.StatusHibernated, b.UpdatedAt.Add(time.Minute)
	gone := ps[0]
	gone.Status = engine.StatusDeleted
	added := engine.Project{ID: "id-new", Slug: "proj-new", Name: "proj-new", Status: engine.StatusActive, LastActivity: t0}
	src.queue = append(src.queue, engine.ProjectChanges{Projects: []engine.Project{b, gone, added}, Cursor: first + 10})
	h.send(reloadDueMsg{})

	if len(src.cursors) != 1 || src.cursors[0] != first {
		t.Errorf("the incremental read asked from %v, want [%d]", src.cursors, first)
	}
	if h.m.live.cursor != first+10 {
		t.Errorf("cursor after the read is %d, want %d", h.m.live.cursor, first+10)
	}
	v := h.plainView()
	if !strings.Contains(v, "4 projects:") || strings.Contains(v, gone.Slug) || !strings.Contains(v, "proj-new") {
		t.Errorf("after a read deleting %s and adding proj-new:\n%s", gone.Slug, v)
	}
	if row := lineWith(v, b.Slug); !strings.Contains(row, "hibernated") {
		t.Errorf("%s's row after its status changed: %q", b.Slug, row)
	}
	// Usage is read again for the changed and the new row, not for the two that did not change.
	if got := fake.containerCalls.Load() - calls; got != 2 {
		t.Errorf("the read refetched usage of %d projects, want 2 (the changed and the new one)", got)
	}

	resorts := h.m.projects.resorts
	h.send(reloadDueMsg{}) // nothing queued: nothing changed
	if h.m.projects.resorts != resorts {
		t.Error("a read of no change re-sorted the list")
	}
	if got := h.m.projects.counts[engine.StatusHibernated]; got != 2 {
		t.Errorf("header counts %d hibernated, want 2 (%v)", got, h.m.projects.counts)
	}
}

func lineWith(screen, s string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// The watcher reads the store off the UI loop and says something only when the store
// changed: a process that hibernates a project without telling this console's bus.
func TestWatcherSpeaksOnlyOfChanges(t *testing.T) {
	ps := genProjects(3)
	src := newFakeSource(ps)
	h := newHarness(t, src, Options{}, true).start(120, 24)
	h.wait = 200 * time.Millisecond // the watcher each load starts blocks
	h.send(reloadDueMsg{})          // an incremental read: what it gave is no news for the watcher
	h.m.live.watchEvery = 10 * time.Millisecond
	before := src.listCalls.Load()
	got := runWatcher(h)
	silentFor(t, got, 200*time.Millisecond, "though nothing changed")
	if n := src.listCalls.Load() - before; n < 5 {
		t.Errorf("the watcher read the store %d times in 200 ms at 10 ms, want several", n)
	}
	src.setStatus(ps[2].ID, engine.StatusHibernated)
	watcherNews(t, h, got, ps[2].Slug, "")

	// A load replaces the running watcher: the old one stops and its answer is ignored.
	old := h.m.watch()
	stopped := make(chan tea.Msg, 1)
	go func() { stopped <- old() }()
	h.send(reloadDueMsg{})
	select {
	case msg := <-stopped:
		if msg != nil {
			h.send(msg)
			if h.m.live.loading {
				t.Error("a replaced watcher's answer started a load")
			}
		}
	case <-time.After(time.Second):
		t.Fatal("a watcher kept running after a load replaced it")
	}
	h.m.live.stopWatch()
}

// The projects screen asks to be drawn again only when a text on it will read differently,
// never sooner than a second apart, and not at all for rows off screen.
func TestClockRedrawsOnlyWhenTextChanges(t *testing.T) {
	ps := genProjects(200)
	for i := range ps {
		ps[i].Status = engine.StatusHibernated
		ps[i].LastActivity = t0.Add(-3 * time.Hour)
	}
	// Off screen (the list is sorted by slug): a project that just became active.
	ps[199].Status, ps[199].LastActivity = engine.StatusActive, t0.Add(-10*time.Second)
	src := newFakeSource(ps)
	h := newHarness(t, src, Options{}, true).start(120, 24)
	h.m.sweep.lastAt = t0.Add(-2 * time.Hour)
	h.m.status = statusLine{}
	h.m.live.stopWatch = func() {} // a watcher runs: "refreshed just now" holds
	h.m.live.clockAt = time.Time{}
	next := h.m.nextClockChange()
	// Every row on screen reads "3h ago" and "-", the status bar "2h ago": the next change
	// is the next minute of those ages, not the second-by-second age of proj-00199.
	if want := t0.Add(time.Minute); !next.Equal(want) {
		t.Errorf("next redraw at %s, want %s (the screen's ages only change by the minute)", next, want)
	}
	h.press("G") // proj-00199 on screen: "10s ago" moves every second
	if d := h.m.live.clockAt.Sub(h.m.env.now); d != minClock {
		t.Errorf("with a second-by-second age on screen the redraw is due in %s, want %s", d, minClock)
	}
}

// agoChange and countdownChange never let a text change before the redraw they ask for.
func TestClockChangesAreNeverLate(t *testing.T) {
	idle := 30 * time.Minute
	for _, age := range []time.Duration{0, 3 * time.Second, 5 * time.Second, 59*time.Second + 999*time.Millisecond,
		time.Minute, 90 * time.Second, 29*time.Minute + 30*time.Second, 30 * time.Minute, 2*time.Hour + 17*time.Second,
		23*time.Hour + 59*time.Minute, 25 * time.Hour, 49*time.Hour + 3*time.Minute} {
		last := t0.Add(-age)
		if next := agoChange(t0, last); !next.After(t0) {
			t.Errorf("age %s: next ago change %s is not after now", age, next)
		} else {
			for _, at := range []time.Time{t0.Add(next.Sub(t0) / 2), next.Add(-time.Nanosecond)} {
				if ago(at, last) != ago(t0, last) {
					t.Errorf("age %s: %q became %q at %s, before the redraw at %s", age, ago(t0, last), ago(at, last), at.Sub(t0), next.Sub(t0))
				}
			}
		}
		deadline := last.Add(idle)
		text := func(now time.Time) string { return span(deadline.Sub(now).Truncate(time.Second)) }
		next := countdownChange(t0, deadline)
		if deadline.Sub(t0) <= 0 {
			if !next.IsZero() {
				t.Errorf("age %s: a due countdown asks for a redraw", age)
			}
			continue
		}
		for _, at := range []time.Time{t0.Add(next.Sub(t0) / 2), next.Add(-time.Nanosecond)} {
			if at.After(t0) && text(at) != text(t0) {
				t.Errorf("age %s: countdown %q became %q before the redraw", age, text(t0), text(at))
			}
		}
	}
}

// A redraw scheduled earlier for a later time, still on its way when a sooner one was
// scheduled, does not start a second chain of redraws when it arrives: only the one scheduled
// last frees the way for the next (two chains doubled the idle console's renders).
func TestClockKeepsOneChain(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(3)), Options{}, true).start(120, 24)
	var scheduled []clockMsg
	h.m.live.after = func(d time.Duration, msg tea.Msg) tea.Cmd {
		if c, ok := msg.(clockMsg); ok {
			scheduled = append(scheduled, c)
		}
		return nil
	}
	now := h.m.env.now
	later, sooner := now.Add(30*time.Second), now.Add(minClock/2) // sooner than any new schedule
	h.m.live.clockAt = sooner                                     // the sooner one is the one on its way now
	h.m.Update(clockMsg{due: later})
	if !h.m.live.clockAt.Equal(sooner) {
		t.Fatalf("a stale redraw (due %s) cleared the schedule of the one due %s", later.Sub(now), sooner.Sub(now))
	}
	if len(scheduled) != 0 {
		t.Errorf("a stale redraw scheduled %d more", len(scheduled))
	}
	h.m.Update(clockMsg{due: sooner})
	if h.m.live.clockAt.Equal(sooner) {
		t.Errorf("the redraw scheduled last did not free the way for the next")
	}
}

// Where the store tells of writes, the watcher reads once and then only after a write: an
// idle console does no work. The header says the list is current all the while.
func TestWatcherWaitsForWrites(t *testing.T) {
	ps := genProjects(3)
	src := newFakeSource(ps)
	src.writes = make(chan struct{}, 1)
	h := newHarness(t, src, Options{}, true).start(120, 24)
	h.wait = 200 * time.Millisecond // the watcher each load starts blocks
	h.send(reloadDueMsg{})
	h.m.live.watchEvery = 10 * time.Millisecond
	h.send(writesMsg{ch: src.writes})
	if h.m.live.writes == nil {
		t.Fatal("the console did not take the store's notices of writes")
	}
	before := src.listCalls.Load()
	got := runWatcher(h)
	silentFor(t, got, 200*time.Millisecond, "though nothing changed")
	// One read, the unconditional first, in 200 ms at a 10 ms pace: then it waited.
	if n := src.listCalls.Load() - before; n != 1 {
		t.Errorf("with no write the watcher read the store %d times in 200 ms, want 1", n)
	}
	if !h.m.live.current.held() {
		t.Error("the watcher waits on the notices, but the list is not marked current")
	}
	h.m.env.now = h.m.env.now.Add(time.Hour)
	if hdr := lineWith(h.plainView(), "refreshed"); !strings.Contains(hdr, "refreshed just now") {
		t.Errorf("while the watcher waits on notices the header reads %q, want refreshed just now", hdr)
	}

	// A write that changes nothing the list shows: one read, then it waits again.
	before = src.listCalls.Load()
	src.writes <- struct{}{}
	time.Sleep(100 * time.Millisecond)
	if n := src.listCalls.Load() - before; n != 1 {
		t.Errorf("one write that changed nothing: %d reads, want 1", n)
	}

	src.setStatus(ps[2].ID, engine.StatusHibernated)
	silentFor(t, got, 100*time.Millisecond, "before it was told of the write")
	src.writes <- struct{}{}
	watcherNews(t, h, got, ps[2].Slug, " of the notice")

	// When the notices stop, the watcher goes back to reading on the clock.
	close(src.writes)
	before = src.listCalls.Load()
	runWatcher(h)
	time.Sleep(200 * time.Millisecond)
	if n := src.listCalls.Load() - before; n < 5 {
		t.Errorf("after the notices stopped the watcher read %d times in 200 ms at 10 ms, want several", n)
	}
	h.m.live.stopWatch()
}

// runWatcher starts the console's watcher as Bubble Tea would; its answer comes on the channel.
func runWatcher(h *harness) <-chan tea.Msg {
	got := make(chan tea.Msg, 1)
	cmd := h.m.watch()
	go func() { got <- cmd() }()
	return got
}

// watcherNews waits a second at most for the watcher's answer, gives it to the console and
// checks the console then shows slug hibernated.
func watcherNews(t *testing.T, h *harness, got <-chan tea.Msg, slug, since string) {
	t.Helper()
	select {
	case msg := <-got:
		h.send(msg)
	case <-time.After(time.Second):
		t.Fatalf("the watcher did not see a change within a second%s", since)
	}
	if row := lineWith(h.plainView(), slug); !strings.Contains(row, "hibernated") {
		t.Errorf("after the watcher's news %s reads %q", slug, row)
	}
}

// silentFor fails the test when the watcher speaks within d.
func silentFor(t *testing.T, got <-chan tea.Msg, d time.Duration, why string) {
	t.Helper()
	select {
	case msg := <-got:
		t.Fatalf("the watcher spoke (%#v) %s", msg, why)
	case <-time.After(d):
	}
}

// A watcher a reload stopped may end after its successor has read the store and claimed the
// list as current: its end must not take that away (the header would age a current list).
func TestStoppedWatcherLeavesSuccessorsClaim(t *testing.T) {
	var f currentFlag
	f.claim(1)
	f.claim(2)   // the successor read the store and waits on notices
	f.release(1) // the stopped watcher's deferred release, late
	if !f.held() {
		t.Fatal("a stopped watcher's late release cleared its successor's claim")
	}
	f.release(2)
	if f.held() {
		t.Fatal("the holder's release left the list marked current")
	}
	var none *currentFlag
	if none.held() {
		t.Fatal("no flag reads as held")
	}
}

// The first full read starts before the program runs, and the first reload takes its answer
// rather than read the store again; later reloads read from the cursor as before.
func TestFirstReadStartedEarly(t *testing.T) {
	src := newFakeSource(genProjects(20))
	h := newHarness(t, src, Options{}, true)
	h.m.startFirstLoad()
	h.start(120, 24)
	if n := src.listCalls.Load(); n != 1 {
		t.Fatalf("the first list read the store %d times, want the one started early", n)
	}
	if !strings.Contains(h.plainView(), "20 projects:") || h.m.live.cursor == 0 {
		t.Fatalf("the early read's answer was not taken (cursor %d):\n%s", h.m.live.cursor, h.plainView())
	}
	hib := 0
	for _, p := range src.projects {
		if p.Status == engine.StatusHibernated {
			hib++
		}
	}
	src.setStatus(src.projects[0].ID, engine.StatusHibernated) // active in genProjects
	h.run(h.m.reload())
	if n := src.listCalls.Load(); n != 2 || !strings.Contains(h.plainView(), fmt.Sprintf("hibernated %d ", hib+1)) {
		t.Fatalf("a reload after the first: %d reads, screen:\n%s", n, h.plainView())
	}
}
