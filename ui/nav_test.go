package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

func (h *harness) crumbs() string {
	lines := strings.Split(h.plainView(), "\n")
	return lines[headerLines]
}

func TestCommandPrompt(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.wait = 300 * time.Millisecond
	h.press(":")
	if v := h.plainView(); !strings.Contains(v, ":") || !strings.Contains(v, "enter run") {
		t.Fatalf("no prompt:\n%s", v)
	}
	// tab completes the command name.
	h.typeText("ti")
	h.press("tab")
	if got := h.m.cmd.input.Value(); got != "timeline" {
		t.Fatalf("tab completed %q, want timeline", got)
	}
	if v := h.plainView(); !strings.Contains(v, "a project's snapshot timeline") {
		t.Errorf("the candidate is not described:\n%s", v)
	}
	// And then the slug.
	h.typeText(" sto")
	h.press("tab")
	if got := h.m.cmd.input.Value(); got != "timeline storefront" {
		t.Fatalf("tab completed %q, want the slug", got)
	}
	h.press("enter")
	if c := h.crumbs(); !strings.Contains(c, "Projects › storefront › Timeline") {
		t.Fatalf(":timeline storefront went to %q", c)
	}

	for _, tc := range []struct{ line, crumb string }{
		{"projects", "Projects  2"},
		{"co storefront", "Projects › storefront  Containers"},
		{"logs", "Projects › storefront › backend › Logs"},
		{"sweep", "Projects › Sweep preview"},
		{"desc notes-api", "Projects › notes-api › Describe"},
		{"tl", "Projects › notes-api › Timeline"},
	} {
		h.press(":")
		h.typeText(tc.line)
		h.press("enter")
		if c := h.crumbs(); !strings.Contains(c, tc.crumb) {
			t.Errorf(":%s went to %q, want %q", tc.line, c, tc.crumb)
		}
	}

	h.press(":")
	h.typeText("bogus")
	h.press("enter")
	if v := h.plainView(); !strings.Contains(v, `no command "bogus"`) {
		t.Errorf("unknown command not reported:\n%s", v)
	}
	h.press(":")
	h.typeText("tl nosuch")
	h.press("enter")
	if v := h.plainView(); !strings.Contains(v, `no project "nosuch"`) {
		t.Errorf("unknown project not reported:\n%s", v)
	}
	// esc leaves the prompt without running anything.
	h.press(":")
	h.typeText("q")
	h.press("esc")
	if h.m.cmd.active {
		t.Error("esc left the prompt open")
	}
	h.press(":")
	h.typeText("q")
	_, cmd := h.m.Update(keyPress("enter"))
	msg := cmd()
	_, cmd = h.m.Update(msg)
	if cmd == nil {
		t.Fatal(":q did nothing")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error(":q does not quit")
	}
}

func TestSweepPreview(t *testing.T) {
	src, _ := timelineFixture()
	ps := genProjects(3) // proj-00000 idle for 0m, …; make one overdue
	ps[2].LastActivity = t0.Add(-45 * time.Minute)
	src.projects = append(src.projects, ps...)
	h := newHarness(t, src, Options{ReadOnly: true}, true).start(100, 30)
	h.press(":")
	h.typeText("sweep")
	h.press("enter")
	v := h.plainView()
	for _, want := range []string{"Sweep preview", "dry run", "would hibernate 1", "WOULD HIBERNATE", "proj-00002", "idle since 2026-03-01T11:15:00Z"} {
		if !strings.Contains(v, want) {
			t.Errorf("sweep preview lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "storefront  idle") {
		t.Errorf("preview lists a recently active project:\n%s", v)
	}
}

func TestTabCyclesPanes(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.wait = 300 * time.Millisecond
	h.press("j") // storefront
	steps := []string{
		"Projects › storefront  Containers",
		"Projects › storefront › Timeline",
		"Projects › storefront › backend › Logs",
		"Projects  2",
	}
	for _, want := range steps {
		h.press("tab")
		if c := h.crumbs(); !strings.Contains(c, want) {
			t.Fatalf("tab went to %q, want %q", c, want)
		}
	}
	h.press("shift+tab")
	if c := h.crumbs(); !strings.Contains(c, "Logs") {
		t.Errorf("shift+tab from projects went to %q, want the logs", c)
	}
	// The logs of the second container, then back: the containers pane points at it.
	h.press("esc", "j", "enter", "esc")
	if sel := h.selectedLine(); !strings.Contains(sel, "frontend") {
		t.Errorf("back from frontend's logs the selection is %q", sel)
	}
	h.press("tab", "tab")
	if c := h.crumbs(); !strings.Contains(c, "frontend › Logs") {
		t.Errorf("tab back to the logs went to %q, want frontend's", c)
	}
	h.press("shift+tab", "shift+tab")
	if sel := h.selectedLine(); !strings.Contains(sel, "frontend") {
		t.Errorf("a fresh containers pane selects %q, want the container last looked at", sel)
	}
	h.press("tab", "tab")
	// esc walks back up the trail: logs › containers › projects.
	h.press("esc")
	if c := h.crumbs(); !strings.Contains(c, "Projects › storefront  Containers") {
		t.Errorf("esc from logs went to %q", c)
	}
	if sel := h.selectedLine(); !strings.Contains(sel, "frontend") {
		t.Errorf("back in containers the selection is %q", sel)
	}
	h.press("esc")
	if c := h.crumbs(); !strings.HasPrefix(c, "Projects  2") {
		t.Errorf("esc from containers went to %q", c)
	}
	if sel := h.selectedLine(); !strings.Contains(sel, "storefront") {
		t.Errorf("back in projects the selection is %q", sel)
	}
}

// Without a known container, tab skips the logs.
func TestTabSkipsLogsWithoutContainer(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("j", "t", "tab")
	if c := h.crumbs(); !strings.HasPrefix(c, "Projects  2") {
		t.Errorf("tab from the timeline went to %q", c)
	}
}

func TestTooSmall(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	for _, size := range [][2]int{{79, 24}, {80, 23}, {40, 10}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		v := h.plainView()
		if !strings.Contains(v, "terminal too small") || !strings.Contains(v, "need at least 80×24") {
			t.Errorf("%v: no too-small notice:\n%s", size, v)
		}
		if got := len(strings.Split(h.view(), "\n")); got != size[1] {
			t.Errorf("%v: %d lines", size, got)
		}
	}
	// Keys do not act on the hidden pane; q still quits.
	h.press("j", "h", "enter")
	if h.m.dialog != nil || len(h.m.stack) != 1 {
		t.Error("keys acted on a pane that is not shown")
	}
	_, cmd := h.m.Update(keyPress("q"))
	if cmd == nil {
		t.Fatal("q does nothing on a small terminal")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q does not quit on a small terminal")
	}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	if v := h.plainView(); strings.Contains(v, "too small") || !strings.Contains(v, "NAME/SLUG") {
		t.Errorf("growing back did not restore the console:\n%s", v)
	}
}

func TestHelpListsEveryKey(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("j", "?")
	v := h.plainView()
	for _, want := range []string{"stop", "hibernate", "describe", "timeline", "containers", "command", "next pane", ":sweep", ":timeline [slug]"} {
		if !strings.Contains(v, want) {
			t.Errorf("help lacks %q:\n%s", want, v)
		}
	}
}

func TestDescribeScrollsSideways(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("j", "d")
	d, ok := h.m.top().(*describePane)
	if !ok {
		t.Fatalf("no describe pane:\n%s", h.plainView())
	}
	if v := h.plainView(); strings.Contains(v, "→") {
		t.Errorf("sideways keys offered for text that fits:\n%s", v)
	}
	wide := "CONTAINER  STATE  " + strings.Repeat("-", 120) + "END"
	h.send(describedMsg{to: d, text: "short\n" + wide + "\n"})
	v := h.plainView()
	if strings.Contains(v, "END") || !strings.Contains(v, "→ scroll right") {
		t.Errorf("a wide line should be cut and → offered:\n%s", v)
	}
	h.press("right")
	if v := h.plainView(); !strings.Contains(v, "STATE  ----") || strings.Contains(v, "CONTAINER") {
		t.Errorf("→ did not move the text left by %d:\n%s", sideStep, v)
	}
	for range 30 {
		h.press("right")
	}
	if v := h.plainView(); !strings.Contains(v, "---END") {
		t.Errorf("scrolling right stops short of the end of the widest line:\n%s", v)
	}
	for range 30 {
		h.press("left")
	}
	if v := h.plainView(); !strings.Contains(v, "CONTAINER  STATE") {
		t.Errorf("← did not come back to the first column:\n%s", v)
	}
}

// :doctor opens the doctor's findings, each with its fix, and says which --fix sets right.
func TestDoctorPane(t *testing.T) {
	src, _ := timelineFixture()
	h := newHarness(t, src, Options{ReadOnly: true}, true).start(100, 30)
	h.press(":")
	h.typeText("doctor")
	h.press("enter")
	v := h.plainView()
	for _, want := range []string{"Doctor", "1 findings", "STORAGE  p1", "active, but its storage is gone", "fix: sailtui project wake p1", "sailtui doctor --fix"} {
		if !strings.Contains(v, want) {
			t.Errorf("doctor pane lacks %q:\n%s", want, v)
		}
	}
}
