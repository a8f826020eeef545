package ui

import (
	"strings"
	"testing"
)

// Every list filters with `/` (issue 17, item 8): the keys typed go into the filter, not to
// the pane, and esc clears the filter before it goes back.
func TestContainersFilter(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("j", "enter")
	if _, ok := h.m.top().(*containersPane); !ok {
		t.Fatalf("no containers pane:\n%s", h.plainView())
	}
	h.press("/")
	// "t" and "s" are pane keys (timeline, start/stop): typed here they are text.
	h.typeText("frontend")
	if _, ok := h.m.top().(*containersPane); !ok {
		t.Fatalf("a letter of the filter acted as a pane key:\n%s", h.plainView())
	}
	v := h.plainView()
	if !strings.Contains(v, "frontend") || strings.Contains(v, "backend") {
		t.Errorf("filter frontend shows:\n%s", v)
	}
	if !strings.Contains(h.crumbs(), "Containers  1 of 2 /frontend") {
		t.Errorf("title does not count what the filter shows: %q", h.crumbs())
	}
	if v := h.plainView(); !strings.Contains(v, "enter apply filter") {
		t.Errorf("key bar while typing the filter:\n%s", v)
	}
	h.press("enter")
	if sel := h.selectedLine(); !strings.Contains(sel, "frontend") {
		t.Errorf("selection after filtering = %q", sel)
	}
	if v := h.plainView(); !strings.Contains(v, "esc clear filter") || strings.Contains(v, "esc back") {
		t.Errorf("with a filter applied esc should offer to clear it:\n%s", v)
	}
	h.press("esc")
	if _, ok := h.m.top().(*containersPane); !ok {
		t.Fatalf("esc left the pane instead of clearing its filter:\n%s", h.plainView())
	}
	if v := h.plainView(); !strings.Contains(v, "backend") || !strings.Contains(h.crumbs(), "Containers  2") {
		t.Errorf("esc did not clear the filter:\n%s", v)
	}
	if sel := h.selectedLine(); !strings.Contains(sel, "frontend") {
		t.Errorf("clearing the filter moved the cursor off its row: %q", sel)
	}
	h.press("esc")
	if h.m.top() != pane(h.m.projects) {
		t.Errorf("second esc did not go back:\n%s", h.plainView())
	}
}

func TestTimelineFilter(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("j", "t", "/")
	h.typeText("!hib")
	v := h.plainView()
	if !strings.Contains(v, "before the upgrade") || strings.Contains(v, "hibernation-2026") {
		t.Errorf("inverted filter shows:\n%s", v)
	}
	h.press("backspace", "backspace", "backspace", "backspace")
	h.typeText("nothing-like-it")
	if v := h.plainView(); !strings.Contains(v, "no snapshot matches /nothing-like-it  (esc clears the filter)") {
		t.Errorf("no match is not explained:\n%s", v)
	}
	h.press("esc") // while typing: cancels the filter
	if h.m.top().kind() != kindTimeline || strings.Contains(h.crumbs(), "of 2") {
		t.Errorf("esc while typing should clear the filter and stay:\n%s", h.plainView())
	}
	// The filter stays across a reload, with the cursor on its row.
	h.press("/")
	h.typeText("hibernation")
	h.press("enter")
	tl := h.m.top().(*timelinePane)
	h.run(tl.load())
	if sel := h.selectedLine(); !strings.Contains(sel, "hibernation  ready") || strings.Contains(h.plainView(), "before the upgrade") {
		t.Errorf("after a reload the filtered selection is %q:\n%s", sel, h.plainView())
	}
	if !strings.Contains(h.crumbs(), "1 of 2 snapshots /hibernation") {
		t.Errorf("timeline title: %q", h.crumbs())
	}
	// Help lists the filter.
	h.press("?")
	if v := h.plainView(); !strings.Contains(v, "/ filter") || !strings.Contains(v, "esc clear filter") {
		t.Errorf("help lacks the filter keys:\n%s", v)
	}
}

// The projects filter matches names whatever their case, lower-casing a name only when a filter
// first looks at its row; that cached copy is no change: a read that brings the same records
// again changes nothing.
func TestProjectsFilterLowersNamesOnDemand(t *testing.T) {
	h := newHarness(t, newFakeSource(genProjects(20)), Options{}, true).start(120, 40)
	p := h.m.projects
	for i := range p.rows {
		if p.rows[i].lowered {
			t.Fatalf("row %s lower-cased by the load, before any filter", p.rows[i].slug)
		}
	}
	h.press("/")
	h.typeText("project 1")
	h.press("enter")
	if got := len(p.shown); got != 11 { // Project 1 and Project 10-19
		t.Fatalf("filter 'project 1' shows %d rows, want 11:\n%s", got, h.plainView())
	}
	if p.applyChanges(genProjects(20)) {
		t.Error("the same records again count as a change once the filter lower-cased their names")
	}
	h.press("esc")
	if got := len(p.shown); got != 20 {
		t.Errorf("cleared filter shows %d rows, want 20", got)
	}
}
