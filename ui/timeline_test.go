package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// openTimeline selects storefront and opens its timeline with t.
func openTimeline(t *testing.T, src *fakeSource, opts Options) *harness {
	t.Helper()
	h := newHarness(t, src, opts, true).start(100, 30)
	h.press("/")
	h.typeText("storefront")
	h.press("enter", "t")
	if v := h.plainView(); !strings.Contains(v, "Projects › storefront › Timeline") {
		t.Fatalf("t did not open the timeline:\n%s", v)
	}
	return h
}

func wantCalls(t *testing.T, src *fakeSource, want ...string) {
	t.Helper()
	if got := src.callLog(); !slices.Equal(got, want) {
		t.Fatalf("engine calls %q, want %q", got, want)
	}
}

func TestTimelineShowsSnapshots(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	v := h.plainView()
	for _, want := range []string{"LABEL", "TYPE", "STATE", "CREATED", "SIZE",
		"before the upgrade", "manual", "ready", "03-01 11:45", "15m ago", "2.5 MiB",
		"hibernation", "manual 1/5", "2 snapshots"} {
		if !strings.Contains(v, want) {
			t.Errorf("timeline lacks %q:\n%s", want, v)
		}
	}
	if !strings.Contains(h.selectedLine(), "before the upgrade") {
		t.Errorf("the newest snapshot is not selected: %q", h.selectedLine())
	}
}

func TestTimelineCreateWithLabel(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	h.press("c")
	v := h.plainView()
	if !strings.Contains(v, "New snapshot of storefront") || !strings.Contains(v, "slot 2") {
		t.Fatalf("no label prompt:\n%s", v)
	}
	// y and n are letters in a prompt; q does not quit.
	h.typeText("try new query")
	if h.m.dialog == nil {
		t.Fatal("typing closed the prompt")
	}
	h.press("enter")
	wantCalls(t, src, "snapshot p1 try new query")
	if v := h.plainView(); !strings.Contains(v, "snapshot “try new query” of storefront is ready") {
		t.Errorf("no report of the new snapshot:\n%s", v)
	}
	h.flushReload()
	if v := h.plainView(); !strings.Contains(v, "try new query") || !strings.Contains(v, "manual 2/5") {
		t.Errorf("the timeline does not show the new snapshot:\n%s", v)
	}
}

func TestTimelineCreateEscCancels(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	h.press("c")
	h.typeText("nope")
	h.press("esc")
	if h.m.dialog != nil {
		t.Fatal("esc left the prompt open")
	}
	wantCalls(t, src)
	if v := h.plainView(); !strings.Contains(v, "Timeline") {
		t.Errorf("esc in the prompt also left the timeline:\n%s", v)
	}
}

func TestRestoreConfirmNamesWhatIsReplaced(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	h.press("r")
	v := h.plainView()
	for _, want := range []string{"Restore storefront?", "“before the upgrade”", "manual, ready, 2.5 MiB",
		"replaces", "all current files of storefront", "2/2 containers", "safety snapshot", "[ Cancel ]", "Restore"} {
		if !strings.Contains(v, want) {
			t.Errorf("restore dialog lacks %q:\n%s", want, v)
		}
	}
	// Cancel has the focus: enter cancels.
	h.press("enter")
	if h.m.dialog != nil {
		t.Fatal("enter did not close the dialog")
	}
	wantCalls(t, src)

	// n and esc cancel too.
	for _, k := range []string{"n", "esc"} {
		h.press("r", k)
		if h.m.dialog != nil {
			t.Fatalf("%s did not close the dialog", k)
		}
	}
	wantCalls(t, src)
	if !strings.Contains(h.plainView(), "Timeline") {
		t.Fatal("esc in the dialog also left the timeline")
	}

	// tab moves the focus to Restore; enter then presses it.
	h.press("r", "tab")
	if v := h.plainView(); !strings.Contains(v, "[ Restore ]") {
		t.Fatalf("tab did not focus Restore:\n%s", v)
	}
	h.press("enter")
	wantCalls(t, src, "restore p1 manual-20260301-114500-0123456789ab")
	v = h.plainView()
	if !strings.Contains(v, "restored storefront to “before the upgrade”") || !strings.Contains(v, "undo point: safety snapshot safety-001") {
		t.Errorf("restore result not shown:\n%s", v)
	}
	h.flushReload()
	v = h.plainView()
	if !strings.Contains(v, "before restoring") || !strings.Contains(v, "[undo] before restoring") {
		t.Errorf("the safety snapshot is not pointed out:\n%s", v)
	}
}

func TestRestoreWithY(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	h.press("j", "r", "y") // the hibernation snapshot
	wantCalls(t, src, "restore p1 hibernation-20260228-120000-bbbbbbbbbbbb")
}

func TestRestoreHibernatedProject(t *testing.T) {
	src, _ := timelineFixture()
	h := newHarness(t, src, Options{}, true).start(100, 30)
	h.press("/")
	h.typeText("notes")
	h.press("enter", "t", "r")
	v := h.plainView()
	if !strings.Contains(v, "the hibernated state of notes-api") || !strings.Contains(v, "hibernation snapshot stays") {
		t.Errorf("restore over a hibernated project explains the wrong thing:\n%s", v)
	}
	h.press("esc")
	// Its wake point cannot be deleted while it sleeps.
	h.press("x")
	if h.m.dialog != nil {
		t.Fatal("delete offered for the snapshot a hibernated project wakes from")
	}
	if v := h.plainView(); !strings.Contains(v, "delete: notes-api wakes from it") {
		t.Errorf("no reason given:\n%s", v)
	}
	// Nor can a snapshot be taken of it.
	h.press("c")
	if v := h.plainView(); h.m.dialog != nil || !strings.Contains(v, "create: notes-api is hibernated; wake it first") {
		t.Errorf("create on a hibernated project:\n%s", v)
	}
	wantCalls(t, src)
}

func TestTimelineFullOffersReplace(t *testing.T) {
	src, _ := timelineFixture()
	fillTimeline(src, "p1")
	h := openTimeline(t, src, Options{})
	if v := h.plainView(); !strings.Contains(v, "manual 5/5") {
		t.Fatalf("full timeline not counted:\n%s", v)
	}
	h.press("c")
	if v := h.plainView(); !strings.Contains(v, "The timeline is full") {
		t.Errorf("prompt does not warn that the timeline is full:\n%s", v)
	}
	h.typeText("fresh")
	h.press("enter")
	v := h.plainView()
	for _, want := range []string{"Timeline full", "Replace one with the new", "“fresh”", "checkpoint 1", "[ Cancel ]"} {
		if !strings.Contains(v, want) {
			t.Errorf("replace offer lacks %q:\n%s", want, v)
		}
	}
	// The oldest is proposed; Cancel still has the focus.
	if sel := selectedIn(v); !strings.Contains(sel, "checkpoint 1") {
		t.Errorf("proposed %q, want the oldest", sel)
	}
	h.press("enter")
	wantCalls(t, src)

	h.press("c")
	h.typeText("fresh")
	h.press("enter", "k", "y") // one newer than the oldest
	wantCalls(t, src, "replace p1 manual-20260301-100000-000000000003 fresh")
	if v := h.plainView(); !strings.Contains(v, "snapshot “fresh” of storefront is ready; manual-20260301-100000-000000000003 was deleted") {
		t.Errorf("replace not reported:\n%s", v)
	}
}

// selectedIn is the selected line of the list inside a dialog.
func selectedIn(v string) string {
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, "│ "+selMarker) {
			return l
		}
	}
	return ""
}

// The timeline filled up after it was read (another console, the CLI): the engine's
// ErrTimelineFull turns into the same offer.
func TestTimelineFullFromEngine(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	fillTimeline(src, "p1")
	h.press("c")
	h.typeText("late")
	h.press("enter")
	wantCalls(t, src, "snapshot p1 late")
	if v := h.plainView(); !strings.Contains(v, "Timeline full") {
		t.Fatalf("ErrTimelineFull did not offer a replacement:\n%s", v)
	}
}

func TestRelabelAndDelete(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	h.press("l")
	if v := h.plainView(); !strings.Contains(v, "Relabel snapshot") || !strings.Contains(v, "> before the upgrade") {
		t.Fatalf("relabel prompt not prefilled:\n%s", v)
	}
	for range "before the upgrade" {
		h.press("backspace")
	}
	h.typeText("v1.2")
	h.press("enter")
	h.press("x")
	v := h.plainView()
	if !strings.Contains(v, "Delete snapshot?") || !strings.Contains(v, "purged after 30 days") {
		t.Fatalf("no delete confirmation:\n%s", v)
	}
	h.press("esc")
	h.press("x", "y")
	wantCalls(t, src, "relabel p1 manual-20260301-114500-0123456789ab v1.2", "delete p1 manual-20260301-114500-0123456789ab")
	h.flushReload()
	if v := h.plainView(); strings.Contains(v, "v1.2") || !strings.Contains(v, "manual 0/5") {
		t.Errorf("deleted snapshot still listed:\n%s", v)
	}
}

func TestActionErrorInStatusLine(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	src.opErr = fmt.Errorf("restore storefront: %w", engine.ErrBusy)
	h.press("r", "y")
	v := h.plainView()
	if !strings.Contains(v, "✗") || !strings.Contains(v, "busy: another operation holds the project") {
		t.Errorf("the engine's error is not in the status line:\n%s", v)
	}
	if lines := strings.Split(h.view(), "\n"); len(lines) != 30 {
		t.Errorf("an error changed the layout: %d lines", len(lines))
	}
}

func TestTimelineLoadError(t *testing.T) {
	src, _ := timelineFixture()
	h := newHarness(t, src, Options{}, true).start(100, 30)
	src.mu.Lock()
	src.projects = src.projects[1:]
	src.mu.Unlock()
	h.press("j", "t") // storefront is gone now
	if v := h.plainView(); !strings.Contains(v, "not found") {
		t.Errorf("load error not shown:\n%s", v)
	}
}

// A snapshot of a project with services holds their volumes too: its size is the total, and
// the dialogs say what it holds.
func TestTimelineShowsSnapshotParts(t *testing.T) {
	src, p := timelineFixture()
	src.snapshots[p.ID][0].Parts = []engine.SnapshotPart{{Name: "db", SizeBytes: 1_048_576, SHA256: "x"}}
	h := openTimeline(t, src, Options{})
	v := h.plainView()
	if !strings.Contains(v, "3.5 MiB") {
		t.Errorf("timeline does not show the total with its part:\n%s", v)
	}
	h.press("r")
	if v := strings.Join(strings.Fields(strings.ReplaceAll(h.plainView(), "│", "")), " "); !strings.Contains(v, "holding files 2.5 MiB + db 1.0 MiB") {
		t.Errorf("the restore dialog does not say what the snapshot holds:\n%s", v)
	}
}

// a shows the deleted snapshots (and hides them again); u brings the selected one back.
func TestTimelineShowDeletedAndUndelete(t *testing.T) {
	src, _ := timelineFixture()
	h := openTimeline(t, src, Options{})
	const id = "manual-20260301-114500-0123456789ab"
	h.press("x", "y")
	h.flushReload()
	if v := h.plainView(); strings.Contains(v, "before the upgrade") {
		t.Fatalf("deleted snapshot listed before a:\n%s", v)
	}
	h.press("a")
	h.flushReload()
	h.press("k") // the selection stayed on the row it was on
	v := h.plainView()
	if !strings.Contains(v, "before the upgrade") || !strings.Contains(v, "u undelete") || !strings.Contains(h.selectedLine(), "deleted") || !strings.Contains(v, "deleted shown") || !strings.Contains(v, "a hide deleted") {
		t.Fatalf("a did not show the deleted snapshot:\n%s", v)
	}
	h.press("r")
	if v := h.plainView(); h.m.dialog != nil || !strings.Contains(v, "u brings it back") {
		t.Fatalf("r on a deleted snapshot:\n%s", v)
	}
	h.press("u")
	h.flushReload()
	wantCalls(t, src, "delete p1 "+id, "undelete p1 "+id)
	if v := h.plainView(); !strings.Contains(h.selectedLine(), "ready") || !strings.Contains(v, "manual 1/5") || !strings.Contains(v, "is back in the timeline") {
		t.Fatalf("undeleted snapshot not back:\n%s", v)
	}
	h.press("u")
	if v := h.plainView(); !strings.Contains(v, "undelete: it is not deleted") {
		t.Errorf("u on a ready snapshot:\n%s", v)
	}
	h.press("a")
	h.flushReload()
	if v := h.plainView(); strings.Contains(v, "deleted shown") || !strings.Contains(v, "a show deleted") {
		t.Errorf("a did not hide the deleted ones again:\n%s", v)
	}
	wantCalls(t, src, "delete p1 "+id, "undelete p1 "+id)
}
