package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/dirstore"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

type dirsUnder string

func (d dirsUnder) StorageDir(p engine.Project) string {
	return filepath.Join(string(d), "projects", p.ID)
}

type sandwichEnv struct {
	sw  *Sandwich
	p   engine.Project
	dir string
}

func newSandwichEnv(t *testing.T, nodes []node) *sandwichEnv {
	t.Helper()
	root := t.TempDir()
	env := &sandwichEnv{p: engine.Project{ID: "p1", Owner: "alice"}}
	store, err := dirstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dirs := dirsUnder(root)
	env.sw = NewSandwich(store, dirs, SandwichOptions{})
	env.dir = dirs.StorageDir(env.p)
	buildTree(t, env.dir, nodes)
	return env
}

func sampleNodes(seed uint64) []node {
	r := rand.New(rand.NewPCG(seed, 9))
	return []node{
		{path: "frontend/package.json", kind: 'f', data: []byte(`{"name":"app"}`)},
		{path: "frontend/src/App.tsx", kind: 'f', data: mixedContent(r, 8000)},
		{path: "frontend/node_modules/.bin/vite", kind: 'l', link: "../vite/bin/vite.js"},
		{path: "frontend/node_modules/vite/bin/vite.js", kind: 'f', data: mixedContent(r, 3000), mode: 0o755},
		{path: "backend/main.py", kind: 'f', data: mixedContent(r, 2000)},
		{path: "backend/data", kind: 'd'},
		{path: "TESSLATE.md", kind: 'f', data: []byte("## Development Server\n")},
	}
}

func (e *sandwichEnv) create(t *testing.T, id string) engine.Snapshot {
	t.Helper()
	snap, err := e.sw.Create(context.Background(), e.p, engine.Snapshot{ID: id, ProjectID: e.p.ID, Owner: e.p.Owner, Type: engine.SnapshotManual})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return snap
}

// siblings lists the storage directory's parent, to catch temporary trees left behind.
func siblings(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestSandwichKeys(t *testing.T) {
	sw := NewSandwich(nil, dirsUnder("/x"), SandwichOptions{Prefix: "/tenant/archives/"})
	cases := []struct{ owner, project, snap, want string }{
		{"alice", "p1", "s1", "tenant/archives/alice/p1/s1.tar.zst"},
		{"", "p1", "s1", "tenant/archives/_/p1/s1.tar.zst"},
		{"a/b", "p1", "s1", "tenant/archives/a%2Fb/p1/s1.tar.zst"},
		{"bob@example.com", "p 1", "s1", "tenant/archives/bob@example.com/p%201/s1.tar.zst"},
	}
	for _, c := range cases {
		got, err := sw.Key(c.owner, c.project, c.snap)
		if err != nil || got != c.want {
			t.Errorf("Key(%q, %q, %q) = %q, %v; want %q", c.owner, c.project, c.snap, got, err, c.want)
		}
	}
	for _, bad := range [][3]string{{"..", "p", "s"}, {"o", "", "s"}, {"o", "p", "."}} {
		if _, err := sw.Key(bad[0], bad[1], bad[2]); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("Key(%q) = %v, want ErrBadInput", bad, err)
		}
	}
	if got, _ := NewSandwich(nil, nil, SandwichOptions{}).Key("o", "p", "s"); got != "projects/o/p/s.tar.zst" {
		t.Errorf("default prefix key = %q", got)
	}
	if sw.Name() != "archive" {
		t.Errorf("Name() = %q", sw.Name())
	}
}

func TestSandwichRemovesStaleRestoreDirs(t *testing.T) {
	env := newSandwichEnv(t, sampleNodes(6))
	snap := env.create(t, "s1")
	parent := filepath.Dir(env.dir)
	stale := filepath.Join(parent, ".p1"+restoreTag+"12345")
	staleOld := filepath.Join(parent, ".p1"+restoreTag+"999-old")
	other := filepath.Join(parent, ".p1"+restoreTag+"x-not-ours")
	for _, d := range []string{stale, staleOld, other} {
		buildTree(t, d, []node{{path: "leftover", kind: 'f'}})
	}
	if err := env.sw.Restore(context.Background(), env.p, snap); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{stale, staleOld} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not cleaned up: %v", d, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("%s removed though it is not a restore leftover: %v", other, err)
	}
}

func TestSwapIn(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		for _, missing := range []bool{false, true} {
			t.Run(fmt.Sprintf("fallback=%v,missing=%v", fallback, missing), func(t *testing.T) {
				if fallback {
					saved := exchange
					exchange = func(o, n string) error { return &os.LinkError{Op: "test", Old: o, New: n, Err: errors.ErrUnsupported} }
					defer func() { exchange = saved }()
				}
				parent := t.TempDir()
				dir := filepath.Join(parent, "storage")
				tmp := filepath.Join(parent, ".storage"+restoreTag+"1")
				if !missing {
					buildTree(t, dir, []node{{path: "old", kind: 'f'}})
				}
				buildTree(t, tmp, []node{{path: "new", kind: 'f'}})
				if err := swapIn(tmp, dir); err != nil {
					t.Fatal(err)
				}
				got := scanTree(t, dir)
				if _, ok := got["new"]; !ok || len(got) != 2 {
					t.Errorf("after swap: %v", got)
				}
				if names := siblings(t, dir); len(names) != 1 {
					t.Errorf("left behind: %v", names)
				}
			})
		}
	}
}

// TestExtractWindowLimit checks that the window a stream asks for is capped before decoding
// starts: over the limit is bad input, at or under it extracts.
func TestExtractWindowLimit(t *testing.T) {
	tarball := makeTar(t, []tarEntry{reg("a", []byte("x"))})
	for _, tc := range []struct {
		name   string
		window int
		lim    Limits
		ok     bool
	}{
		{"16 MiB under the default", 24, Limits{}, true},
		{"256 MiB over the default", 28, Limits{}, false},
		{"16 MiB over the snapshot limit", 24, Limits{MaxWindow: SnapshotMaxWindow}, false},
		{"8 MiB at the snapshot limit", 23, Limits{MaxWindow: SnapshotMaxWindow}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := t.TempDir()
			_, err := Extract(context.Background(), bytes.NewReader(archivetest.WideWindow(t, tarball, tc.window)), target, tc.lim)
			if tc.ok && err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if !tc.ok {
				if !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "window") {
					t.Fatalf("Extract = %v, want ErrBadInput naming the window", err)
				}
				if _, err := os.Stat(filepath.Join(target, "a")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("an entry was extracted: %v", err)
				}
			}
		})
	}
}

// partDirs is dirsUnder with service volumes under volumes/<part>; a part whose directory is
// missing (and create is false) has no volume, as a service never started.
type partDirs struct{ dirsUnder }

func (d partDirs) PartDir(_ context.Context, p engine.Project, part string, create bool) (string, error) {
	dir := filepath.Join(string(d.dirsUnder), "volumes", p.ID, part)
	if _, err := os.Stat(dir); err != nil {
		if !create {
			return "", fmt.Errorf("no volume for %s: %w", part, engine.ErrNotFound)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// A snapshot holds every service volume as a part of its own; a service that has no volume yet
// (never started) is recorded as absent instead of failing the snapshot, which would keep the
// project from ever hibernating, and a restore makes nothing for it. A part's restore replaces
// its volume only with the rest: a damaged part leaves every volume as it was.
func TestSandwichParts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store, err := dirstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dirs := partDirs{dirsUnder(root)}
	sw := NewSandwich(store, dirs, SandwichOptions{})
	p := engine.Project{ID: "p1", Owner: "alice"}
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := dirs.StorageDir(p)
	db := filepath.Join(root, "volumes", p.ID, "db")
	write(filepath.Join(files, "app.txt"), "v1")
	write(filepath.Join(db, "table"), "rows v1")
	snap := engine.Snapshot{ID: "s1", ProjectID: p.ID, Owner: p.Owner, Type: engine.SnapshotManual,
		Parts: []engine.SnapshotPart{{Name: "db"}, {Name: "cache"}}}
	made, err := sw.Create(ctx, p, snap)
	if err != nil {
		t.Fatal(err)
	}
	if pt := made.Parts[0]; pt.Absent || pt.SHA256 == "" || pt.Location == "" || pt.UnpackedBytes != 7 {
		t.Fatalf("db part: %+v", pt)
	}
	if pt := made.Parts[1]; !pt.Absent || pt.Location != "" {
		t.Fatalf("cache part (no volume): %+v", pt)
	}
	if snap.Parts[0].SHA256 != "" {
		t.Fatal("Create wrote into the parts of the snapshot it was given")
	}
	if _, err := sw.WaitReady(ctx, made); err != nil {
		t.Fatal(err)
	}

	write(filepath.Join(files, "app.txt"), "v2")
	write(filepath.Join(db, "table"), "rows v2")
	if err := sw.Restore(ctx, p, made); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{filepath.Join(files, "app.txt"): "v1", filepath.Join(db, "table"): "rows v1"} {
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("%s after restore: %q, want %q", path, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "volumes", p.ID, "cache")); !os.IsNotExist(err) {
		t.Errorf("restore made a volume for an absent part: %v", err)
	}

	// A damaged part: nothing is swapped in, the files neither.
	write(filepath.Join(files, "app.txt"), "v3")
	bad := made
	bad.Parts = append([]engine.SnapshotPart(nil), made.Parts...)
	bad.Parts[0].SHA256 = strings.Repeat("0", 64)
	if err := sw.Restore(ctx, p, bad); !errors.Is(err, engine.ErrChecksum) {
		t.Fatalf("restore with a damaged part: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(files, "app.txt")); string(got) != "v3" {
		t.Errorf("a failed restore changed the files: %q", got)
	}
	if err := sw.Delete(ctx, made); err != nil {
		t.Fatal(err)
	}
	if objs, _ := store.List(ctx, ""); len(objs) != 0 {
		t.Errorf("objects left after delete: %v", objs)
	}
}
