package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine"
)

// memStore is a minimal ObjectStore for these tests. It stores whatever Put read up to a clean
// EOF, so a Create that ended its stream early without an error would leave a truncated object.
type memStore struct {
	mu   sync.Mutex
	objs map[string][]byte
	// putErrAfter makes Put fail after reading that many bytes (0: never).
	putErrAfter int
}

func newMemStore() *memStore { return &memStore{objs: map[string][]byte{}} }

func (s *memStore) Put(ctx context.Context, key string, r io.Reader) (engine.ObjectInfo, error) {
	var buf bytes.Buffer
	chunk := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return engine.ObjectInfo{}, err
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if s.putErrAfter > 0 && buf.Len() > s.putErrAfter {
			return engine.ObjectInfo{}, errors.New("memstore: injected put failure")
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return engine.ObjectInfo{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[key] = buf.Bytes()
	return engine.ObjectInfo{Key: key, Size: int64(buf.Len()), ModTime: time.Now()}, nil
}

func (s *memStore) Get(_ context.Context, key string) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objs[key]
	if !ok {
		return nil, engine.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *memStore) Head(_ context.Context, key string) (engine.ObjectInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objs[key]
	if !ok {
		return engine.ObjectInfo{}, engine.ErrNotFound
	}
	return engine.ObjectInfo{Key: key, Size: int64(len(b))}, nil
}

func (s *memStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, key)
	return nil
}

func (s *memStore) List(_ context.Context, prefix string) ([]engine.ObjectInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []engine.ObjectInfo
	for k, b := range s.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, engine.ObjectInfo{Key: k, Size: int64(len(b))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (s *memStore) Describe() string { return "memory" }

func (s *memStore) mutate(key string, f func([]byte) []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[key] = f(bytes.Clone(s.objs[key]))
}

type dirsUnder string

func (d dirsUnder) StorageDir(p engine.Project) string {
	return filepath.Join(string(d), "projects", p.ID)
}

type sandwichEnv struct {
	store *memStore
	sw    *Sandwich
	p     engine.Project
	dir   string
}

func newSandwichEnv(t *testing.T, nodes []node) *sandwichEnv {
	t.Helper()
	root := t.TempDir()
	env := &sandwichEnv{store: newMemStore(), p: engine.Project{ID: "p1", Owner: "alice"}}
	dirs := dirsUnder(root)
	env.sw = NewSandwich(env.store, dirs, SandwichOptions{})
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

func TestSandwichRoundTrip(t *testing.T) {
	env := newSandwichEnv(t, sampleNodes(1))
	want := scanTree(t, env.dir)

	var mu sync.Mutex
	var reports []engine.Progress
	progress := func(p engine.Progress) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, p)
	}
	snap, err := env.sw.Create(engine.WithProgress(context.Background(), progress), env.p, engine.Snapshot{ID: "s1", ProjectID: "p1", Owner: "alice", Type: engine.SnapshotHibernation})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if snap.Location != "projects/alice/p1/s1.tar.zst" || snap.Backend != "archive" {
		t.Errorf("snapshot = %+v", snap)
	}
	obj := env.store.objs[snap.Location]
	sum := sha256.Sum256(obj)
	if snap.SizeBytes != int64(len(obj)) || snap.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("size/sha = %d/%s, object has %d/%x", snap.SizeBytes, snap.SHA256, len(obj), sum)
	}
	if len(reports) == 0 {
		t.Fatal("no progress reported")
	}
	last := reports[len(reports)-1]
	if last.Phase != "archive" || last.Op != engine.OpHibernate || last.ProjectID != "p1" || last.Done != last.Total || last.Total == 0 {
		t.Errorf("last progress = %+v", last)
	}

	ready, err := env.sw.WaitReady(context.Background(), snap)
	if err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if ready.Status != engine.SnapshotReady {
		t.Errorf("WaitReady status = %q", ready.Status)
	}

	// Change the project, then restore over it.
	if err := os.WriteFile(filepath.Join(env.dir, "frontend", "src", "App.tsx"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.dir, "new-file"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(env.dir, "backend")); err != nil {
		t.Fatal(err)
	}
	reports = nil
	if err := env.sw.Restore(engine.WithProgress(context.Background(), progress), env.p, snap); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	diffTrees(t, want, scanTree(t, env.dir))
	if got := siblings(t, env.dir); len(got) != 1 {
		t.Errorf("storage parent holds %v, want only the storage directory", got)
	}
	if len(reports) == 0 || reports[len(reports)-1].Done != snap.SizeBytes || reports[len(reports)-1].Phase != "extract" {
		t.Errorf("restore progress = %+v", reports)
	}

	// A hibernated project: its storage, and even the directory above it, are gone.
	if err := os.RemoveAll(filepath.Dir(env.dir)); err != nil {
		t.Fatal(err)
	}
	if err := env.sw.Restore(context.Background(), env.p, snap); err != nil {
		t.Fatalf("Restore into missing storage: %v", err)
	}
	diffTrees(t, want, scanTree(t, env.dir))

	if err := env.sw.Delete(context.Background(), snap); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := env.sw.Delete(context.Background(), snap); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := env.store.Head(context.Background(), snap.Location); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("object still there after Delete: %v", err)
	}
}

func TestSandwichCorruptedObject(t *testing.T) {
	other := compress(makeTar(t, []tarEntry{reg("other", []byte("other project"))}))
	cases := []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"flipped middle byte", func(b []byte) []byte { b[len(b)/2] ^= 0x55; return b }},
		{"flipped last byte", func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-100] }},
		{"appended", func(b []byte) []byte { return append(b, 0) }},
		{"replaced by another valid archive", func([]byte) []byte { return bytes.Clone(other) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newSandwichEnv(t, sampleNodes(2))
			snap := env.create(t, "s1")
			env.store.mutate(snap.Location, tc.mutate)
			// The live project differs from the snapshot, so an accidental restore would show.
			if err := os.WriteFile(filepath.Join(env.dir, "live-only"), []byte("live"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := scanTree(t, env.dir)

			_, err := env.sw.WaitReady(context.Background(), snap)
			if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), "s1") {
				t.Errorf("WaitReady error = %v, want ErrChecksum naming s1", err)
			}
			err = env.sw.Restore(context.Background(), env.p, snap)
			if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), "s1") {
				t.Errorf("Restore error = %v, want ErrChecksum naming s1", err)
			}
			diffTrees(t, before, scanTree(t, env.dir))
			if got := siblings(t, env.dir); len(got) != 1 {
				t.Errorf("storage parent holds %v after a failed restore", got)
			}
		})
	}
}

func TestSandwichWrongRecordedChecksum(t *testing.T) {
	env := newSandwichEnv(t, sampleNodes(3))
	snap := env.create(t, "s1")
	snap.SHA256 = strings.Repeat("0", 64)
	if _, err := env.sw.WaitReady(context.Background(), snap); !errors.Is(err, engine.ErrChecksum) {
		t.Errorf("WaitReady = %v, want ErrChecksum", err)
	}
	before := scanTree(t, env.dir)
	if err := env.sw.Restore(context.Background(), env.p, snap); !errors.Is(err, engine.ErrChecksum) {
		t.Errorf("Restore = %v, want ErrChecksum", err)
	}
	diffTrees(t, before, scanTree(t, env.dir))
	snap.SHA256 = ""
	if err := env.sw.Restore(context.Background(), env.p, snap); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("Restore without checksum = %v, want ErrBadInput", err)
	}
}

func TestSandwichRestoreRefusesHostileObject(t *testing.T) {
	env := newSandwichEnv(t, sampleNodes(4))
	obj := compress(makeTar(t, []tarEntry{reg("fine", []byte("x")), reg("../escaped", []byte("evil"))}))
	key := "projects/alice/p1/evil.tar.zst"
	env.store.objs[key] = obj
	sum := sha256.Sum256(obj)
	snap := engine.Snapshot{ID: "evil", ProjectID: "p1", Location: key, SHA256: hex.EncodeToString(sum[:]), SizeBytes: int64(len(obj)), Backend: "archive"}
	before := scanTree(t, env.dir)
	err := env.sw.Restore(context.Background(), env.p, snap)
	if !errors.Is(err, engine.ErrBadPath) || errors.Is(err, engine.ErrChecksum) {
		t.Errorf("Restore = %v, want ErrBadPath (and not a checksum error: the object is intact)", err)
	}
	diffTrees(t, before, scanTree(t, env.dir))
	if _, err := os.Stat(filepath.Join(filepath.Dir(env.dir), "escaped")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file escaped the restore: %v", err)
	}
	if got := siblings(t, env.dir); len(got) != 1 {
		t.Errorf("storage parent holds %v after a failed restore", got)
	}
}

func bigNodes(n int, size int) []node {
	r := rand.New(rand.NewPCG(7, 7))
	var nodes []node
	for i := range n {
		nodes = append(nodes, node{path: filepathFor(i), kind: 'f', data: mixedContent(r, size)})
	}
	return nodes
}

func TestSandwichCreateCancelled(t *testing.T) {
	env := newSandwichEnv(t, bigNodes(16, 1<<20))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	snap, err := env.sw.Create(engine.WithProgress(ctx, func(p engine.Progress) {
		if p.Done > 0 && p.Done < p.Total {
			once.Do(cancel)
		}
	}), env.p, engine.Snapshot{ID: "s1", ProjectID: "p1"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Create = %+v, %v; want context.Canceled", snap, err)
	}
	key, _ := env.sw.Key("alice", "p1", "s1")
	if _, err := env.store.Head(context.Background(), key); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("object left under %s after a cancelled Create: %v", key, err)
	}
	if objs, _ := env.store.List(context.Background(), ""); len(objs) != 0 {
		t.Errorf("objects left: %v", objs)
	}
}

func TestSandwichCreateStoreFailure(t *testing.T) {
	env := newSandwichEnv(t, bigNodes(8, 1<<20))
	env.store.putErrAfter = 100 << 10
	done := make(chan error, 1)
	go func() {
		_, err := env.sw.Create(context.Background(), env.p, engine.Snapshot{ID: "s1", ProjectID: "p1"})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "injected put failure") {
			t.Errorf("Create = %v, want the store's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Create hung after the store failed")
	}
	if objs, _ := env.store.List(context.Background(), ""); len(objs) != 0 {
		t.Errorf("objects left: %v", objs)
	}
}

func TestSandwichCreateMissingStorage(t *testing.T) {
	env := newSandwichEnv(t, nil)
	if err := os.RemoveAll(env.dir); err != nil {
		t.Fatal(err)
	}
	_, err := env.sw.Create(context.Background(), env.p, engine.Snapshot{ID: "s1"})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Create of missing storage = %v, want ErrNotFound", err)
	}
}

func TestSandwichKeys(t *testing.T) {
	sw := NewSandwich(newMemStore(), dirsUnder("/x"), SandwichOptions{Prefix: "/tenant/archives/"})
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

func TestSandwichDeleteWithoutLocation(t *testing.T) {
	env := newSandwichEnv(t, sampleNodes(5))
	snap := env.create(t, "s1")
	if err := env.sw.Delete(context.Background(), engine.Snapshot{ID: "s1", ProjectID: "p1", Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.store.Head(context.Background(), snap.Location); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("object left after Delete by derived key: %v", err)
	}
	if err := env.sw.Delete(context.Background(), engine.Snapshot{ID: "x", Backend: "csi", Location: "vs-1"}); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("Delete of another backend's snapshot = %v, want ErrBadInput", err)
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

// wideWindow wraps b (at most 128 KiB) in a zstd frame, built by hand as a hostile object
// would be, whose header asks for a window of 1<<windowLog bytes.
func wideWindow(t *testing.T, b []byte, windowLog int) []byte {
	t.Helper()
	if len(b) > 128<<10 {
		t.Fatal("wideWindow: one raw block holds at most 128 KiB")
	}
	out := []byte{0x28, 0xb5, 0x2f, 0xfd, // magic
		0x00,                    // no content size, not single-segment, no checksum, no dictionary
		byte(windowLog-10) << 3} // window descriptor: exponent, mantissa 0
	hdr := 1 | len(b)<<3 // last block, raw
	out = append(out, byte(hdr), byte(hdr>>8), byte(hdr>>16))
	return append(out, b...)
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
			_, err := Extract(context.Background(), bytes.NewReader(wideWindow(t, tarball, tc.window)), target, tc.lim)
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

// TestSandwichRestoreRefusesWideWindow: a snapshot object, intact by its checksum, that asks
// for more decoder memory than sailtui's archives ever do is refused, and nothing changes.
func TestSandwichRestoreRefusesWideWindow(t *testing.T) {
	env := newSandwichEnv(t, sampleNodes(5))
	obj := wideWindow(t, makeTar(t, []tarEntry{reg("fine", []byte("x"))}), 26) // 64 MiB
	key := "projects/alice/p1/wide.tar.zst"
	env.store.objs[key] = obj
	sum := sha256.Sum256(obj)
	snap := engine.Snapshot{ID: "wide", ProjectID: "p1", Location: key, SHA256: hex.EncodeToString(sum[:]), SizeBytes: int64(len(obj)), Backend: "archive"}
	before := scanTree(t, env.dir)
	if err := env.sw.Restore(context.Background(), env.p, snap); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("Restore = %v, want ErrBadInput", err)
	}
	diffTrees(t, before, scanTree(t, env.dir))
}

// zstdBomb is a tar of one file of size zero bytes, compressed: a small object that expands
// to size bytes.
func zstdBomb(t *testing.T, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(enc)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bomb", Size: size, Mode: 0o644, Format: tar.FormatGNU}); err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zero)) {
		if _, err := tw.Write(zero[:min(left, int64(len(zero)))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A decompression bomb in place of a snapshot's object: refused before a byte is decompressed
// when its size is not the recorded one, and stopped at the recorded unpacked size otherwise,
// with the project's storage untouched either way (issue: a 135 KB object made a wake write
// 4 GB before the checksum mismatch).
func TestSandwichRestoreStopsZstdBomb(t *testing.T) {
	env := newSandwichEnv(t, sampleNodes(5))
	snap := env.create(t, "s1")
	var payload int64
	for _, n := range sampleNodes(5) {
		payload += int64(len(n.data))
	}
	if snap.UnpackedBytes != payload {
		t.Fatalf("Create recorded %d unpacked bytes, the tree holds %d", snap.UnpackedBytes, payload)
	}
	bomb := zstdBomb(t, 1<<30)
	env.store.mutate(snap.Location, func([]byte) []byte { return bomb })
	before := scanTree(t, env.dir)

	err := env.sw.Restore(context.Background(), env.p, snap)
	if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), fmt.Sprintf("has %d bytes, recorded %d", len(bomb), snap.SizeBytes)) {
		t.Errorf("restore of a bomb of another size: %v, want a size mismatch before reading", err)
	}
	diffTrees(t, before, scanTree(t, env.dir))

	// The same bomb where the recorded object size matches (or is unknown): extraction stops
	// at the recorded unpacked size, long before the gigabyte.
	forged := snap
	forged.SizeBytes = int64(len(bomb))
	start := time.Now()
	err = env.sw.Restore(context.Background(), env.p, forged)
	if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), fmt.Sprintf("limit of %d bytes", payload)) {
		t.Errorf("restore of a bomb of the recorded size: %v, want it stopped at the recorded %d unpacked bytes", err, payload)
	}
	t.Logf("bomb of %d bytes (1 GiB unpacked) refused in %s", len(bomb), time.Since(start))
	diffTrees(t, before, scanTree(t, env.dir))
	if got := siblings(t, env.dir); len(got) != 1 {
		t.Errorf("storage parent holds %v after the refused restores", got)
	}
}
