package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// hostile is text that would drive or reorder a terminal: OSC 52 (write the clipboard), a title
// change, a clear, a C1 CSI, DEL, a newline, and the bidi overrides and isolates.
var hostile = map[string]string{
	"OSC 52":   "\x1b]52;c;c2VjcmV0\x07shop",
	"title":    "shop\x1b]0;pwned\x1b\\",
	"clear":    "shop\x1b[2J",
	"C1 CSI":   "shop\u009b2J",
	"DEL":      "shop\x7f",
	"newline":  "shop\nfake row",
	"tab":      "shop\tx",
	"RLO":      "shop\u202egnp.exe",
	"LRE":      "shop\u202a",
	"isolate":  "shop\u2066x\u2069",
	"NUL":      "shop\x00",
	"bad UTF8": "shop\xff",
}

// A project's name and owner and a snapshot's label are refused at input when they hold a
// control or bidi character or are too long, with an error that says what is wrong and what to
// do, and nothing is stored.
func TestFreeTextRefused(t *testing.T) {
	pt := openTest(t, t.TempDir(), "test")
	ctx := t.Context()
	eng := pt.eng
	refused := func(what string, err error, words ...string) {
		t.Helper()
		if !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("%s: %v; want ErrBadInput", what, err)
			return
		}
		for _, w := range words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", what, err, w)
			}
		}
		// The error itself is safe to print: the value in it is quoted.
		if strings.ContainsFunc(err.Error(), engine.Unprintable) {
			t.Errorf("%s: the error %q carries the raw character", what, err)
		}
	}
	for name, s := range hostile {
		want := []string{"control or bidi character", "printable text only"}
		if name == "bad UTF8" {
			want = []string{"not valid UTF-8"}
		}
		_, err := eng.CreateProject(ctx, engine.CreateRequest{Name: s})
		refused("name "+name, err, append(want, "project name")...)
		_, err = eng.CreateProject(ctx, engine.CreateRequest{Name: "ok " + name, Owner: s})
		refused("owner "+name, err, append(want, "owner")...)
	}
	_, err := eng.CreateProject(ctx, engine.CreateRequest{Name: strings.Repeat("x", 100_000)})
	refused("long name", err, "project name is 100000 characters long", "at most 200")
	_, err = eng.CreateProject(ctx, engine.CreateRequest{Name: "shop", Owner: strings.Repeat("o", 65)})
	refused("long owner", err, "owner is 65 characters long", "at most 64")
	// The owner names a directory of the snapshot store, escaped: 50 four-byte letters are 600
	// bytes there, more than a file name can hold.
	_, err = eng.CreateProject(ctx, engine.CreateRequest{Name: "shop", Owner: strings.Repeat("😀", 50)})
	refused("owner too long escaped", err, "600 bytes", "use a shorter owner")
	if ps, err := eng.ListProjects(ctx, engine.ProjectFilter{IncludeDeleted: true}); err != nil || len(ps) != 0 {
		t.Fatalf("refused creations left projects: %+v, %v", ps, err)
	}

	// At the limits, and with printable text beyond ASCII, all is taken as given, and its
	// snapshots are stored: the owner's 42 two-byte letters are 252 bytes escaped.
	long := strings.Repeat("a", engine.MaxNameLength-3) + "é 世"
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: long, Owner: strings.Repeat("ö", 42)})
	must(t, err)
	if p.Name != long {
		t.Errorf("name stored as %q", p.Name)
	}
	snap, err := eng.CreateSnapshot(ctx, p.Slug, "before the demo — ünïcode 世界")
	must(t, err)
	for name, s := range hostile {
		want := "control or bidi character"
		if name == "bad UTF8" {
			want = "not valid UTF-8"
		}
		_, err := eng.CreateSnapshot(ctx, p.Slug, s)
		refused("snapshot label "+name, err, "label", want)
		_, err = eng.RelabelSnapshot(ctx, p.Slug, snap.ID, s)
		refused("relabel "+name, err, "label", want)
	}
	_, err = eng.RelabelSnapshot(ctx, p.Slug, snap.ID, strings.Repeat("l", engine.MaxLabelLength+1))
	refused("long label", err, "at most 120")
	snaps, err := eng.Snapshots(ctx, p.Slug, true)
	must(t, err)
	if len(snaps) != 1 || snaps[0].Label != snap.Label {
		t.Errorf("refused snapshots and relabels changed the timeline: %+v", snaps)
	}
}
