package ui

import (
	"strings"
	"testing"
)

// H opens the selected project's history (issue 35, item 5): the warning, the activity line
// with its door, count and toucher, the operation with its outcome, newest first.
func TestHistoryPane(t *testing.T) {
	h, _ := projectsHarness(t, Options{ReadOnly: true})
	h.press("j", "H")
	v := h.plainView()
	for _, want := range []string{"Projects › storefront › History", "idle warning", "activity · files", "12 touches", "ide", "wake", "done", "3 lines"} {
		if !strings.Contains(v, want) {
			t.Errorf("history lacks %q:\n%s", want, v)
		}
	}
	if strings.Index(v, "idle warning") > strings.Index(v, "activity · files") || strings.Index(v, "activity · files") > strings.Index(v, "wake") {
		t.Errorf("history is not newest first:\n%s", v)
	}
	h.press("esc")
	h.runLine("history storefront")
	if v := h.plainView(); !strings.Contains(v, "storefront › History") {
		t.Errorf(":history storefront did not open it:\n%s", v)
	}
}

// K keeps the selected project alive for what the user types; the row then says until when,
// where "hibernates in" was. An empty answer ends the keep-alive. Read-only offers neither.
func TestKeepAliveKey(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	h.press("j", "K")
	if v := h.plainView(); h.m.dialog == nil || !strings.Contains(v, "Keep storefront alive") {
		t.Fatalf("no keep-alive prompt:\n%s", v)
	}
	h.press("backspace", "backspace")
	h.typeText("90m")
	h.press("enter")
	wantCalls(t, src, "keep-alive p1 1h30m0s")
	h.flushReload()
	if line := h.selectedLine(); !strings.Contains(line, "kept to ") {
		t.Errorf("the row does not say it is kept alive: %q", line)
	}
	h.press("K")
	h.press("enter") // the prompt starts empty while a keep-alive holds: enter ends it
	wantCalls(t, src, "keep-alive p1 1h30m0s", "cancel keep-alive p1")

	ro, rsrc := projectsHarness(t, Options{ReadOnly: true})
	ro.press("j", "K")
	if ro.m.dialog != nil {
		t.Error("read-only opened the keep-alive prompt")
	}
	wantCalls(t, rsrc)
}
