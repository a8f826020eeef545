package ui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// projectsHarness lists the timeline fixture: notes-api (hibernated) first, then storefront.
func projectsHarness(t *testing.T, opts Options) (*harness, *fakeSource) {
	t.Helper()
	src, _ := timelineFixture()
	return newHarness(t, src, opts, true).start(100, 30), src
}

func TestProjectActionsFollowTheState(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	// notes-api is hibernated: wake and start (which wakes) apply; hibernate does not.
	v := h.plainView()
	for _, want := range []string{"w wake", "s start (wakes)", "d describe", "t timeline"} {
		if !strings.Contains(v, want) {
			t.Errorf("help for a hibernated project lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "h hibernate") {
		t.Errorf("hibernate offered for a hibernated project:\n%s", v)
	}
	h.press("h")
	if v := h.plainView(); h.m.dialog != nil || !strings.Contains(v, "hibernate: notes-api is hibernated") {
		t.Errorf("h on a hibernated project:\n%s", v)
	}
	wantCalls(t, src)

	// storefront runs: s stops it (after a confirmation), h hibernates it (after one too).
	h.press("j")
	v = h.plainView()
	for _, want := range []string{"s stop", "h hibernate"} {
		if !strings.Contains(v, want) {
			t.Errorf("help for a running project lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "w wake") {
		t.Errorf("wake offered for an active project:\n%s", v)
	}
	h.press("s")
	if v := h.plainView(); !strings.Contains(v, "Stop storefront?") || !strings.Contains(v, "2 running containers") {
		t.Fatalf("no stop confirmation:\n%s", v)
	}
	h.press("enter") // Cancel
	h.press("h")
	if v := h.plainView(); !strings.Contains(v, "Hibernate storefront?") || !strings.Contains(v, "snapshotted") {
		t.Fatalf("no hibernate confirmation:\n%s", v)
	}
	h.press("y")
	wantCalls(t, src, "hibernate p1")
	if v := h.plainView(); !strings.Contains(v, "storefront hibernated") {
		t.Errorf("hibernate not reported:\n%s", v)
	}
	h.flushReload()
	if v := h.plainView(); !strings.Contains(h.selectedLine(), "hibernated") {
		t.Errorf("the list does not show the new state:\n%s", v)
	}
	// Now it can be woken, without a confirmation (nothing is lost by waking).
	h.press("w")
	wantCalls(t, src, "hibernate p1", "wake p1")
}

func TestStartNeedsNoConfirmation(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	h.press("s") // notes-api: start wakes it
	wantCalls(t, src, "start p2")
}

func TestReadOnlyRemovesActions(t *testing.T) {
	src, _ := timelineFixture()
	h := newHarness(t, src, Options{ReadOnly: true}, true).start(100, 30)
	for _, k := range []string{"s", "h", "w"} {
		if h.m.projects.actions.has(k) {
			t.Errorf("read-only projects pane registered %q", k)
		}
	}
	if !h.m.projects.actions.has("d") || !h.m.projects.actions.has("t") {
		t.Error("read-only dropped describe or timeline, which change nothing")
	}
	h.press("s", "h", "w")
	if h.m.dialog != nil {
		t.Fatal("a read-only console opened a dialog")
	}
	h.press("j", "t")
	tl, ok := h.m.top().(*timelinePane)
	if !ok {
		t.Fatal("no timeline")
	}
	for _, k := range []string{"c", "r", "l", "x"} {
		if tl.actions.has(k) {
			t.Errorf("read-only timeline registered %q", k)
		}
	}
	h.press("c", "r", "l", "x")
	if h.m.dialog != nil {
		t.Fatal("a read-only timeline opened a dialog")
	}
	v := h.plainView()
	if strings.Contains(v, "restore") || strings.Contains(v, "create") {
		t.Errorf("read-only help offers actions:\n%s", v)
	}
	h.press("?")
	// The keys pressed above say why they did nothing (the last message shows in help too);
	// no binding of them is offered.
	if v := h.plainView(); regexp.MustCompile(`\br +restore|\bx +delete`).MatchString(v) {
		t.Errorf("read-only full help offers actions:\n%s", v)
	}
	wantCalls(t, src)
}

func TestProgressWhileTheConsoleStaysUsable(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	src.gate = make(chan struct{})
	src.progress = []engine.Progress{{Phase: "archive", Done: 3 << 20, Total: 12 << 20}}
	// The re-armed progress wait blocks until the action ends: do not wait for it.
	h.wait = 100 * time.Millisecond
	h.press("j", "h")
	_, cmd := h.m.Update(keyPress("y"))
	// The dialog's confirm command asks the root to start the op; deliver that by hand and
	// run what it returns in the background, as the program would.
	start := cmd()
	_, cmd = h.m.Update(start)
	msgs := background(cmd)
	prog := next[opProgressMsg](h, msgs)
	h.send(prog)
	v := h.plainView()
	for _, want := range []string{"⟳ hibernate storefront", "archive", "25%", "3.0 MiB / 12.0 MiB", "█"} {
		if !strings.Contains(v, want) {
			t.Errorf("progress line lacks %q:\n%s", want, v)
		}
	}
	if lines := strings.Split(h.view(), "\n"); len(lines) != 30 {
		t.Errorf("the progress line broke the layout: %d lines", len(lines))
	}
	// The console answers keys meanwhile, and does not offer a second action on the project.
	h.press("k")
	if !strings.Contains(h.selectedLine(), "notes-api") {
		t.Errorf("keys are not answered during an action: %q", h.selectedLine())
	}
	h.press("j", "s")
	if v := h.plainView(); h.m.dialog != nil || !strings.Contains(v, "busy: hibernate storefront") {
		t.Errorf("a busy project was offered another action:\n%s", v)
	}
	close(src.gate)
	done := next[opDoneMsg](h, msgs)
	h.send(done)
	if v := h.plainView(); strings.Contains(v, "⟳") || !strings.Contains(v, "storefront hibernated") {
		t.Errorf("the progress line outlived the action:\n%s", v)
	}
	for range msgs {
	}
}

func TestDescribePane(t *testing.T) {
	h, _ := projectsHarness(t, Options{ReadOnly: true})
	h.press("j", "d")
	v := h.plainView()
	for _, want := range []string{"Projects › storefront › Describe", "local runtime: project storefront", "CONTAINER", "4242"} {
		if !strings.Contains(v, want) {
			t.Errorf("describe lacks %q:\n%s", want, v)
		}
	}
	h.press("esc")
	if v := h.plainView(); !strings.Contains(v, "NAME/SLUG") {
		t.Errorf("esc did not go back:\n%s", v)
	}
}

func TestContainerStartStop(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	h.press("j", "enter")
	if v := h.plainView(); !strings.Contains(v, "s stop") || !strings.Contains(v, "enter/l logs") {
		t.Errorf("containers help:\n%s", v)
	}
	h.press("s")
	wantCalls(t, src, "stop p1/backend")
}

func TestDialogSwallowsKeys(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	h.press("j", "h")
	// q, ?, : and j mean nothing to a confirmation; they must not reach the list or quit.
	for _, k := range []string{"q", "?", ":", "j", "x"} {
		_, cmd := h.m.Update(keyPress(k))
		if cmd != nil {
			if _, ok := cmd().(tea.QuitMsg); ok {
				t.Fatalf("%s quit from a dialog", k)
			}
		}
	}
	if h.m.dialog == nil || h.m.showHelp || h.m.cmd.active {
		t.Fatal("keys leaked out of the dialog")
	}
	if !strings.Contains(h.selectedLine(), "storefront") {
		t.Error("j moved the list under the dialog")
	}
	wantCalls(t, src)
}

// The hibernate confirmation counts running containers only where it has a count, and its
// verb agrees with it (it said "its 0 running containers stop").
func TestHibernateThenWording(t *testing.T) {
	for _, tc := range []struct {
		n     int
		known bool
		want  string
	}{
		{0, true, "its environment is removed (no container is running)"},
		{1, true, "its running container stops and its environment is removed"},
		{3, true, "its 3 running containers stop and its environment is removed"},
		{0, false, "its containers stop and its environment is removed"},
	} {
		if got := hibernateThen(tc.n, tc.known); got != tc.want {
			t.Errorf("hibernateThen(%d, %v) = %q, want %q", tc.n, tc.known, got, tc.want)
		}
	}
}

// A key that read-only mode blocks says so in the status line instead of doing nothing.
func TestReadOnlyKeySaysWhy(t *testing.T) {
	src, _ := timelineFixture()
	h := newHarness(t, src, Options{ReadOnly: true}, true).start(100, 30)
	h.press("j", "h")
	if v := h.plainView(); h.m.dialog != nil || !strings.Contains(v, "read-only") || !strings.Contains(v, "without it") {
		t.Errorf("h in a read-only console:\n%s", v)
	}
	h.press("t", "x")
	if v := h.plainView(); h.m.dialog != nil || !strings.Contains(v, "read-only (--readonly") {
		t.Errorf("x in a read-only timeline:\n%s", v)
	}
	wantCalls(t, src)
}

// :undelete SLUG brings a removed project back (not in the list, so it is named); read-only
// consoles refuse it saying why, and without a slug it says what it takes.
func TestUndeleteProjectCommand(t *testing.T) {
	src, _ := timelineFixture()
	h := newHarness(t, src, Options{}, true).start(100, 30)
	h.press(":")
	h.typeText("undelete")
	h.press("enter")
	if v := h.plainView(); !strings.Contains(v, ":undelete SLUG") {
		t.Errorf(":undelete alone:\n%s", v)
	}
	h.press(":")
	h.typeText("undelete old-shop")
	h.press("enter")
	if v := h.plainView(); !strings.Contains(v, "old-shop is back, hibernated") {
		t.Errorf(":undelete old-shop:\n%s", v)
	}
	h.press(":")
	h.typeText("undelete storefront")
	h.press("enter")
	if v := h.plainView(); !strings.Contains(v, "not deleted") {
		t.Errorf(":undelete of a live project:\n%s", v)
	}
	wantCalls(t, src, "undelete old-shop", "undelete storefront")

	ro, rosrc := projectsHarness(t, Options{ReadOnly: true})
	ro.press(":")
	ro.typeText("undelete old-shop")
	ro.press("enter")
	if v := ro.plainView(); !strings.Contains(v, "read-only") {
		t.Errorf(":undelete in a read-only console:\n%s", v)
	}
	wantCalls(t, rosrc)
}
