package ui

import (
	"strings"
	"testing"
)

// runLine enters a command line at the prompt.
func (h *harness) runLine(line string) {
	h.t.Helper()
	h.press(":")
	h.typeText(line)
	h.press("enter")
}

// The status line (above the key bar).
func (h *harness) statusText() string {
	lines := strings.Split(h.plainView(), "\n")
	return lines[len(lines)-2]
}

// :logs of a container the project does not have is refused, naming the ones it has,
// instead of opening a pane that retries forever (issue 17, item 12).
func TestCommandLogsRefusesMissingContainer(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("j") // storefront
	h.runLine("logs nope")
	if _, ok := h.m.top().(*logsPane); ok {
		t.Fatal(":logs nope opened a logs pane")
	}
	if s := h.statusText(); !strings.Contains(s, `:logs: storefront has no container "nope"; it has backend, frontend`) {
		t.Errorf("refusal does not name the containers: %q", s)
	}
	h.runLine("logs frontend")
	if lp, ok := h.m.top().(*logsPane); !ok || lp.container != "frontend" {
		t.Errorf(":logs frontend did not open its logs: %q", h.crumbs())
	}
}

func TestCommandWithoutArgumentsRefusesOne(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("j", "enter")
	h.runLine("projects extra")
	if s := h.statusText(); !strings.Contains(s, `:projects takes no argument (got "extra")`) {
		t.Errorf(":projects extra: %q", s)
	}
	if h.m.top().kind() != kindContainers {
		t.Errorf(":projects extra still ran: %q", h.crumbs())
	}
	h.runLine("sweep now")
	if s := h.statusText(); !strings.Contains(s, `:sweep takes no argument (got "now")`) {
		t.Errorf(":sweep now: %q", s)
	}
}

// tab cycles through the candidates, shift+tab back, and an ambiguous completion lists them.
func TestCommandCompletionCycles(t *testing.T) {
	src, _ := timelineFixture()
	src.projects = append(src.projects, genProjects(3)...)
	h := newHarness(t, src, Options{}, true).start(120, 30)
	h.press(":", "d", "tab")
	value := func() string { return h.m.cmd.input.Value() }
	if value() != "describe" || !strings.Contains(h.statusText(), "1/2  describe  doctor") {
		t.Fatalf("tab on d: %q, status %q", value(), h.statusText())
	}
	h.press("tab")
	if value() != "doctor" || !strings.Contains(h.statusText(), "2/2  describe  doctor") {
		t.Errorf("second tab: %q, status %q", value(), h.statusText())
	}
	h.press("tab")
	if value() != "describe" {
		t.Errorf("third tab goes round to %q", value())
	}
	h.press("shift+tab")
	if value() != "doctor" {
		t.Errorf("shift+tab went to %q", value())
	}
	// Slugs: what they share first, listed; then each in turn.
	h.press("esc", ":")
	h.typeText("tl pr")
	h.press("tab")
	if value() != "tl proj-0000" || !strings.Contains(h.statusText(), "proj-00000  proj-00001  proj-00002") {
		t.Fatalf("tab on a shared prefix: %q, status %q", value(), h.statusText())
	}
	h.press("tab", "tab")
	if value() != "tl proj-00001" || !strings.Contains(h.statusText(), "2/3") {
		t.Errorf("cycling slugs: %q, status %q", value(), h.statusText())
	}
	// Typing ends the cycle.
	h.press("backspace", "2", "tab")
	if value() != "tl proj-00002" || strings.Contains(h.statusText(), "proj-00000  proj-00001") {
		t.Errorf("after typing: %q, status %q", value(), h.statusText())
	}
	// :logs completes the containers of the project on screen.
	h.press("esc", "j", "j", "j", "j", "enter")
	if c := h.crumbs(); !strings.Contains(c, "storefront") {
		t.Fatalf("not in storefront's containers: %q", c)
	}
	h.press(":")
	h.typeText("logs ")
	h.press("tab")
	if value() != "logs backend" || !strings.Contains(h.statusText(), "1/2  backend  frontend") {
		t.Errorf(":logs completion: %q, status %q", value(), h.statusText())
	}
}

// ↑/↓ walk the commands entered; - runs the previous one again, toggling as k9s does.
func TestCommandHistoryAndLast(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("-")
	if s := h.statusText(); !strings.Contains(s, "no command has run yet") {
		t.Errorf("- without history: %q", s)
	}
	h.runLine("tl storefront")
	h.runLine("co storefront")
	h.runLine("bogus") // refused: not remembered
	h.press(":")
	h.typeText("x")
	value := func() string { return h.m.cmd.input.Value() }
	for _, want := range []string{"co storefront", "tl storefront", "tl storefront"} {
		h.press("up")
		if value() != want {
			t.Fatalf("up: %q, want %q", value(), want)
		}
	}
	for _, want := range []string{"co storefront", "x", "x"} {
		h.press("down")
		if value() != want {
			t.Fatalf("down: %q, want %q", value(), want)
		}
	}
	h.press("up", "enter")
	if c := h.crumbs(); !strings.Contains(c, "Projects › storefront  Containers") {
		t.Errorf("a line from history did not run: %q", c)
	}
	h.runLine("projects")
	h.press("-")
	if c := h.crumbs(); !strings.Contains(c, "Projects › storefront  Containers") {
		t.Errorf("- after :projects went to %q, want the containers again", c)
	}
	h.press("-")
	if c := h.crumbs(); !strings.Contains(c, "Projects  2") {
		t.Errorf("second - went to %q, want the projects again", c)
	}
	// Typed into a filter, - is a letter.
	h.press("/", "-")
	if h.m.projects.filter.flt.raw != "-" {
		t.Errorf("- in the filter: %q", h.m.projects.filter.flt.raw)
	}
}
