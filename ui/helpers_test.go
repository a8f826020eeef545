package ui

import (
	"context"
	"fmt"
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
	subErr     error
	events     chan engine.Event

	listCalls      atomic.Int64
	containerCalls atomic.Int64
}

func newFakeSource(ps []engine.Project) *fakeSource {
	return &fakeSource{
		projects:   ps,
		containers: map[string][]engine.ContainerView{},
		snapshots:  map[string][]engine.Snapshot{},
		events:     make(chan engine.Event, 1024),
	}
}

func (f *fakeSource) ListProjects(context.Context) ([]engine.Project, error) {
	f.listCalls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	return append([]engine.Project(nil), f.projects...), nil
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

func (f *fakeSource) Snapshots(_ context.Context, ref string, _ bool) ([]engine.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snapshots[ref], nil
}

func (f *fakeSource) Subscribe(context.Context) (<-chan engine.Event, error) {
	if f.subErr != nil {
		return nil, f.subErr
	}
	return f.events, nil
}

func (f *fakeSource) IdleTimeout() time.Duration { return 30 * time.Minute }
func (f *fakeSource) Now() time.Time             { return t0 }

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
	h := &harness{t: t, m: newModel(t.Context(), src, th, opts), src: src, wait: 5 * time.Second}
	h.m.live.after = func(d time.Duration, msg tea.Msg) tea.Cmd {
		return func() tea.Msg { return scheduledMsg{d: d, msg: msg} }
	}
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
