package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/theme"
)

// t0 is the fixed "now" of every test.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeSource serves fixed data and counts calls, so tests can check what the console asks for.
type fakeSource struct {
	mu         sync.Mutex
	projects   []engine.Project
	containers map[string][]engine.ContainerView
	snapshots  map[string][]engine.Snapshot
	listErr    error
	// served is what the last read listed, cursor the last cursor given.
	served map[string]engine.Project
	cursor int64
	subErr error
	events chan engine.Event
	// writes, when set, is what WatchStoreWrites gives (nil: the store cannot tell of writes).
	writes chan struct{}

	listCalls      atomic.Int64
	containerCalls atomic.Int64
	usageCalls     atomic.Int64
	// usage is what Usage answers per project id; usageErr, when set, is its error instead.
	usage    map[string]map[string]engine.ContainerUsage
	usageErr error

	now time.Time
	// opErr, when set, fails the next action with it.
	opErr error
	// gate, when set, holds every action until it is closed (or receives), so a test can look
	// at the console while an action runs.
	gate chan struct{}
	// progress is reported by every action before it finishes.
	progress []engine.Progress
	// logs serves Logs; nil serves logLines once and ends.
	logs     func(ctx context.Context, ref, name string, opts engine.LogOptions) (io.ReadCloser, error)
	logLines []string
	// describeNote, when set, ends what Describe says (a runtime's view that changed).
	describeNote string
	// calls records the actions in order ("restore p1 s1").
	calls []string
	seq   int
}

func newFakeSource(ps []engine.Project) *fakeSource {
	return &fakeSource{
		projects:   ps,
		containers: map[string][]engine.ContainerView{},
		snapshots:  map[string][]engine.Snapshot{},
		events:     make(chan engine.Event, 1024),
		now:        t0,
	}
}

// ProjectsChangedSince answers every read with every project (the contract allows reads to
// overlap), plus a deleted record for each project the previous read gave that is gone since:
// tests change f.projects at will and the console must follow.
func (f *fakeSource) ProjectsChangedSince(_ context.Context, cursor int64) (engine.ProjectChanges, error) {
	f.listCalls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return engine.ProjectChanges{}, f.listErr
	}
	out := engine.ProjectChanges{Projects: append([]engine.Project(nil), f.projects...), Cursor: f.cursor + 1}
	live := make(map[string]engine.Project, len(f.projects))
	for _, p := range f.projects {
		live[p.ID] = p
	}
	if cursor != 0 {
		for id, p := range f.served {
			if _, ok := live[id]; !ok {
				p.Status = engine.StatusDeleted
				out.Projects = append(out.Projects, p)
			}
		}
	}
	f.served, f.cursor = live, out.Cursor
	return out, nil
}

func (f *fakeSource) Containers(_ context.Context, ref string) (engine.Project, []engine.ContainerView, error) {
	f.containerCalls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.projects {
		if p.ID == ref || p.Slug == ref {
			return p, f.containers[p.ID], nil
		}
	}
	return engine.Project{}, nil, fmt.Errorf("project %q: %w", ref, engine.ErrNotFound)
}

func (f *fakeSource) Usage(_ context.Context, ref string) (map[string]engine.ContainerUsage, error) {
	f.usageCalls.Add(1)
	p, err := f.project(ref)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.usageErr != nil {
		return nil, f.usageErr
	}
	return f.usage[p.ID], nil
}

// ProbeContainers is Containers: the fixtures carry whatever PortAnswers a test gives them.
func (f *fakeSource) ProbeContainers(ctx context.Context, ref string) (engine.Project, []engine.ContainerView, error) {
	return f.Containers(ctx, ref)
}

func (f *fakeSource) Snapshots(_ context.Context, ref string, all bool) ([]engine.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.Snapshot
	for _, s := range f.snapshots[ref] {
		if all || s.Status != engine.SnapshotDeleted {
			out = append(out, s)
		}
	}
	return out, nil
}

func (f *fakeSource) Subscribe(context.Context) (<-chan engine.Event, error) {
	if f.subErr != nil {
		return nil, f.subErr
	}
	return f.events, nil
}

func (f *fakeSource) IdleTimeout() time.Duration { return 30 * time.Minute }

func (f *fakeSource) EventsShared() bool { return false }

func (f *fakeSource) WatchStoreWrites(context.Context) (<-chan struct{}, error) {
	if f.writes == nil {
		return nil, errors.ErrUnsupported
	}
	return f.writes, nil
}

func (f *fakeSource) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeSource) setNow(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.mu.Unlock()
}

func (f *fakeSource) Describe(_ context.Context, ref string) (string, error) {
	p, err := f.project(ref)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	note := f.describeNote
	f.mu.Unlock()
	return fmt.Sprintf("local runtime: project %s\ndirectory: /data/projects/%s\n\nCONTAINER  STATE    PID\nweb\trunning\t4242\n", p.Slug, p.Slug) + note, nil
}

func (f *fakeSource) Logs(ctx context.Context, ref, name string, opts engine.LogOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	logs, lines := f.logs, f.logLines
	f.mu.Unlock()
	if logs != nil {
		return logs(ctx, ref, name, opts)
	}
	return io.NopCloser(strings.NewReader(strings.Join(lines, "\n") + "\n")), nil
}

func (f *fakeSource) Doctor(context.Context) (engine.DoctorReport, error) {
	return engine.DoctorReport{Findings: []engine.Finding{{Check: "storage", Project: "p1",
		Detail: "active, but its storage is gone", Fix: "sailtui project wake p1", Fixable: true}}}, nil
}

func (f *fakeSource) SweepHibernate(_ context.Context, opts engine.SweepOptions) (engine.SweepReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rep := engine.SweepReport{Sweep: "hibernate", DryRun: opts.DryRun, AsOf: f.now, Idle: "30m0s", Lock: "not-taken (dry run)"}
	for _, p := range f.projects {
		if p.Status == engine.StatusActive && f.now.Sub(p.LastActivity) > 30*time.Minute {
			rep.Selected++
			rep.Hibernated = append(rep.Hibernated, engine.SweepItem{Slug: p.Slug, ID: p.ID,
				Reason: "idle since " + p.LastActivity.Format(time.RFC3339)})
		}
	}
	return rep, nil
}

// project finds a project by id or slug; the caller may hold f.mu or not (it takes it).
func (f *fakeSource) project(ref string) (engine.Project, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.projectLocked(ref)
}

func (f *fakeSource) projectLocked(ref string) (engine.Project, error) {
	for _, p := range f.projects {
		if p.ID == ref || p.Slug == ref {
			return p, nil
		}
	}
	return engine.Project{}, fmt.Errorf("project %q: %w", ref, engine.ErrNotFound)
}

// act runs the common part of every action: record it, report progress, wait at the gate,
// fail if told to; then change does the action's work under the lock.
func (f *fakeSource) act(ctx context.Context, what string, change func() error) error {
	f.mu.Lock()
	f.calls = append(f.calls, what)
	progress, gate := f.progress, f.gate
	f.mu.Unlock()
	if fn := engine.ProgressFrom(ctx); fn != nil {
		for _, p := range progress {
			fn(p)
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.opErr; err != nil {
		f.opErr = nil
		return err
	}
	return change()
}

func (f *fakeSource) setProject(id string, fn func(p *engine.Project)) {
	for i := range f.projects {
		if f.projects[i].ID == id {
			fn(&f.projects[i])
			f.projects[i].UpdatedAt = f.projects[i].UpdatedAt.Add(time.Second)
		}
	}
}

func (f *fakeSource) setContainers(id string, state engine.ContainerState) {
	for i := range f.containers[id] {
		f.containers[id][i].Status.State = state
	}
}

func (f *fakeSource) StartProject(ctx context.Context, ref string) (engine.Project, error) {
	var out engine.Project
	err := f.act(ctx, "start "+ref, func() error {
		f.setProject(ref, func(p *engine.Project) { p.Status = engine.StatusActive })
		f.setContainers(ref, engine.ContainerRunning)
		out, _ = f.projectLocked(ref)
		return nil
	})
	return out, err
}

func (f *fakeSource) StopProject(ctx context.Context, ref string) (engine.Project, error) {
	var out engine.Project
	err := f.act(ctx, "stop "+ref, func() error {
		f.setContainers(ref, engine.ContainerStopped)
		out, _ = f.projectLocked(ref)
		return nil
	})
	return out, err
}

func (f *fakeSource) Hibernate(ctx context.Context, ref string) (engine.Project, error) {
	var out engine.Project
	err := f.act(ctx, "hibernate "+ref, func() error {
		id := f.newSnap(ref, engine.SnapshotHibernation, "hibernation")
		f.setProject(ref, func(p *engine.Project) { p.Status, p.HibernationSnapshot = engine.StatusHibernated, id })
		f.setContainers(ref, engine.ContainerStopped)
		out, _ = f.projectLocked(ref)
		return nil
	})
	return out, err
}

func (f *fakeSource) Wake(ctx context.Context, ref string) (engine.Project, error) {
	var out engine.Project
	err := f.act(ctx, "wake "+ref, func() error {
		f.setProject(ref, func(p *engine.Project) { p.Status, p.HibernationSnapshot = engine.StatusActive, "" })
		f.setContainers(ref, engine.ContainerRunning)
		out, _ = f.projectLocked(ref)
		return nil
	})
	return out, err
}

func (f *fakeSource) StartContainer(ctx context.Context, ref, name string) (engine.ContainerStatus, error) {
	return engine.ContainerStatus{Name: name, State: engine.ContainerRunning}, f.act(ctx, "start "+ref+"/"+name, func() error {
		for i := range f.containers[ref] {
			if f.containers[ref][i].Name == name {
				f.containers[ref][i].Status.State = engine.ContainerRunning
			}
		}
		return nil
	})
}

func (f *fakeSource) StopContainer(ctx context.Context, ref, name string) error {
	return f.act(ctx, "stop "+ref+"/"+name, func() error {
		for i := range f.containers[ref] {
			if f.containers[ref][i].Name == name {
				f.containers[ref][i].Status.State = engine.ContainerStopped
			}
		}
		return nil
	})
}

// newSnap adds a ready snapshot (newest first) and returns its id; f.mu is held.
func (f *fakeSource) newSnap(ref string, t engine.SnapshotType, label string) string {
	f.seq++
	s := engine.Snapshot{
		ID: fmt.Sprintf("%s-%03d", t, f.seq), ProjectID: ref, Type: t, Label: label,
		Status: engine.SnapshotReady, CreatedAt: f.now, ReadyAt: f.now, SizeBytes: 12_345 * int64(f.seq),
	}
	f.snapshots[ref] = append([]engine.Snapshot{s}, f.snapshots[ref]...)
	return s.ID
}

func (f *fakeSource) manualLocked(ref string) int {
	n := 0
	for _, s := range f.snapshots[ref] {
		if s.Type == engine.SnapshotManual && s.Status != engine.SnapshotDeleted {
			n++
		}
	}
	return n
}

func (f *fakeSource) snapLocked(ref, id string) (*engine.Snapshot, error) {
	for i := range f.snapshots[ref] {
		if f.snapshots[ref][i].ID == id {
			return &f.snapshots[ref][i], nil
		}
	}
	return nil, fmt.Errorf("snapshot %q: %w", id, engine.ErrNotFound)
}

func (f *fakeSource) CreateSnapshot(ctx context.Context, ref, label string) (engine.Snapshot, error) {
	var out engine.Snapshot
	err := f.act(ctx, "snapshot "+ref+" "+label, func() error {
		if f.manualLocked(ref) >= engine.MaxManualSnapshots {
			return fmt.Errorf("project %s already has 5 manual snapshots: %w", ref, engine.ErrTimelineFull)
		}
		id := f.newSnap(ref, engine.SnapshotManual, label)
		s, _ := f.snapLocked(ref, id)
		out = *s
		return nil
	})
	return out, err
}

func (f *fakeSource) ReplaceSnapshot(ctx context.Context, ref, oldID, label string) (engine.Snapshot, error) {
	var out engine.Snapshot
	err := f.act(ctx, "replace "+ref+" "+oldID+" "+label, func() error {
		old, err := f.snapLocked(ref, oldID)
		if err != nil {
			return err
		}
		old.Status, old.DeletedAt = engine.SnapshotDeleted, f.now
		id := f.newSnap(ref, engine.SnapshotManual, label)
		s, _ := f.snapLocked(ref, id)
		out = *s
		return nil
	})
	return out, err
}

func (f *fakeSource) RestoreSnapshot(ctx context.Context, ref, id string) (engine.RestoreResult, error) {
	var out engine.RestoreResult
	err := f.act(ctx, "restore "+ref+" "+id, func() error {
		target, err := f.snapLocked(ref, id)
		if err != nil {
			return err
		}
		out.Restored = *target
		p, _ := f.projectLocked(ref)
		if p.Status == engine.StatusActive {
			sid := f.newSnap(ref, engine.SnapshotSafety, "before restoring "+id)
			s, _ := f.snapLocked(ref, sid)
			out.Safety = *s
		}
		f.setProject(ref, func(p *engine.Project) { p.Status, p.HibernationSnapshot = engine.StatusActive, "" })
		out.Project, _ = f.projectLocked(ref)
		return nil
	})
	return out, err
}

func (f *fakeSource) RelabelSnapshot(ctx context.Context, ref, id, label string) (engine.Snapshot, error) {
	var out engine.Snapshot
	err := f.act(ctx, "relabel "+ref+" "+id+" "+label, func() error {
		s, err := f.snapLocked(ref, id)
		if err != nil {
			return err
		}
		s.Label = label
		out = *s
		return nil
	})
	return out, err
}

func (f *fakeSource) DeleteSnapshot(ctx context.Context, ref, id string) error {
	return f.act(ctx, "delete "+ref+" "+id, func() error {
		s, err := f.snapLocked(ref, id)
		if err != nil {
			return err
		}
		s.Status, s.DeletedAt = engine.SnapshotDeleted, f.now
		return nil
	})
}

func (f *fakeSource) UndeleteSnapshot(ctx context.Context, ref, id string) (engine.Snapshot, error) {
	var out engine.Snapshot
	err := f.act(ctx, "undelete "+ref+" "+id, func() error {
		s, err := f.snapLocked(ref, id)
		if err != nil {
			return err
		}
		if s.Status != engine.SnapshotDeleted {
			return fmt.Errorf("snapshot %s is %s, not deleted: %w", id, s.Status, engine.ErrBadState)
		}
		s.Status, s.DeletedAt = engine.SnapshotReady, time.Time{}
		out = *s
		return nil
	})
	return out, err
}

func (f *fakeSource) UndeleteProject(ctx context.Context, ref string) (engine.Project, error) {
	var out engine.Project
	err := f.act(ctx, "undelete "+ref, func() error {
		if _, err := f.projectLocked(ref); err == nil {
			return fmt.Errorf("undelete project %s: it is not deleted: %w", ref, engine.ErrBadState)
		}
		out = engine.Project{ID: "back-" + ref, Slug: ref, Status: engine.StatusHibernated}
		return nil
	})
	return out, err
}

func (f *fakeSource) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeSource) setStatus(id string, s engine.ProjectStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.projects {
		if f.projects[i].ID == id {
			f.projects[i].Status = s
			f.projects[i].UpdatedAt = f.projects[i].UpdatedAt.Add(time.Second)
		}
	}
}

// genProjects makes n projects proj-00000..; every seventh is hibernated.
func genProjects(n int) []engine.Project {
	ps := make([]engine.Project, n)
	for i := range ps {
		st := engine.StatusActive
		if i%7 == 3 {
			st = engine.StatusHibernated
		}
		ps[i] = engine.Project{
			ID: fmt.Sprintf("id-%05d", i), Slug: fmt.Sprintf("proj-%05d", i), Name: fmt.Sprintf("Project %d", i),
			Owner: "alice", Status: st, LastActivity: t0.Add(-time.Duration(i%60) * time.Minute),
			UpdatedAt: t0.Add(-time.Hour),
		}
	}
	return ps
}

type harness struct {
	t   testing.TB
	m   *model
	src *fakeSource
	// scheduled holds the messages the model asked to get later (ticks); tests deliver them.
	scheduled []tea.Msg
	// wait is how long a command may take before it is left behind. Only a wait for events
	// blocks, so tests with a live event channel shorten it.
	wait time.Duration
}

// scheduledMsg is what a tick turns into under the harness: noted, not waited for.
type scheduledMsg struct {
	d   time.Duration
	msg tea.Msg
}

func newHarness(t testing.TB, src *fakeSource, opts Options, noColor bool) *harness {
	t.Helper()
	th, err := theme.New(opts.Skin, noColor)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	h := &harness{t: t, m: newModel(t.Context(), src, th, opts), src: src, wait: 5 * time.Second}
	h.m.live.after = func(d time.Duration, msg tea.Msg) tea.Cmd {
		return func() tea.Msg { return scheduledMsg{d: d, msg: msg} }
	}
	// Tests drive reads themselves; TestWatcherSeesOtherProcesses turns the watcher on.
	h.m.live.watchEvery = 0
	return h
}

// takeScheduled returns and forgets the scheduled messages of type T.
func takeScheduled[T tea.Msg](h *harness) []T {
	var out []T
	rest := h.scheduled[:0]
	for _, m := range h.scheduled {
		if x, ok := m.(T); ok {
			out = append(out, x)
		} else {
			rest = append(rest, m)
		}
	}
	h.scheduled = rest
	return out
}

// start sizes the screen and loads the list as the program would.
func (h *harness) start(w, height int) *harness {
	h.send(tea.WindowSizeMsg{Width: w, Height: height})
	h.run(h.m.reload())
	return h
}

// send delivers msg and runs what it returns until nothing quick is left.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

func (h *harness) press(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.send(keyPress(k))
	}
}

// run executes cmd and feeds its messages back. Ticks are only noted (h.scheduled); a command
// that does not answer in time (waiting for events) is left behind and tests deliver those
// messages themselves.
func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 1000 {
			h.t.Fatal("commands keep producing messages")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg, ok := quick(c, h.wait)
		if !ok {
			continue
		}
		switch msg := msg.(type) {
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case scheduledMsg:
			h.scheduled = append(h.scheduled, msg.msg)
		case tea.QuitMsg:
		default:
			_, next := h.m.Update(msg)
			queue = append(queue, next)
		}
	}
}

func quick(c tea.Cmd, wait time.Duration) (tea.Msg, bool) {
	ch := make(chan tea.Msg, 1)
	go func() { ch <- c() }()
	select {
	case msg := <-ch:
		return msg, true
	case <-time.After(wait):
		return nil, false
	}
}

func (h *harness) view() string { return h.m.View().Content }

// plainView is the view without escape sequences.
func (h *harness) plainView() string { return ansi.Strip(h.view()) }

// selectedLine is the line carrying the selection marker.
func (h *harness) selectedLine() string {
	for _, l := range strings.Split(h.plainView(), "\n") {
		if strings.HasPrefix(l, selMarker) {
			return l
		}
	}
	return ""
}

func keyPress(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	}
	r := []rune(k)
	if len(r) != 1 {
		return tea.KeyPressMsg{} // matches no binding, so the test's assertions fail loudly
	}
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// typeText presses one key per rune.
func (h *harness) typeText(s string) {
	for _, r := range s {
		h.press(string(r))
	}
}

// background runs cmd the way the program does (every command of a batch in its own
// goroutine) and hands back the messages, so a test can look at the screen while an action
// is still running.
func background(cmd tea.Cmd) <-chan tea.Msg {
	out := make(chan tea.Msg, 64)
	var run func(c tea.Cmd)
	var wg sync.WaitGroup
	run = func(c tea.Cmd) {
		defer wg.Done()
		if c == nil {
			return
		}
		msg := c()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				wg.Add(1)
				go run(c)
			}
			return
		}
		if msg != nil {
			out <- msg
		}
	}
	wg.Add(1)
	go run(cmd)
	go func() { wg.Wait(); close(out) }()
	return out
}

// next waits for the next message of type T from ch, delivering the ones before it.
func next[T tea.Msg](h *harness, ch <-chan tea.Msg) T {
	h.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case msg, ok := <-ch:
			if !ok {
				var zero T
				h.t.Fatalf("commands ended without a %T", zero)
				return zero
			}
			if x, ok := msg.(T); ok {
				return x
			}
			h.send(msg)
		case <-timeout:
			var zero T
			h.t.Fatalf("no %T in time", zero)
			return zero
		}
	}
}

// flushReload delivers the reloads the model scheduled (after an event or an action).
func (h *harness) flushReload() {
	for _, m := range takeScheduled[reloadDueMsg](h) {
		h.send(m)
	}
}

// timelineFixture is one active project with two running containers and a timeline of a
// manual and a hibernation snapshot.
func timelineFixture() (*fakeSource, engine.Project) {
	p := engine.Project{ID: "p1", Slug: "storefront", Name: "Storefront", Owner: "demo", Status: engine.StatusActive,
		LastActivity: t0.Add(-3 * time.Minute), CreatedAt: t0.Add(-48 * time.Hour), UpdatedAt: t0.Add(-time.Hour)}
	other := engine.Project{ID: "p2", Slug: "notes-api", Name: "notes-api", Owner: "demo", Status: engine.StatusHibernated,
		HibernationSnapshot: "hibernation-20260228-120000-aaaaaaaaaaaa", LastActivity: t0.Add(-26 * time.Hour), UpdatedAt: t0.Add(-time.Hour)}
	src := newFakeSource([]engine.Project{p, other})
	src.containers[p.ID] = []engine.ContainerView{
		{Container: engine.Container{Name: "backend", Directory: "backend", Port: 8000},
			Status: engine.ContainerStatus{State: engine.ContainerRunning, HostPort: 41001, URL: "http://storefront-backend.localhost",
				StartedAt: t0.Add(-3*time.Hour - 25*time.Minute)}},
		{Container: engine.Container{Name: "frontend", Directory: "frontend", Port: 5173},
			Status: engine.ContainerStatus{State: engine.ContainerRunning, HostPort: 41002, URL: "http://storefront-frontend.localhost",
				StartedAt: t0.Add(-12 * time.Minute)}},
	}
	src.usage = map[string]map[string]engine.ContainerUsage{p.ID: {
		"backend":  {CPU: 0.124, Memory: 187 << 20},
		"frontend": {CPU: 0.004, Memory: 1288490188},
	}}
	src.snapshots[p.ID] = []engine.Snapshot{
		{ID: "manual-20260301-114500-0123456789ab", ProjectID: p.ID, Type: engine.SnapshotManual, Label: "before the upgrade",
			Status: engine.SnapshotReady, CreatedAt: t0.Add(-15 * time.Minute), SizeBytes: 2_621_440},
		{ID: "hibernation-20260228-120000-bbbbbbbbbbbb", ProjectID: p.ID, Type: engine.SnapshotHibernation, Label: "hibernation",
			Status: engine.SnapshotReady, CreatedAt: t0.Add(-24 * time.Hour), SizeBytes: 2_500_000},
	}
	src.snapshots[other.ID] = []engine.Snapshot{
		{ID: other.HibernationSnapshot, ProjectID: other.ID, Type: engine.SnapshotHibernation, Label: "hibernation",
			Status: engine.SnapshotReady, CreatedAt: t0.Add(-26 * time.Hour), SizeBytes: 777_000},
	}
	return src, p
}

// fillTimeline gives project id five manual snapshots, the oldest last.
func fillTimeline(src *fakeSource, id string) {
	var snaps []engine.Snapshot
	for i := 0; i < engine.MaxManualSnapshots; i++ {
		snaps = append(snaps, engine.Snapshot{
			ID: fmt.Sprintf("manual-2026030%d-100000-00000000000%d", 1, i), ProjectID: id, Type: engine.SnapshotManual,
			Label: fmt.Sprintf("checkpoint %d", engine.MaxManualSnapshots-i), Status: engine.SnapshotReady,
			CreatedAt: t0.Add(-time.Duration(i+1) * time.Hour), SizeBytes: 1 << 20,
		})
	}
	src.snapshots[id] = snaps
}

// History answers with a fixed history: an operation and an activity line of the project.
func (f *fakeSource) History(_ context.Context, ref string, _ int) (engine.Project, []engine.HistoryEntry, error) {
	p, err := f.project(ref)
	if err != nil {
		return engine.Project{}, nil, err
	}
	now := f.Now()
	return p, []engine.HistoryEntry{
		{Kind: engine.HistoryIdleWarning, At: now.Add(-2 * time.Minute), Source: "sweep"},
		{Kind: engine.HistoryActivity, At: now.Add(-40 * time.Minute), Until: now.Add(-30 * time.Minute), Source: "files", Actor: "ide", Count: 12},
		{Kind: engine.HistoryOperation, At: now.Add(-time.Hour), Until: now.Add(-time.Hour + time.Second), Op: engine.OpWake, Outcome: engine.OpDone, Actor: "host/1/2"},
	}, nil
}

func (f *fakeSource) KeepAlive(ctx context.Context, ref string, d time.Duration) (engine.Project, error) {
	var out engine.Project
	err := f.act(ctx, "keep-alive "+ref+" "+d.String(), func() error {
		f.setProject(ref, func(p *engine.Project) { p.KeepAliveUntil = f.now.Add(d) })
		out, _ = f.projectLocked(ref)
		return nil
	})
	return out, err
}

func (f *fakeSource) CancelKeepAlive(ctx context.Context, ref string) (engine.Project, error) {
	var out engine.Project
	err := f.act(ctx, "cancel keep-alive "+ref, func() error {
		f.setProject(ref, func(p *engine.Project) { p.KeepAliveUntil = time.Time{} })
		out, _ = f.projectLocked(ref)
		return nil
	})
	return out, err
}
