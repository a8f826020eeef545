package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
)

// countRows counts the table's rows; the status bar may name a project too (the last
// hibernation), so it is not counted.
func countRows(view string) int {
	n := 0
	for _, l := range strings.Split(view, "\n") {
		if strings.Contains(l, "proj-") && !strings.Contains(l, "last hibernation") {
			n++
		}
	}
	return n
}

func TestTenThousandRowsRenderOnlyTheScreen(t *testing.T) {
	src := newFakeSource(genProjects(10_000))
	h := newHarness(t, src, Options{}, false).start(120, 40)

	v := h.view()
	lines := strings.Split(v, "\n")
	if len(lines) != 40 {
		t.Fatalf("view has %d lines, want the height 40", len(lines))
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w != 120 {
			t.Errorf("line %d is %d wide, want 120: %q", i, w, ansi.Strip(l))
		}
	}
	want := h.m.bodyHeight() - 1 // the column header takes a line
	if got := countRows(ansi.Strip(v)); got != want {
		t.Errorf("rendered %d project rows, want a screenful (%d)", got, want)
	}
	if !strings.Contains(h.plainView(), "proj-00000") || strings.Contains(h.plainView(), "proj-09999") {
		t.Error("first screen should show the first projects only")
	}
	if n := src.containerCalls.Load(); n == 0 || n > int64(want) {
		t.Errorf("usage fetched for %d projects, want only the %d on screen", n, want)
	}

	h.press("G")
	if sel := h.selectedLine(); !strings.Contains(sel, "proj-09999") {
		t.Errorf("after G the selection is %q, want the last project", sel)
	}
	if got := len(strings.Split(h.view(), "\n")); got != 40 {
		t.Errorf("after G the view has %d lines", got)
	}
	h.press("g")
	if sel := h.selectedLine(); !strings.Contains(sel, "proj-00000") {
		t.Errorf("after g the selection is %q", sel)
	}
}

func TestNavigation(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(100)), Options{}, false).start(100, 24)
	steps := []struct {
		key, want string
	}{
		{"j", "proj-00001"}, {"down", "proj-00002"}, {"k", "proj-00001"}, {"up", "proj-00000"},
		{"up", "proj-00000"}, // stays at the top
	}
	for _, s := range steps {
		h.press(s.key)
		if sel := h.selectedLine(); !strings.Contains(sel, s.want) {
			t.Fatalf("after %s the selection is %q, want %s", s.key, sel, s.want)
		}
	}
	h.press("pgdown")
	if sel := h.selectedLine(); sel == "" || strings.Contains(sel, "proj-00000") {
		t.Errorf("pgdown left the selection at %q", sel)
	}
	// The selected row scrolled into view rather than off the screen.
	h.press("G", "k")
	if sel := h.selectedLine(); !strings.Contains(sel, "proj-00098") {
		t.Errorf("G k: selection %q", sel)
	}
}

func TestFilter(t *testing.T) {
	ps := []engine.Project{
		{ID: "1", Slug: "alpha-web", Name: "Alpha", Status: engine.StatusActive},
		{ID: "2", Slug: "beta-api", Name: "Beta", Status: engine.StatusHibernated},
		{ID: "3", Slug: "gamma-web", Name: "Gamma", Status: engine.StatusFailed},
	}
	h := newHarness(t, newFakeSource(ps), Options{}, true).start(100, 24)
	shows := func(want ...string) {
		t.Helper()
		v := h.plainView()
		for _, p := range ps {
			if got, exp := strings.Contains(v, p.Slug), contains(want, p.Slug); got != exp {
				t.Errorf("filter %q: %s shown=%v, want %v\n%s", h.m.projects.filter.flt.raw, p.Slug, got, exp, v)
			}
		}
	}
	h.press("/")
	h.typeText("web")
	shows("alpha-web", "gamma-web")
	if !strings.Contains(h.plainView(), "/web") {
		t.Error("the filter input is not shown while typing")
	}
	// q is typed into the filter, not taken as quit.
	h.press("backspace", "backspace", "backspace")
	h.typeText("!web")
	shows("beta-api")
	h.press("enter")
	if h.m.projects.filter.editing {
		t.Fatal("enter did not close the filter input")
	}
	shows("beta-api")
	if !strings.Contains(h.plainView(), "1 of 3") {
		t.Errorf("title does not count the filtered rows:\n%s", h.plainView())
	}
	h.press("esc")
	shows("alpha-web", "beta-api", "gamma-web")

	// Regex, case-insensitive; matches the status too.
	h.press("/")
	h.typeText("^(ALPHA|beta)-")
	shows("alpha-web", "beta-api")
	h.press("esc")
	shows("alpha-web", "beta-api", "gamma-web")

	h.press("/")
	h.typeText("failed")
	shows("gamma-web")
	h.press("esc")

	h.press("/")
	h.typeText("-web$")
	shows("alpha-web", "gamma-web")
	if v := h.plainView(); strings.Contains(v, "q quit") || !strings.Contains(v, "apply filter") {
		t.Errorf("while typing, help offers keys that are typed instead:\n%s", v)
	}
	h.press("esc")

	// Not a valid expression: a plain substring.
	h.press("/")
	h.typeText("web(")
	shows()
	h.press("esc")

	h.press("/")
	h.typeText("zzz")
	if !strings.Contains(h.plainView(), "no project matches") {
		t.Errorf("an empty result says nothing:\n%s", h.plainView())
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestFilterKeepsSelection(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(50)), Options{}, true).start(100, 24)
	h.press("j", "j", "j", "j", "j") // proj-00005
	h.press("/")
	h.typeText("proj-0000")
	if sel := h.selectedLine(); !strings.Contains(sel, "proj-00005") {
		t.Errorf("filtering moved the selection to %q", sel)
	}
}

func TestFilter10kQuick(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(10_000)), Options{}, true).start(120, 30)
	h.press("/")
	h.typeText("proj-0999")
	if got := len(h.m.projects.shown); got != 10 {
		t.Errorf("filter proj-0999 kept %d rows, want 10", got)
	}
	if got := len(strings.Split(h.view(), "\n")); got != 30 {
		t.Errorf("view has %d lines, want 30", got)
	}
}

func TestColumnsAndTimes(t *testing.T) {
	ps := []engine.Project{
		{ID: "a", Slug: "fresh", Name: "Fresh", Status: engine.StatusActive, LastActivity: t0.Add(-3 * time.Minute)},
		{ID: "b", Slug: "overdue", Status: engine.StatusActive, LastActivity: t0.Add(-45 * time.Minute)},
		{ID: "c", Slug: "sleepy", Status: engine.StatusHibernated, LastActivity: t0.Add(-26 * time.Hour)},
	}
	src := newFakeSource(ps)
	src.containers["a"] = []engine.ContainerView{
		{Container: engine.Container{Name: "web"}, Status: engine.ContainerStatus{State: engine.ContainerRunning}},
		{Container: engine.Container{Name: "db"}, Status: engine.ContainerStatus{State: engine.ContainerStopped}},
	}
	src.snapshots["a"] = []engine.Snapshot{
		{ID: "s1", Type: engine.SnapshotManual, Status: engine.SnapshotReady},
		{ID: "s2", Type: engine.SnapshotManual, Status: engine.SnapshotPending},
		{ID: "s3", Type: engine.SnapshotHibernation, Status: engine.SnapshotReady},
	}
	h := newHarness(t, src, Options{}, true).start(120, 24)
	v := h.plainView()
	for _, want := range []string{"NAME/SLUG", "STATUS", "CONTAINERS", "LAST ACTIVITY", "HIBERNATES IN", "SNAPSHOTS"} {
		if !strings.Contains(v, want) {
			t.Errorf("column %s missing", want)
		}
	}
	row := func(slug string) string {
		for _, l := range strings.Split(v, "\n") {
			if strings.Contains(l, " "+slug+" ") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("no row for %s:\n%s", slug, v)
		return ""
	}
	if got, want := row("fresh"), "Fresh fresh active 1/2 3m ago 27m 2/5"; !strings.Contains(got, want) {
		t.Errorf("row fresh = %q, want %q", got, want)
	}
	if got := row("overdue"); !strings.Contains(got, "45m ago due") {
		t.Errorf("row overdue = %q, want it due", got)
	}
	if got := row("sleepy"); !strings.Contains(got, "hibernated 0/0 1d ago -") {
		t.Errorf("row sleepy = %q", got)
	}
}

func TestNarrowTerminalDropsColumns(t *testing.T) {
	// The console needs 80 columns; a pane still lays itself out for less (a split, a dialog).
	h := newHarness(t, newFakeSource(genProjects(5)), Options{}, true).start(100, 24)
	h.m.projects.setSize(40, 10)
	v := ansi.Strip(h.m.projects.view())
	if !strings.Contains(v, "STATUS") || strings.Contains(v, "SNAPSHOTS") {
		t.Errorf("at 40 columns keep name and status, drop the rest:\n%s", v)
	}
	for i, l := range strings.Split(h.m.projects.view(), "\n") {
		if w := ansi.StringWidth(l); w != 40 {
			t.Errorf("line %d is %d wide", i, w)
		}
	}
}

func TestHeader(t *testing.T) {
	src := newFakeSource(genProjects(14))
	h := newHarness(t, src, Options{Mode: "docker", StoreName: "sqlite /tmp/x.db", ReadOnly: true}, true).start(140, 24)
	v := h.plainView()
	for _, want := range []string{"mode docker", "store sqlite /tmp/x.db", "READ-ONLY", "14 projects", "active 12", "hibernated 2", "failed 0"} {
		if !strings.Contains(v, want) {
			t.Errorf("header lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "deleted") {
		t.Error("deleted is counted though there are none")
	}

	h2 := newHarness(t, newFakeSource(nil), Options{Mode: "local"}, true).start(100, 24)
	if strings.Contains(h2.plainView(), "READ-ONLY") {
		t.Error("read-only badge shown for a writable console")
	}
	if v := h2.plainView(); !strings.Contains(v, "no projects yet") || !strings.Contains(v, "sailtui project create NAME --from DIR") {
		t.Errorf("empty fleet says nothing:\n%s", h2.plainView())
	}
}

func TestLastErrorLine(t *testing.T) {
	src := newFakeSource(genProjects(3))
	h := newHarness(t, src, Options{}, true).start(100, 24)
	src.mu.Lock()
	src.listErr = errors.New("store unreachable")
	src.mu.Unlock()
	h.run(h.m.reload())
	v := h.plainView()
	if !strings.Contains(v, "store unreachable") {
		t.Errorf("no error line:\n%s", v)
	}
	if !strings.Contains(v, "proj-00002") {
		t.Error("a failed reload dropped the rows already shown")
	}
}

func TestDrillIntoContainers(t *testing.T) {
	ps := genProjects(3)
	src := newFakeSource(ps)
	src.containers[ps[1].ID] = []engine.ContainerView{
		{
			Container: engine.Container{Name: "frontend", Directory: "web", Port: 5173},
			Status:    engine.ContainerStatus{State: engine.ContainerRunning, HostPort: 41234, URL: "http://proj-00001-frontend.localhost"},
		},
		{
			Container: engine.Container{Name: "api", Directory: "server", Port: 8000},
			Status:    engine.ContainerStatus{State: engine.ContainerExited, Detail: "exit 1"},
		},
	}
	h := newHarness(t, src, Options{}, true).start(120, 24)
	h.press("j", "enter")
	v := h.plainView()
	for _, want := range []string{
		"Projects › proj-00001", "NAME", "SOURCE", "STATE", "PORT", "URL",
		"frontend", "web", "running", "5173->41234", "http://proj-00001-frontend.localhost",
		"api", "server", "exited", "8000", "exit 1",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("containers view lacks %q:\n%s", want, v)
		}
	}
	if got := len(strings.Split(h.view(), "\n")); got != 24 {
		t.Errorf("containers view has %d lines", got)
	}
	h.press("j")
	if sel := h.selectedLine(); !strings.Contains(sel, "api") {
		t.Errorf("selection in containers = %q", sel)
	}
	h.press("esc")
	v = h.plainView()
	if strings.Contains(v, "›") || !strings.Contains(v, "LAST ACTIVITY") {
		t.Errorf("esc did not go back to projects:\n%s", v)
	}
	if sel := h.selectedLine(); !strings.Contains(sel, "proj-00001") {
		t.Errorf("back in projects the selection is %q", sel)
	}
}

func TestContainersLoadErrorShown(t *testing.T) {
	src := newFakeSource(genProjects(2))
	h := newHarness(t, src, Options{}, true).start(100, 24)
	src.mu.Lock()
	src.projects = nil // the project vanished between the list and the drill-in
	src.mu.Unlock()
	h.press("enter")
	if v := h.plainView(); !strings.Contains(v, "not found") {
		t.Errorf("containers error not shown:\n%s", v)
	}
}

func TestHelpAndQuit(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(3)), Options{}, true).start(120, 24)
	if v := h.plainView(); !strings.Contains(v, "? help") || !strings.Contains(v, "q quit") {
		t.Errorf("short help missing:\n%s", v)
	}
	h.press("?")
	v := h.plainView()
	for _, want := range []string{"Keys", "filter", "containers", "top", "bottom", "ctrl+c"} {
		if !strings.Contains(v, want) {
			t.Errorf("full help lacks %q:\n%s", want, v)
		}
	}
	h.press("j") // closes help without moving
	if h.m.showHelp {
		t.Fatal("help still open")
	}
	if sel := h.selectedLine(); !strings.Contains(sel, "proj-00000") {
		t.Errorf("closing help moved the selection: %q", sel)
	}

	for _, k := range []string{"q", "ctrl+c"} {
		_, cmd := h.m.Update(keyPress(k))
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s does not quit", k)
		}
	}
	// While typing a filter q is a letter; ctrl+c still quits.
	h.press("/")
	_, cmd := h.m.Update(keyPress("q"))
	if cmd != nil {
		if _, ok := cmd().(tea.QuitMsg); ok {
			t.Error("q quit while typing a filter")
		}
	}
	_, cmd = h.m.Update(keyPress("ctrl+c"))
	if cmd == nil {
		t.Fatal("ctrl+c while filtering: no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("ctrl+c does not quit while filtering")
	}
}

func TestNoColorWritesNoEscapes(t *testing.T) {
	ps := genProjects(30)
	ps[4].Status = engine.StatusFailed
	src := newFakeSource(ps)
	src.containers[ps[0].ID] = []engine.ContainerView{{Container: engine.Container{Name: "web"}, Status: engine.ContainerStatus{State: engine.ContainerRunning}}}
	h := newHarness(t, src, Options{ReadOnly: true, Mode: "local"}, true).start(120, 30)
	h.m.setErr(errors.New("boom"))
	check := func(what string) {
		t.Helper()
		if v := h.view(); strings.Contains(v, "\x1b") {
			t.Errorf("%s: escape sequence under NO_COLOR: %q", what, v)
		}
	}
	check("projects")
	h.press("/")
	h.typeText("proj")
	check("filtering")
	h.press("enter", "?")
	check("help")
	h.press("?", "enter")
	check("containers")

	// The same screen in colour does use escapes, so the check above means something.
	hc := newHarness(t, src, Options{}, false).start(120, 30)
	if !strings.Contains(hc.view(), "\x1b[") {
		t.Error("the dark skin wrote no colours")
	}
}

func TestFilterCursorOnStatusLine(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(3)), Options{}, true).start(80, 24)
	h.press("/")
	h.typeText("ab")
	v := h.m.View()
	if v.Cursor == nil {
		t.Fatal("no cursor while typing the filter")
	}
	lines := strings.Split(ansi.Strip(v.Content), "\n")
	if y := v.Cursor.Position.Y; y < 0 || y >= len(lines) || !strings.HasPrefix(lines[y], "/ab") {
		t.Errorf("cursor at line %d, not on the filter line", v.Cursor.Position.Y)
	}
	if v.Cursor.Position.X != 3 {
		t.Errorf("cursor at column %d, want 3", v.Cursor.Position.X)
	}
	if !v.AltScreen {
		t.Error("the console does not use the alt screen")
	}
}

func TestEventsBurstIsOneMessage(t *testing.T) {
	ch := make(chan engine.Event, 100)
	for i := 0; i < 50; i++ {
		ch <- engine.Event{ProjectID: fmt.Sprint(i)}
	}
	msg, _ := quick(waitEvents(ch), 5*time.Second)
	if em, ok := msg.(eventsMsg); !ok || len(em.evs) != 50 {
		t.Fatalf("want one message with 50 events, got %T", msg)
	}
	ch <- engine.Event{ProjectID: "last"}
	close(ch)
	msg, _ = quick(waitEvents(ch), 5*time.Second)
	if em, ok := msg.(eventsMsg); !ok || len(em.evs) != 1 {
		t.Errorf("events before a close are lost: %v", msg)
	}
	if msg, _ := quick(waitEvents(ch), 5*time.Second); msg != (eventsClosedMsg{}) {
		t.Errorf("after the close: %T, want eventsClosedMsg", msg)
	}
}

// closedEvents is a stream that has ended, so waiting on it never blocks a test.
func closedEvents() chan engine.Event {
	ch := make(chan engine.Event)
	close(ch)
	return ch
}

func TestEventsReloadCoalesced(t *testing.T) {
	ps := genProjects(5)
	src := newFakeSource(ps)
	h := newHarness(t, src, Options{}, true).start(120, 24)
	base := src.listCalls.Load()
	ended := closedEvents()

	for i := 0; i < 3; i++ {
		h.send(eventsMsg{ch: ended, evs: []engine.Event{{ProjectID: ps[i].ID, Kind: "status"}}})
	}
	if got := src.listCalls.Load() - base; got != 0 {
		t.Fatalf("events reloaded at once (%d loads); they should wait for the coalescing tick", got)
	}
	due := takeScheduled[reloadDueMsg](h)
	if len(due) != 1 {
		t.Fatalf("3 events scheduled %d reloads, want 1", len(due))
	}

	src.setStatus(ps[2].ID, engine.StatusHibernating)
	h.send(due[0])
	if got := src.listCalls.Load() - base; got != 1 {
		t.Errorf("one reload due gave %d loads", got)
	}
	if !strings.Contains(h.plainView(), "hibernating") {
		t.Errorf("reload did not show the new status:\n%s", h.plainView())
	}
	// The next event schedules again.
	h.send(eventsMsg{ch: ended, evs: []engine.Event{{ProjectID: ps[0].ID}}})
	if got := len(takeScheduled[reloadDueMsg](h)); got != 1 {
		t.Errorf("event after a reload scheduled %d reloads, want 1", got)
	}
}

func TestReloadNeverOverlaps(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(3)), Options{}, true)
	first := h.m.reload()
	if first == nil {
		t.Fatal("no load")
	}
	if h.m.reload() != nil || !h.m.live.pending {
		t.Fatal("a second load started while the first ran")
	}
	h.send(first())
	if got := len(takeScheduled[reloadDueMsg](h)); got != 1 {
		t.Errorf("the reload asked for meanwhile was scheduled %d times, want 1", got)
	}
}

func TestEventsStreamClosedResubscribes(t *testing.T) {
	src := newFakeSource(genProjects(2))
	h := newHarness(t, src, Options{}, true).start(120, 24)
	h.send(subscribedMsg{ch: closedEvents()})
	if !strings.Contains(h.plainView(), "events down") {
		t.Errorf("header hides that the event stream ended:\n%s", h.plainView())
	}
	retry := takeScheduled[resubscribeMsg](h)
	if len(retry) != 1 {
		t.Fatalf("%d resubscribes scheduled, want 1", len(retry))
	}

	// Back up: live again, and a reload for what was missed meanwhile.
	h.wait = 200 * time.Millisecond // the new stream's wait blocks
	h.send(retry[0])
	if v := h.plainView(); !strings.Contains(v, "● live") {
		t.Errorf("resubscribing did not go live:\n%s", v)
	}
	if got := len(takeScheduled[reloadDueMsg](h)); got != 1 {
		t.Errorf("coming back scheduled %d reloads, want 1", got)
	}

	src.subErr = errors.New("listen: connection refused")
	h.send(subscribedMsg{err: src.subErr})
	if v := h.plainView(); !strings.Contains(v, "connection refused") || !strings.Contains(v, "events down") {
		t.Errorf("subscribe failure not shown:\n%s", v)
	}
	if got := len(takeScheduled[resubscribeMsg](h)); got != 1 {
		t.Errorf("a failed subscribe scheduled %d retries, want 1", got)
	}
}

func TestPeriodicRefreshReschedules(t *testing.T) {
	src := newFakeSource(genProjects(2))
	src.events = closedEvents() // Init subscribes; an ended stream keeps the test from waiting
	h := newHarness(t, src, Options{}, true)
	h.run(h.m.Init())
	if got := len(takeScheduled[refreshTickMsg](h)); got != 1 {
		t.Fatalf("Init scheduled %d refreshes, want 1", got)
	}
	base := src.listCalls.Load()
	h.send(refreshTickMsg{})
	if src.listCalls.Load() != base+1 {
		t.Error("the periodic refresh did not reload")
	}
	if got := len(takeScheduled[refreshTickMsg](h)); got != 1 {
		t.Errorf("the refresh scheduled %d more, want 1", got)
	}
}

func TestUsageRefreshedOnEvent(t *testing.T) {
	ps := genProjects(3)
	src := newFakeSource(ps)
	h := newHarness(t, src, Options{}, true).start(120, 24)
	before := src.containerCalls.Load()
	h.send(reloadDueMsg{}) // nothing changed: no refetch
	if got := src.containerCalls.Load() - before; got != 0 {
		t.Errorf("an idle reload refetched %d usages", got)
	}
	h.m.live.changed = map[string]bool{ps[1].ID: true}
	h.send(reloadDueMsg{})
	if got := src.containerCalls.Load() - before; got != 1 {
		t.Errorf("an event for one project refetched %d usages, want 1", got)
	}
	h.send(refreshTickMsg{})
	if got := src.containerCalls.Load() - before; got != 4 {
		t.Errorf("the periodic refresh refetched %d usages in all, want 1+3", got)
	}
}

func TestTinyTerminal(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(10)), Options{}, true)
	for _, size := range [][2]int{{1, 1}, {10, 3}, {20, 6}, {0, 0}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		h.run(h.m.reload())
		h.press("j", "G", "/", "x", "esc")
		v := h.view()
		if size[1] == 0 {
			if v != "" {
				t.Errorf("zero-size view = %q", v)
			}
			continue
		}
		if got := len(strings.Split(v, "\n")); got != size[1] {
			t.Errorf("%v: %d lines", size, got)
		}
	}
}

func BenchmarkProjectsView10k(b *testing.B) {
	h := newHarness(b, newFakeSource(nil), Options{}, false)
	h.m.projects.setProjects(genProjects(10_000))
	h.m.Update(tea.WindowSizeMsg{Width: 160, Height: 60})
	for b.Loop() {
		h.m.projects.update(keyPress("j"))
		_ = h.m.View()
	}
}

// BenchmarkClockFrame is the frame an idle console draws once a second while the ages on
// screen are in seconds (a fresh fleet): every row's "ago" moves, nothing else. Dark skin.
func BenchmarkClockFrame(b *testing.B) {
	ps := genProjects(1000)
	for i := range ps {
		ps[i].LastActivity = t0.Add(-time.Duration(i%1200) * time.Second)
	}
	src := newFakeSource(ps)
	h := newHarness(b, src, Options{}, false)
	h.start(140, 40)
	now := t0.Add(5 * time.Second)
	for b.Loop() {
		now = now.Add(time.Second)
		if now.After(t0.Add(50 * time.Second)) {
			now = t0.Add(5 * time.Second)
		}
		src.setNow(now)
		h.m.Update(clockMsg{due: now})
		_ = h.m.View()
	}
}

func BenchmarkFilter10k(b *testing.B) {
	h := newHarness(b, newFakeSource(nil), Options{}, true)
	h.m.projects.setProjects(genProjects(10_000))
	h.m.Update(tea.WindowSizeMsg{Width: 160, Height: 60})
	for i := 0; b.Loop(); i++ {
		h.m.projects.setFilter(fmt.Sprintf("proj-0%d", i%1000))
	}
}

func TestPasteIntoFilter(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(30)), Options{}, true).start(100, 24)
	h.press("/")
	h.send(tea.PasteMsg{Content: "proj-0002"})
	if got := len(h.m.projects.shown); got != 10 {
		t.Errorf("pasted filter kept %d rows, want 10", got)
	}
	h.press("esc")
	h.send(tea.PasteMsg{Content: "zzz"}) // not filtering: ignored
	if got := len(h.m.projects.shown); got != 30 {
		t.Errorf("a paste outside the filter changed the list: %d rows", got)
	}
}

func TestDoubleEnterOpensOnePane(t *testing.T) {
	ps := genProjects(3)
	h := newHarness(t, newFakeSource(ps), Options{}, true).start(100, 24)
	h.send(showMsg{kind: kindContainers, project: ps[0]})
	h.send(showMsg{kind: kindContainers, project: ps[0]})
	if got := len(h.m.stack); got != 2 {
		t.Errorf("stack depth %d after two drill-ins, want 2", got)
	}
}

// Service and external containers show what they run from: a service its image and the volume
// its data lives in, an external service its endpoint; the primary app is marked.
func TestContainersShowServices(t *testing.T) {
	ps := genProjects(1)
	src := newFakeSource(ps)
	src.containers[ps[0].ID] = []engine.ContainerView{
		{Container: engine.Container{Name: "web", Directory: "web", Port: 3000, Primary: true},
			Status: engine.ContainerStatus{State: engine.ContainerRunning, HostPort: 41234}},
		{Container: engine.Container{Name: "db", Directory: ".", Port: 5432, Kind: engine.KindService, Image: "postgres:16", DataPath: "/var/lib/postgresql/data"},
			Status: engine.ContainerStatus{State: engine.ContainerRunning, Volume: "sailtui-proj-db"}},
		{Container: engine.Container{Name: "auth", Kind: engine.KindExternal, Endpoint: "https://x.supabase.co"},
			Status: engine.ContainerStatus{State: engine.ContainerExternal}},
	}
	h := newHarness(t, src, Options{}, true).start(140, 24)
	h.press("enter")
	v := h.plainView()
	for _, want := range []string{"web *", "postgres:16 vol sailtui-proj-db", "external https://x.supabase.co", "external"} {
		if !strings.Contains(v, want) {
			t.Errorf("containers view lacks %q:\n%s", want, v)
		}
	}
}
