package main

import (
	"strings"
	"testing"
)

// Issue 17, items 8, 9 and 12 on the real binary: every list filters with `/`, the logs filter
// (&) and search (k/N, current match marked), esc clearing them before going back, and the
// command prompt refusing a container the project does not have.
func TestConsoleFiltersSearchAndCommands(t *testing.T) {
	c := newCLI(t)
	s := startConsole(t, c, "--demo")
	s.waitFor("storefront", "blog", "notes-api")
	s.keys(":", "containers storefront", "Enter")
	s.waitFor("Projects › storefront", "frontend", "backend")
	// Letters of the filter (t: timeline, s: start/stop) are typed, not pane keys.
	s.keys("/", "frontend")
	scr := s.waitFor("1 of 2 /frontend")
	if strings.Contains(scr, "backend  ") {
		t.Errorf("the containers filter shows backend:\n%s", scr)
	}
	s.keys("Enter", "Escape")
	s.waitFor("Containers  2", "backend")
	if scr := s.screen(); !strings.Contains(scr, "Projects › storefront") {
		t.Fatalf("esc left the containers instead of clearing the filter:\n%s", scr)
	}

	s.keys(":", "logs nope", "Enter")
	s.waitFor(`storefront has no container "nope"; it has`, "backend")
	if scr := s.screen(); strings.Contains(scr, "› Logs") {
		t.Fatalf(":logs nope opened a logs pane:\n%s", scr)
	}

	s.keys(":", "logs frontend", "Enter")
	s.waitFor("frontend › Logs", "devserver: serving")
	s.keys("&", "serving", "Enter")
	s.waitFor("&serving", "1 of ")
	s.keys("/", "serving", "Enter")
	scr = s.waitFor("/serving 1/1")
	if !strings.Contains(scr, "> devserver: serving") {
		t.Errorf("the current match is not marked:\n%s", scr)
	}
	s.keys("Escape")
	s.waitFor("esc clear filter")
	s.keys("Escape")
	s.waitFor("esc back")
	if scr := s.screen(); strings.Contains(scr, "&serving") || !strings.Contains(scr, "› Logs") {
		t.Errorf("esc should have cleared the search, then the filter, and stayed:\n%s", scr)
	}
	s.keys("Escape")
	s.waitFor("Containers  2")
}
