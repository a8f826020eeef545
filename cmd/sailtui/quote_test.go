package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sailtui/sailtui/engine"
)

// Terminal-driving text in hostile data: OSC 52 (writes the operator's clipboard), a title
// change, a screen clear, a C1 CSI, and a bidi override and isolate.
const (
	osc52   = "\x1b]52;c;cHduZWQ=\x07"
	retitle = "\x1b]0;pwned\x1b\\"
	clear2J = "\x1b[2J"
	c1CSI   = "\u009b2J"
	rlo     = "\u202e"
	isolate = "\u2066"
)

// inert fails t when out could drive or reorder a terminal: an ESC, a BEL, a C1 control, a
// bidi embedding, override or isolate, or bytes that are not UTF-8 (a lone 0x9b is a CSI to
// an 8-bit terminal).
func inert(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not UTF-8: %q", what, out)
	}
	bad := func(r rune) bool {
		return r == 0x1b || r == 0x07 || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
	}
	if i := strings.IndexFunc(out, bad); i >= 0 {
		t.Errorf("%s: raw control or bidi character at byte %d of %q", what, i, out)
	}
}

// Names, owners, labels, a container's directory and command, and what a container writes
// reach human output quoted: nothing stored or written by a project drives the operator's
// terminal. Data stored before input was checked (written to the store directly here) is
// quoted as well, and JSON keeps it exact.
func TestNoRawControlSequences(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("project", "create", "shop")
	var snap snapshotRow
	c.json(&snap, "snapshot", "create", "shop", "--label", "plain")

	// What input refuses now, as old data: written to the store directly.
	evilName := "evil " + osc52 + rlo + "gnp.exe"
	// The owner and the label hold bidi characters only, which are no controls to Go's unicode.
	evilOwner := "mallory" + isolate + "x"
	evilReason := "start failed: web: it exited " + retitle + clear2J + c1CSI
	evilLabel := "release " + rlo + "v2"
	func() {
		p, err := openEngine(context.Background(), testConfig(c.state), slog.New(slog.DiscardHandler))
		must(t, err)
		defer p.close()
		ctx := t.Context()
		now := time.Now()
		must(t, p.store.CreateProject(ctx, engine.Project{ID: "00000000-0000-4000-8000-00000000e411", Slug: "evil",
			Name: evilName, Owner: evilOwner, Status: engine.StatusActive, StatusReason: evilReason,
			LastActivity: now, CreatedAt: now, UpdatedAt: now}, nil, nil))
		s, err := p.eng.Snapshot(ctx, "shop", snap.ID)
		must(t, err)
		s.Label = evilLabel
		must(t, p.store.UpdateSnapshot(ctx, s, engine.Hold{}))
	}()

	// A container of the project's own making: its directory and command hold sequences (input
	// takes them: a directory is any path inside the project), and what it writes does too.
	dir := "we" + osc52 + "b"
	say := `printf 'boom \033]52;c;cHduZWQ=\007 \302\233 2J \342\200\256 tail\n'; exit 3`
	added := c.run("container", "add", "shop", "web", "--dir", dir, "--mkdir", "--command", say)
	if added.code != 0 {
		t.Fatalf("container add: exit %d: %s", added.code, added.stderr)
	}
	inert(t, "container add", added.stdout+added.stderr)
	if !strings.Contains(added.stdout, `\x1b]52`) {
		t.Errorf("container add does not show the directory quoted: %q", added.stdout)
	}

	start := c.run("project", "start", "shop")
	if start.code == 0 {
		t.Fatalf("start of a container that exits 3 succeeded: %s", start.stdout)
	}
	inert(t, "failed start", start.stdout+start.stderr)
	// The log line is there, quoted, beside plain lines that stay as they are.
	if !strings.Contains(start.stderr, `boom \x1b]52;c;cHduZWQ=\a`) || !strings.Contains(start.stderr, "its last log lines:\n") {
		t.Errorf("failed start does not quote the container's line: %q", start.stderr)
	}

	for _, tc := range []struct {
		args []string
		// shown: quoted, not dropped; the text is still there to read.
		shown []string
	}{
		{[]string{"projects", "ls"}, []string{`"evil \x1b]52;c;cHduZWQ=\a\u202egnp.exe"`, `"mallory\u2066x"`}},
		{[]string{"project", "describe", "shop"}, []string{`\x1b]52`}},
		{[]string{"snapshot", "ls", "shop"}, []string{`"release \u202ev2"`}},
		{[]string{"snapshot", "ls", "shop", "--all"}, []string{`"release \u202ev2"`}},
		{[]string{"snapshot", "rm", "shop", snap.ID, "--yes"}, []string{`"release \u202ev2"`}},
		{[]string{"snapshot", "undelete", "shop", snap.ID}, []string{`"release \u202ev2"`}},
	} {
		r := c.run(tc.args...)
		what := strings.Join(tc.args, " ")
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", what, r.code, r.stderr)
		}
		inert(t, what, r.stdout+r.stderr)
		for _, w := range tc.shown {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: %q does not show %s", what, r.stdout, w)
			}
		}
	}

	// JSON is the exact data.
	var rows []projectRow
	c.json(&rows, "projects", "ls")
	found := false
	for _, r := range rows {
		if r.Slug == "evil" {
			found = r.Name == evilName && r.Owner == evilOwner && r.StatusReason == evilReason
		}
	}
	if !found {
		t.Errorf("projects ls -o json does not carry the exact name and owner: %+v", rows)
	}
	var snaps []snapshotRow
	c.json(&snaps, "snapshot", "ls", "shop")
	if len(snaps) != 1 || snaps[0].Label != evilLabel {
		t.Errorf("snapshot ls -o json: %+v, want the label %q", snaps, evilLabel)
	}
}
