package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// inertView fails t when the screen holds what could drive or reorder the terminal: an ESC (the
// harness draws without colour, so none is the console's own), a BEL, a C1 control, or a bidi
// embedding, override or isolate.
func inertView(t *testing.T, what string, h *harness) {
	t.Helper()
	v := h.view()
	bad := func(r rune) bool {
		return r == 0x1b || r == 0x07 || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
	}
	if i := strings.IndexFunc(v, bad); i >= 0 {
		t.Errorf("%s: raw control or bidi character at byte %d:\n%q", what, i, v)
	}
}

// Names, owners and labels stored before input was checked reach the console's screen with
// their control and bidi characters blanked: in the projects table, the timeline, the replace
// offer and the relabel prompt.
func TestHostileTextIsInert(t *testing.T) {
	src, _ := timelineFixture()
	fillTimeline(src, "p1")
	src.setProject("p1", func(p *engine.Project) {
		p.Name = "Store\u202efront\x1b]52;c;cHduZWQ=\x07"
		p.Owner = "demo\u2066x\u2069"
	})
	for i := range src.snapshots["p1"] {
		// Bidi only on most (no control to Go's unicode), a C1 CSI on one.
		src.snapshots["p1"][i].Label = fmt.Sprintf("checkpoint %d \u202e%s", engine.MaxManualSnapshots-i, "evil")
	}
	src.snapshots["p1"][0].Label = "checkpoint 5 \u009b2J\u202a"

	h := newHarness(t, src, Options{}, true).start(160, 30)
	inertView(t, "projects", h)
	// (The console shows no owner; the filter searches it.)
	if v := h.plainView(); !strings.Contains(v, "Store front ]52;c;cHduZWQ= ") {
		t.Errorf("the name is not shown, blanked:\n%s", v)
	}
	h.press("/")
	h.typeText("storefront")
	h.press("enter", "t")
	inertView(t, "timeline", h)
	if v := h.plainView(); !strings.Contains(v, "checkpoint 1  evil") {
		t.Errorf("the labels are not shown, blanked:\n%s", v)
	}
	h.press("c")
	h.typeText("fresh")
	h.press("enter")
	if v := h.plainView(); !strings.Contains(v, "Replace one with the new") {
		t.Fatalf("no replace offer:\n%s", v)
	}
	inertView(t, "replace offer", h)
	h.press("esc")
	h.press("l")
	if v := h.plainView(); !strings.Contains(v, "Relabel snapshot") {
		t.Fatalf("no relabel prompt:\n%s", v)
	}
	inertView(t, "relabel prompt", h)
}
