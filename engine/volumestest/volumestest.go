// Package volumestest is the contract every engine.Volumes implementation passes: call Run from
// the implementation's tests with a Harness describing it. The archive volumes
// (archive.Sandwich, the kubernetes archive volumes) and the kubernetes CSI VolumeSnapshots
// run it; what an implementation cannot do by nature is a capability of its Harness, never a
// skipped assertion.
package volumestest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/objectstoretest"
)

// Harness describes one Volumes implementation to the suite.
type Harness struct {
	// New returns a fresh environment for one subtest: a Volumes over a project whose storage
	// exists and is empty. store is where archives go (Archive), nil otherwise. Whatever New
	// starts or creates is cleaned up through t.
	New func(t *testing.T, store engine.ObjectStore) *Env
	// Store returns the object store one subtest's archives go to (Archive); the suite wraps
	// it to read, corrupt and replace objects and to make a Put fail.
	Store func(t *testing.T) engine.ObjectStore

	// Data says snapshots carry the files seen in Env.Dir: round trips are compared entry by
	// entry. Without it (a CSI snapshotter stand-in that copies no data) the suite checks the
	// snapshot's life cycle and that storage comes back.
	Data bool
	// Archive says snapshots are archive objects in the store, under archive.Key's keys with
	// the default prefix: checksums, hostile and corrupted objects, bombs, store failures. It
	// needs Data and Store.
	Archive bool
	// ProgressTotal says Create's reports carry the total it works towards (a walk of the tree
	// that counts first); otherwise Total stays 0 and only Done grows.
	ProgressTotal bool
	// MissingStorage is the error kind Create wraps for a project whose storage is gone; nil
	// when the implementation cannot tell (it still fails).
	MissingStorage error
	// Parallel runs the subtests in parallel: for implementations whose time goes in waiting
	// (on an API server), not in CPU.
	Parallel bool
}

// Env is one subtest's Volumes and project.
type Env struct {
	Volumes engine.Volumes
	Project engine.Project
	// Dir is where the project's files are seen on this machine (Data).
	Dir string
	// RemoveStorage takes the project's storage away as a hibernation does, up to where a
	// wake calls Restore (for kubernetes CSI: the namespace made again, without its PVC).
	RemoveStorage func(t *testing.T)
	// Leftovers lists what restores left behind beside or in the storage (temporary trees).
	Leftovers func(t *testing.T) []string
	// Exists reports whether anything behind snapshot s is left (VolumeSnapshots, contents).
	// Archive implementations may leave it nil: the suite looks in the store.
	Exists func(t *testing.T, s engine.Snapshot) bool
	// StorageExists reports whether the project has storage (without Data: after a restore).
	StorageExists func(t *testing.T) bool
}

// Run runs the contract.
func Run(t *testing.T, h Harness) {
	if h.Archive && (!h.Data || h.Store == nil) {
		// The archive checks corrupt, replace and compare real trees and objects.
		t.Fatal("volumestest: an Archive harness needs Data and a Store")
	}
	tests := []struct {
		name string
		fn   func(*testing.T, *suite)
		need bool
	}{
		{"RoundTrip", testRoundTrip, true},
		{"RestoreIntoMissingStorage", testRestoreIntoMissingStorage, true},
		{"Delete", testDelete, true},
		{"CreateCancelled", testCreateCancelled, true},
		{"CreateMissingStorage", testCreateMissingStorage, true},
		{"CorruptedObject", testCorruptedObject, h.Archive},
		{"WrongRecordedChecksum", testWrongRecordedChecksum, h.Archive},
		{"HostileObjects", testHostileObjects, h.Archive},
		{"ZstdBomb", testZstdBomb, h.Archive},
		{"CreateStoreFailure", testCreateStoreFailure, h.Archive},
	}
	for _, tc := range tests {
		if !tc.need {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			if h.Parallel {
				t.Parallel()
			}
			s := &suite{h: h}
			if h.Archive {
				s.store = &faultStore{ObjectStore: h.Store(t)}
			}
			var store engine.ObjectStore
			if s.store != nil {
				store = s.store
			}
			s.env = h.New(t, store)
			if s.env.Dir != "" {
				// Trees hold read-only directories; the temporary directories must go.
				t.Cleanup(func() { Writable(s.env.Dir) })
			}
			tc.fn(t, s)
		})
	}
}

type suite struct {
	h     Harness
	env   *Env
	store *faultStore
}

func (s *suite) snap(id string) engine.Snapshot {
	p := s.env.Project
	return engine.Snapshot{ID: id, ProjectID: p.ID, Owner: p.Owner, Type: engine.SnapshotManual}
}

func (s *suite) create(t *testing.T, ctx context.Context, snap engine.Snapshot) engine.Snapshot {
	t.Helper()
	got, err := s.env.Volumes.Create(ctx, s.env.Project, snap)
	if err != nil {
		t.Fatalf("Create %s: %v", snap.ID, err)
	}
	return got
}

func (s *suite) ready(t *testing.T, snap engine.Snapshot) engine.Snapshot {
	t.Helper()
	got, err := s.env.Volumes.WaitReady(t.Context(), snap)
	if err != nil {
		t.Fatalf("WaitReady %s: %v", snap.ID, err)
	}
	if got.Status != engine.SnapshotReady {
		t.Errorf("WaitReady status = %q, want %q", got.Status, engine.SnapshotReady)
	}
	return got
}

// state is the project's tree (Data), or nil.
func (s *suite) state(t *testing.T) []string {
	t.Helper()
	if !s.h.Data {
		return nil
	}
	return TreeState(t, s.env.Dir, nil)
}

// unchanged checks that the project's tree is still before and that no restore left anything.
func (s *suite) unchanged(t *testing.T, what string, before []string) {
	t.Helper()
	if s.h.Data {
		DiffStates(t, what, TreeState(t, s.env.Dir, nil), before)
	}
	s.noLeftovers(t)
}

func (s *suite) noLeftovers(t *testing.T) {
	t.Helper()
	if s.env.Leftovers == nil {
		return
	}
	if left := s.env.Leftovers(t); len(left) != 0 {
		t.Errorf("restores left behind: %v", left)
	}
}

// gone checks that nothing behind snap is left.
func (s *suite) gone(t *testing.T, what string, snap engine.Snapshot) {
	t.Helper()
	if s.h.Archive {
		key := snap.Location
		if key == "" {
			key = s.key(t, snap.ID)
		}
		if _, err := s.store.Head(t.Context(), key); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%s: object %s still there: %v", what, key, err)
		}
	}
	if s.env.Exists != nil && s.env.Exists(t, snap) {
		t.Errorf("%s: snapshot %s still there", what, snap.ID)
	}
}

// key is the object key of snapshot id of the project (the default prefix).
func (s *suite) key(t *testing.T, id string) string {
	t.Helper()
	key, err := archive.Key("", s.env.Project.Owner, s.env.Project.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// object reads a stored object.
func (s *suite) object(t *testing.T, key string) []byte {
	t.Helper()
	return objectstoretest.Get(t, s.store, key)
}

func (s *suite) putObject(t *testing.T, key string, data []byte) {
	t.Helper()
	if _, err := s.store.ObjectStore.Put(t.Context(), key, bytes.NewReader(data)); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// stored puts data as the object of a new snapshot id, with its size and checksum recorded.
func (s *suite) stored(t *testing.T, id string, data []byte) engine.Snapshot {
	t.Helper()
	snap := s.snap(id)
	key := s.key(t, id)
	s.putObject(t, key, data)
	sum := sha256.Sum256(data)
	snap.Location, snap.SHA256, snap.SizeBytes, snap.Backend = key, hex.EncodeToString(sum[:]), int64(len(data)), archive.BackendName
	return snap
}

// reports collects progress reports, safe for concurrent use.
type reports struct {
	mu  sync.Mutex
	all []engine.Progress
}

func (r *reports) add(p engine.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, p)
}

func (r *reports) last(t *testing.T, what string) engine.Progress {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		t.Fatalf("%s: no progress reported", what)
	}
	p := r.all[len(r.all)-1]
	r.all = nil
	return p
}

// Create, WaitReady and Restore over a changed tree give back the tree as it was; progress
// goes to the context's reporter; Delete removes the snapshot, twice as well as once.
func testRoundTrip(t *testing.T, s *suite) {
	ctx := t.Context()
	p := s.env.Project
	var want []string
	if s.h.Data {
		WriteTree(t, s.env.Dir)
		want = TreeState(t, s.env.Dir, ExcludedByDefault)
	}
	var rep reports
	pctx := engine.WithProgress(ctx, rep.add)
	snap := s.create(t, pctx, engine.Snapshot{ID: "s-1", ProjectID: p.ID, Owner: p.Owner, Type: engine.SnapshotHibernation})
	if snap.Backend != s.env.Volumes.Name() || snap.Backend == "" || snap.Location == "" {
		t.Errorf("Create = %+v: want Backend %q and a Location", snap, s.env.Volumes.Name())
	}
	last := rep.last(t, "Create")
	if last.ProjectID != p.ID || last.Op != engine.OpHibernate {
		t.Errorf("last Create progress = %+v, want project %s and op %s", last, p.ID, engine.OpHibernate)
	}
	if s.h.Archive {
		// Archives are interchangeable between the archive Volumes: same backend, same keys.
		if snap.Backend != archive.BackendName {
			t.Errorf("Backend = %q, want %q", snap.Backend, archive.BackendName)
		}
		if want := s.key(t, "s-1"); snap.Location != want {
			t.Errorf("Location = %q, want the archive key %q", snap.Location, want)
		}
		obj := s.object(t, snap.Location)
		sum := sha256.Sum256(obj)
		if snap.SizeBytes != int64(len(obj)) || snap.SHA256 != hex.EncodeToString(sum[:]) || snap.SizeBytes == 0 {
			t.Errorf("recorded size/sha = %d/%s, the object has %d/%x", snap.SizeBytes, snap.SHA256, len(obj), sum)
		}
		if last.Phase != "archive" || last.Done == 0 || (s.h.ProgressTotal && last.Done != last.Total) {
			t.Errorf("last Create progress = %+v: want the archive phase done", last)
		}
	}
	snap = s.ready(t, snap)

	if s.h.Data {
		// Change everything: edits, deletions, additions, a directory where a file was.
		Writable(s.env.Dir)
		ChangeTree(t, s.env.Dir)
	}
	if err := s.env.Volumes.Restore(pctx, p, snap); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	s.restored(t, "restored", want)
	last = rep.last(t, "Restore")
	if last.ProjectID != p.ID || last.Op != engine.OpRestore {
		t.Errorf("last Restore progress = %+v, want project %s and op %s", last, p.ID, engine.OpRestore)
	}
	if s.h.Archive && (last.Phase != "extract" || last.Done != snap.SizeBytes) {
		t.Errorf("last Restore progress = %+v, want extract done at %d", last, snap.SizeBytes)
	}
	// Restoring again over the restored tree is the same tree.
	if err := s.env.Volumes.Restore(ctx, p, snap); err != nil {
		t.Fatalf("second Restore: %v", err)
	}
	s.restored(t, "restored twice", want)

	if err := s.env.Volumes.Delete(ctx, snap); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.env.Volumes.Delete(ctx, snap); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	s.gone(t, "after Delete", snap)
}

// restored checks the project after a restore: its tree is want (Data), its storage is there.
func (s *suite) restored(t *testing.T, what string, want []string) {
	t.Helper()
	if s.h.Data {
		DiffStates(t, what, TreeState(t, s.env.Dir, nil), want)
	}
	if s.env.StorageExists != nil && !s.env.StorageExists(t) {
		t.Errorf("%s: the project has no storage", what)
	}
	s.noLeftovers(t)
}

// A project whose storage is gone (hibernated) gets it back from a restore.
func testRestoreIntoMissingStorage(t *testing.T, s *suite) {
	var want []string
	if s.h.Data {
		WriteTree(t, s.env.Dir)
		want = TreeState(t, s.env.Dir, ExcludedByDefault)
	}
	snap := s.ready(t, s.create(t, t.Context(), s.snap("s-1")))
	s.env.RemoveStorage(t)
	if err := s.env.Volumes.Restore(t.Context(), s.env.Project, snap); err != nil {
		t.Fatalf("Restore into missing storage: %v", err)
	}
	s.restored(t, "restored into missing storage", want)
}

// Delete of a snapshot never made, or never made ready, succeeds; an archive is found by the
// key it would have (an interrupted Create leaves no Location); another backend's snapshot is
// refused.
func testDelete(t *testing.T, s *suite) {
	ctx := t.Context()
	never := s.snap("never")
	if err := s.env.Volumes.Delete(ctx, never); err != nil {
		t.Errorf("Delete of a snapshot never created: %v", err)
	}
	created := s.create(t, ctx, s.snap("s-1"))
	if err := s.env.Volumes.Delete(ctx, created); err != nil {
		t.Errorf("Delete of a snapshot never ready: %v", err)
	}
	s.gone(t, "after Delete of a snapshot never ready", created)
	if !s.h.Archive {
		return
	}
	snap := s.create(t, ctx, s.snap("s-2"))
	if err := s.env.Volumes.Delete(ctx, s.snap("s-2")); err != nil {
		t.Fatalf("Delete by the derived key: %v", err)
	}
	s.gone(t, "after Delete by the derived key", snap)
	other := engine.Snapshot{ID: "x", Backend: "csi", Location: "vs-1"}
	if err := s.env.Volumes.Delete(ctx, other); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("Delete of another backend's snapshot = %v, want ErrBadInput", err)
	}
}

// A Create cancelled while it works fails with the context's error and leaves nothing.
func testCreateCancelled(t *testing.T, s *suite) {
	if s.h.Data {
		BigTree(t, s.env.Dir, 16, 1<<20)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	snap, err := s.env.Volumes.Create(engine.WithProgress(ctx, func(p engine.Progress) {
		// Archives: once part of the tree is archived; others: at the first report.
		if !s.h.Archive || p.Done > 0 && (p.Total == 0 || p.Done < p.Total) {
			once.Do(cancel)
		}
	}), s.env.Project, s.snap("s-1"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Create = %+v, %v; want context.Canceled", snap, err)
	}
	s.gone(t, "after a cancelled Create", s.snap("s-1"))
	if s.h.Archive {
		if objs, _ := s.store.List(t.Context(), ""); len(objs) != 0 {
			t.Errorf("objects left: %v", objs)
		}
	}
}

// No storage is no snapshot (invariant 1): Create refuses, never making an empty one.
func testCreateMissingStorage(t *testing.T, s *suite) {
	s.env.RemoveStorage(t)
	_, err := s.env.Volumes.Create(t.Context(), s.env.Project, s.snap("s-1"))
	if err == nil || (s.h.MissingStorage != nil && !errors.Is(err, s.h.MissingStorage)) {
		t.Errorf("Create of missing storage = %v, want an error wrapping %v", err, s.h.MissingStorage)
	}
	if s.h.Archive {
		if objs, _ := s.store.List(t.Context(), ""); len(objs) != 0 {
			t.Errorf("objects left: %v", objs)
		}
	}
}

// A stored object that is not the one recorded is ErrChecksum, naming the snapshot, when
// verified and when restored; the tree is as it was.
func testCorruptedObject(t *testing.T, s *suite) {
	ctx := t.Context()
	WriteTree(t, s.env.Dir)
	snap := s.ready(t, s.create(t, ctx, s.snap("s-corrupt")))
	// The live project differs from the snapshot, so an accidental restore would show.
	Writable(s.env.Dir)
	WriteFile(t, s.env.Dir, "after.txt", "written after the snapshot")
	before := s.state(t)
	good := s.object(t, snap.Location)
	other := Compress(t, MakeTar(t, []TarEntry{Reg("other", "other project")}))
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"flipped byte at 1%", func(b []byte) []byte { b[len(b)/100] ^= 0x40; return b }},
		{"flipped middle byte", func(b []byte) []byte { b[len(b)/2] ^= 0x55; return b }},
		{"flipped byte at 99%", func(b []byte) []byte { b[len(b)*99/100] ^= 0x40; return b }},
		{"flipped last byte", func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-100] }},
		{"appended", func(b []byte) []byte { return append(b, 0) }},
		{"replaced by another valid archive", func([]byte) []byte { return bytes.Clone(other) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.putObject(t, snap.Location, tc.mutate(bytes.Clone(good)))
			defer s.putObject(t, snap.Location, good)
			_, err := s.env.Volumes.WaitReady(ctx, snap)
			if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), snap.ID) {
				t.Errorf("WaitReady = %v, want ErrChecksum naming %s", err, snap.ID)
			}
			err = s.env.Volumes.Restore(ctx, s.env.Project, snap)
			if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), snap.ID) {
				t.Errorf("Restore = %v, want ErrChecksum naming %s", err, snap.ID)
			}
			s.unchanged(t, "after a refused restore", before)
		})
	}
}

// A recorded checksum that is not the object's is refused the same way; a snapshot without
// one cannot be restored at all.
func testWrongRecordedChecksum(t *testing.T, s *suite) {
	ctx := t.Context()
	WriteTree(t, s.env.Dir)
	snap := s.create(t, ctx, s.snap("s-1"))
	before := s.state(t)
	bad := snap
	bad.SHA256 = strings.Repeat("0", 64)
	if _, err := s.env.Volumes.WaitReady(ctx, bad); !errors.Is(err, engine.ErrChecksum) {
		t.Errorf("WaitReady = %v, want ErrChecksum", err)
	}
	if err := s.env.Volumes.Restore(ctx, s.env.Project, bad); !errors.Is(err, engine.ErrChecksum) {
		t.Errorf("Restore = %v, want ErrChecksum", err)
	}
	s.unchanged(t, "after a wrong checksum", before)
	bad.SHA256 = ""
	if err := s.env.Volumes.Restore(ctx, s.env.Project, bad); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("Restore without checksum = %v, want ErrBadInput", err)
	}
	s.unchanged(t, "after a restore without checksum", before)
}

// faultStore is the harness's store with a Put that fails after putErrAfter bytes (0: never).
type faultStore struct {
	engine.ObjectStore
	putErrAfter atomic.Int64
}

var errInjected = errors.New("volumestest: injected put failure")

func (f *faultStore) Put(ctx context.Context, key string, r io.Reader) (engine.ObjectInfo, error) {
	if n := f.putErrAfter.Load(); n > 0 {
		r = &failingReader{r: r, left: n}
	}
	return f.ObjectStore.Put(ctx, key, r)
}

type failingReader struct {
	r    io.Reader
	left int64
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, errInjected
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.r.Read(p)
	f.left -= int64(n)
	return n, err
}

// A store that fails in the middle of a Put fails the Create with its error, promptly, and
// keeps no object.
func testCreateStoreFailure(t *testing.T, s *suite) {
	BigTree(t, s.env.Dir, 8, 1<<20)
	s.store.putErrAfter.Store(100 << 10)
	done := make(chan error, 1)
	go func() {
		_, err := s.env.Volumes.Create(context.WithoutCancel(t.Context()), s.env.Project, s.snap("s-1"))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), errInjected.Error()) {
			t.Errorf("Create = %v, want the store's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Create hung after the store failed")
	}
	s.store.putErrAfter.Store(0)
	if objs, _ := s.store.List(t.Context(), ""); len(objs) != 0 {
		t.Errorf("objects left: %v", objs)
	}
}
