package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// sortFleet has one project per situation the sorts care about: never active, overdue, a
// hibernated one, and manual snapshot counts that differ.
func sortFleet() *fakeSource {
	ps := []engine.Project{
		{ID: "a", Slug: "alpha", Status: engine.StatusHibernated, LastActivity: t0.Add(-26 * time.Hour)},
		{ID: "b", Slug: "bravo", Status: engine.StatusActive, LastActivity: t0.Add(-10 * time.Minute)},
		{ID: "c", Slug: "charlie", Status: engine.StatusActive, LastActivity: t0.Add(-40 * time.Minute)},
		{ID: "d", Slug: "delta", Status: engine.StatusFailed},
		{ID: "e", Slug: "echo", Status: engine.StatusActive, LastActivity: t0.Add(-2 * time.Minute)},
	}
	src := newFakeSource(ps)
	manual := map[string]int{"a": 1, "b": 3, "c": 0, "d": 5, "e": 2}
	for id, n := range manual {
		for i := 0; i < n; i++ {
			src.snapshots[id] = append(src.snapshots[id], engine.Snapshot{ID: id + string(rune('0'+i)),
				Type: engine.SnapshotManual, Status: engine.SnapshotReady})
		}
	}
	return src
}

// slugOrder is the slugs as the Projects pane lists them, top to bottom.
func slugOrder(h *harness) string {
	var out []string
	for _, i := range h.m.projects.shown {
		out = append(out, h.m.projects.rows[i].slug)
	}
	return strings.Join(out, " ")
}

// headerRow is the Projects column header as shown.
func headerRow(t *testing.T, h *harness) string {
	t.Helper()
	for _, l := range strings.Split(h.plainView(), "\n") {
		if strings.Contains(l, "NAME/SLUG") {
			return l
		}
	}
	t.Fatalf("no column header:\n%s", h.plainView())
	return ""
}

func TestProjectsSort(t *testing.T) {
	h := newHarness(t, sortFleet(), Options{}, true).start(120, 24)
	steps := []struct {
		key, order, header string
	}{
		{"", "alpha bravo charlie delta echo", "↑NAME/SLUG"},
		// Active first, as the header counts states.
		{"o", "bravo charlie echo alpha delta", "↑STATUS"},
		// Most recent first; delta was never active and stays last.
		{"o", "echo bravo charlie alpha delta", "↑LAST ACTIVITY"},
		// Soonest to hibernate first; only active projects count down.
		{"o", "charlie bravo echo alpha delta", "↑HIBERNATES IN"},
		// Fullest timeline first.
		{"o", "delta bravo echo alpha charlie", "↓SNAPSHOTS"},
		{"O", "charlie alpha echo bravo delta", "↑SNAPSHOTS"},
		{"o", "alpha bravo charlie delta echo", "↑NAME/SLUG"},
		{"O", "echo delta charlie bravo alpha", "↓NAME/SLUG"},
	}
	for _, s := range steps {
		if s.key != "" {
			h.press(s.key)
		}
		if got := slugOrder(h); got != s.order {
			t.Errorf("after %q the order is %q, want %q", s.key, got, s.order)
		}
		if hdr := headerRow(t, h); !strings.Contains(hdr, s.header) || strings.Count(hdr, "↑")+strings.Count(hdr, "↓") != 1 {
			t.Errorf("after %q the header is %q, want one arrow, at %q", s.key, hdr, s.header)
		}
	}

	// Reversing keeps rows without a value at the bottom, and the cursor on its project.
	h.press("o", "o") // last activity
	h.press("g", "j")
	if sel := h.selectedLine(); !strings.Contains(sel, "bravo") {
		t.Fatalf("selection %q, want bravo", sel)
	}
	h.press("O")
	if got, want := slugOrder(h), "alpha charlie bravo echo delta"; got != want {
		t.Errorf("reversed last activity: %q, want %q", got, want)
	}
	if sel := h.selectedLine(); !strings.Contains(sel, "bravo") {
		t.Errorf("reversing moved the selection off bravo: %q", sel)
	}

	// The filter applies to the sorted list.
	h.press("/")
	h.typeText("!alpha")
	h.press("enter")
	if got, want := slugOrder(h), "charlie bravo echo delta"; got != want {
		t.Errorf("filtered and sorted: %q, want %q", got, want)
	}
}

func TestProjectsSortIsCached(t *testing.T) {
	src := newFakeSource(genProjects(2000))
	h := newHarness(t, src, Options{}, true).start(120, 40)
	p := h.m.projects
	base := p.resorts
	h.press("j", "j", "pgdown", "G", "g")
	_ = h.view()
	h.press("/")
	h.typeText("proj-001")
	h.press("esc")
	h.send(usageLoadedMsg{got: map[string]usage{"id-00001": {manual: 4}}})
	if got := p.resorts - base; got != 0 {
		t.Errorf("moving, drawing, filtering and usage under the name sort re-sorted %d times", got)
	}
	h.press("o")
	if got := p.resorts - base; got != 1 {
		t.Errorf("o re-sorted %d times, want 1", got)
	}
	// A read that changed nothing sorts nothing again; one that changed a row does.
	h.send(reloadDueMsg{})
	if got := p.resorts - base; got != 1 {
		t.Errorf("a read with no change re-sorted (%d in all, want 1)", got)
	}
	h.src.setStatus("id-00003", engine.StatusHibernating)
	h.send(reloadDueMsg{})
	if got := p.resorts - base; got != 2 {
		t.Errorf("a read with a changed row re-sorted %d times in all, want 2", got)
	}

	// Under the snapshots sort, new counts move rows; the same counts again do not.
	h.press("o", "o", "o")
	base = p.resorts
	h.send(usageLoadedMsg{got: map[string]usage{"id-01999": {manual: 5}}})
	if got := p.resorts - base; got != 1 {
		t.Errorf("a new snapshot count re-sorted %d times, want 1", got)
	}
	if got := p.rows[p.shown[0]].slug; got != "proj-01999" {
		t.Errorf("top of the snapshots sort is %s, want proj-01999 (5 snapshots)", got)
	}
	h.send(usageLoadedMsg{got: map[string]usage{"id-01999": {manual: 5}}})
	if got := p.resorts - base; got != 1 {
		t.Errorf("an unchanged count re-sorted again (%d)", got)
	}
}

func TestSortKeysInHelp(t *testing.T) {
	h, _ := projectsHarness(t, Options{ReadOnly: true})
	h.press("?")
	v := h.plainView()
	for _, want := range []string{"o sort", "O reverse"} {
		if !strings.Contains(v, want) {
			t.Errorf("help lacks %q:\n%s", want, v)
		}
	}
}
