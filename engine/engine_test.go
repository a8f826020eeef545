package engine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Shop Front":             "shop-front",
		"  --Hello__World!! ":    "hello-world",
		"Ünïcode":                "n-code",
		"!!!":                    "",
		strings.Repeat("ab", 40): strings.Repeat("ab", 20),
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCleanDir(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{"", ".", false}, {"web", "web", false}, {"a/b/./c/", "a/b/c", false},
		// One rule everywhere: a .. is refused even where it would cancel out.
		{"a/b/../c", "", true},
		{"../x", "", true}, {"/etc", "", true}, {"a/../../x", "", true}, {"a\x00b", "", true}, {`a\b`, "", true},
	} {
		got, err := CleanDir(tc.in)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("CleanDir(%q) = %q, %v", tc.in, got, err)
		}
		if tc.bad && !errors.Is(err, ErrBadPath) {
			t.Errorf("CleanDir(%q): %v is not a bad-path error", tc.in, err)
		}
	}
}

func TestStartOrder(t *testing.T) {
	cs := []Container{{Name: "web"}, {Name: "api"}, {Name: "db"}, {Name: "worker"}}
	conns := []Connection{{From: "web", To: "api"}, {From: "api", To: "db"}, {From: "worker", To: "db"}}
	pos := map[string]int{}
	for i, c := range startOrder(cs, conns) {
		pos[c.Name] = i
	}
	if len(pos) != len(cs) {
		t.Fatalf("start order lost containers: %v", pos)
	}
	for _, c := range conns {
		if pos[c.To] > pos[c.From] {
			t.Errorf("%s starts before %s, which it depends on: %v", c.From, c.To, pos)
		}
	}
	// A cycle still starts everything, once.
	cyc := startOrder(cs[:2], []Connection{{From: "web", To: "api"}, {From: "api", To: "web"}})
	if len(cyc) != 2 {
		t.Fatalf("cycle: %v", cyc)
	}
}

func TestSnapshotIDsAreUniqueAndStable(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	a := snapshotID(SnapshotManual, newID(), at)
	b := snapshotID(SnapshotManual, newID(), at)
	if a == b {
		t.Fatalf("two operations in the same second got one name %s", a)
	}
	op := newID()
	first, again := snapshotID(SnapshotHibernation, op, at), snapshotID(SnapshotHibernation, op, at.Add(0))
	if first != again {
		t.Fatal("a resumed operation must find the snapshot name it started with")
	}
	if !strings.HasPrefix(a, "manual-20261129-100000-") {
		t.Fatalf("name %s", a)
	}
}

func TestRedaction(t *testing.T) {
	raw := "https://bob:s3cret@git.example.com/team/tpl.git"
	if got := RedactURL(raw); strings.Contains(got, "s3cret") || !strings.Contains(got, "git.example.com") {
		t.Fatalf("RedactURL: %s", got)
	}
	msg := "fatal: unable to access '" + raw + "': auth failed for s3cret"
	if got := redactIn(msg, raw); strings.Contains(got, "s3cret") {
		t.Fatalf("redactIn left the secret: %s", got)
	}
}

func TestNewRefusesMissingParts(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("missing parts: %v", err)
	}
}
