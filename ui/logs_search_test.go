package ui

import (
	"fmt"
	"strings"
	"testing"
)

// moreLines are more0…more99: /more5 matches more5 and more50–more59.
func moreLines() []string {
	out := make([]string, 100)
	for i := range out {
		out[i] = fmt.Sprintf("more%d", i)
	}
	return out
}

// currentMatch is the log line marked as the current match.
func (h *harness) currentMatch() string {
	for _, l := range strings.Split(h.plainView(), "\n") {
		if strings.HasPrefix(l, selMarker) {
			return strings.TrimSpace(strings.TrimPrefix(l, selMarker))
		}
	}
	return ""
}

// n and N visit every match in turn, from the bottom too (issue 17, item 9: after /more5 from
// the bottom, the first n jumped past more50–58), the current one is marked and counted.
func TestLogsSearchVisitsEveryMatch(t *testing.T) {
	src, _ := timelineFixture()
	src.logLines = moreLines()
	h := openLogs(t, src)
	h.press("/")
	h.typeText("more5")
	h.press("enter")
	if got := h.currentMatch(); got != "more59" {
		t.Fatalf("the search starts at %q, want the newest match more59:\n%s", got, h.plainView())
	}
	if v := h.plainView(); !strings.Contains(v, "/more5 11/11") {
		t.Errorf("the status does not place the match (k/N):\n%s", v)
	}
	want := []string{"more58", "more57", "more56", "more55", "more54", "more53", "more52", "more51", "more50", "more5"}
	for i, w := range want {
		h.press("n")
		if got := h.currentMatch(); got != w {
			t.Fatalf("n #%d went to %q, want %q:\n%s", i+1, got, w, h.plainView())
		}
		if v, k := h.plainView(), fmt.Sprintf("/more5 %d/11", 10-i); !strings.Contains(v, k) {
			t.Errorf("after n #%d the status lacks %q:\n%s", i+1, k, v)
		}
	}
	h.press("n")
	if v := h.plainView(); !strings.Contains(v, "no older match for /more5") || h.currentMatch() != "more5" {
		t.Errorf("n past the oldest match:\n%s", v)
	}
	for _, w := range []string{"more50", "more51"} {
		h.press("N")
		if got := h.currentMatch(); got != w {
			t.Fatalf("N went to %q, want %q", got, w)
		}
	}
	// Scrolled away from the current match, n goes on from the screen.
	h.press("g")
	h.press("n")
	if got := h.currentMatch(); got != "more5" {
		t.Errorf("n from the top of the log went to %q, want more5", got)
	}
	// esc clears the search before it leaves the pane.
	if v := h.plainView(); !strings.Contains(v, "esc clear search") {
		t.Errorf("the key bar does not say esc clears the search:\n%s", v)
	}
	h.press("esc")
	if _, ok := h.m.top().(*logsPane); !ok {
		t.Fatalf("esc left the pane with a search on")
	}
	if v := h.plainView(); strings.Contains(strings.Split(v, "\n")[headerLines+1], "/more5") || h.currentMatch() != "" || !strings.Contains(v, "esc back") {
		t.Errorf("esc did not clear the search:\n%s", v)
	}
	h.press("esc")
	if _, ok := h.m.top().(*logsPane); ok {
		t.Error("the second esc did not leave the pane")
	}
}

// & shows only the lines that match; scrolling and search walk those, and lines that arrive
// later are filtered as they come.
func TestLogsFilterShowsOnlyMatches(t *testing.T) {
	src, _ := timelineFixture()
	src.logLines = moreLines()
	h := openLogs(t, src)
	h.press("&")
	if v := h.plainView(); !strings.Contains(v, "&") || !strings.Contains(v, "enter apply filter") {
		t.Fatalf("no filter prompt:\n%s", v)
	}
	h.typeText("more5")
	h.press("enter")
	v := h.plainView()
	if !strings.Contains(v, "11 of 100 lines") || !strings.Contains(v, "&more5") {
		t.Errorf("the filter is not counted:\n%s", v)
	}
	for _, no := range []string{"more6\n", "more49", "more60", "more99"} {
		if strings.Contains(v, no) {
			t.Errorf("the filter shows %q:\n%s", no, v)
		}
	}
	if !strings.Contains(v, "more5 ") || !strings.Contains(v, "more59") {
		t.Errorf("the filter hides matching lines:\n%s", v)
	}
	// Search within what is shown.
	h.press("/")
	h.typeText("9")
	h.press("enter")
	if got := h.currentMatch(); got != "more59" || !strings.Contains(h.plainView(), "/9 1/1") {
		t.Errorf("search in the filtered lines: current %q\n%s", got, h.plainView())
	}
	// New lines: the matching one shows, the other does not.
	lp := h.m.top().(*logsPane)
	lp.apply(logBatchMsg{to: lp, gen: lp.gen, lines: []string{"more500 new", "other new"}, ended: true})
	h.press("G")
	v = h.plainView()
	if !strings.Contains(v, "more500 new") || strings.Contains(v, "other new") || !strings.Contains(v, "12 of 102 lines") {
		t.Errorf("new lines are not filtered:\n%s", v)
	}
	// Nothing matching says so.
	h.press("esc") // the search first
	h.press("&")
	h.typeText("x")
	if v := h.plainView(); !strings.Contains(v, "no line matches &more5x  (esc clears the filter)") {
		t.Errorf("an empty filter result is not explained:\n%s", v)
	}
	h.press("enter", "esc")
	if v := h.plainView(); strings.Contains(v, "&more5") || !strings.Contains(v, "more99") {
		t.Errorf("esc did not clear the filter:\n%s", v)
	}
	if _, ok := h.m.top().(*logsPane); !ok {
		t.Error("esc left the pane instead of clearing the filter")
	}
}

// The indexes forget the lines the ring lets go, so a long session stays bounded and
// positions stay on held lines.
func TestLogsFilterFollowsTheRing(t *testing.T) {
	src, _ := timelineFixture()
	src.logLines = []string{"keep 0"}
	h := openLogs(t, src)
	lp := h.m.top().(*logsPane)
	lp.ring = newLogRing(10)
	lp.setQuery("keep")
	lp.filter.set("keep")
	lp.reindex()
	for i := range 5 {
		lp.apply(logBatchMsg{to: lp, gen: lp.gen, lines: []string{fmt.Sprintf("keep %d", i+1), "drop", "drop"}})
	}
	if lp.shown.len() != 3 || lp.hits.len() != 3 || lp.shown.at(0) < lp.ring.start() {
		t.Errorf("after the ring wrapped: shown %v hits %v, ring from %d", lp.shown.seqs, lp.hits.seqs, lp.ring.start())
	}
	if v := h.plainView(); !strings.Contains(v, "keep 5") || strings.Contains(v, "drop") || !strings.Contains(v, "3 of 10 lines") {
		t.Errorf("filtered view after the ring wrapped:\n%s", v)
	}
}
