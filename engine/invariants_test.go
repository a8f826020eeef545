package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// corruptingVolumes flips a byte of every archive right after it is written, before the engine
// verifies it: the read-back check must catch it.
type corruptingVolumes struct {
	engine.Volumes
	objects string
}

func (v corruptingVolumes) Create(ctx context.Context, p engine.Project, s engine.Snapshot) (engine.Snapshot, error) {
	s, err := v.Volumes.Create(ctx, p, s)
	if err != nil {
		return s, err
	}
	path := filepath.Join(v.objects, filepath.FromSlash(s.Location))
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		return s, rerr
	}
	b[len(b)/2] ^= 0xff
	return s, os.WriteFile(path, b, 0o600)
}

// Invariant 1: no delete without a ready, verified snapshot.
func TestInvariantNoDeleteWithoutVerifiedSnapshot(t *testing.T) {
	state := t.TempDir()
	pt := openTest(t, state, "test-a", func(c *engine.Config) {
		c.Volumes = corruptingVolumes{Volumes: c.Volumes, objects: filepath.Join(state, "objects")}
	})
	ctx := context.Background()
	p := enginetest.NewProject(t, pt.eng, "fragile")
	dir := filepath.Join(state, "projects", p.Slug)
	before := enginetest.TreeDigest(t, dir)
	_, err := pt.eng.Hibernate(ctx, p.Slug)
	if !errors.Is(err, engine.ErrChecksum) {
		t.Fatalf("hibernate with a corrupted archive: got %v, want a checksum error", err)
	}
	if d := enginetest.DiffDigests(before, enginetest.TreeDigest(t, dir)); d != "" {
		t.Fatalf("project tree changed:\n%s", d)
	}
	got, _ := pt.eng.Project(ctx, p.Slug)
	if got.Status != engine.StatusActive || got.OpID != "" {
		t.Fatalf("after failed hibernate: %+v", got)
	}
	snaps, _ := pt.eng.Snapshots(ctx, p.Slug, true)
	if len(snaps) != 1 || snaps[0].Status != engine.SnapshotDeleted || !strings.Contains(snaps[0].Error, "checksum") {
		t.Fatalf("the failed snapshot should be retired with its error: %+v", snaps)
	}
}

// Invariant 3: two sweeps at once (two engines on one store, as two processes) hibernate every
// project exactly once and never deadlock.
func TestInvariantExactlyOnce(t *testing.T) {
	state := t.TempDir()
	a := openTest(t, state, "sweeper-a", func(c *engine.Config) { c.Store = enginetest.Lockless{Store: c.Store} })
	b := openTest(t, state, "sweeper-b", func(c *engine.Config) { c.Store = enginetest.Lockless{Store: c.Store} })
	ctx := context.Background()
	const n = 24
	for i := range n {
		enginetest.NewProject(t, a.eng, fmt.Sprintf("p%02d", i))
	}
	asOf := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	reps := make([]engine.SweepReport, 2)
	errs := make([]error, 2)
	for i, pt := range []*parts{a, b} {
		wg.Go(func() {
			reps[i], errs[i] = pt.eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: asOf, Concurrency: 4})
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("two sweeps deadlocked")
	}
	for i := range 2 {
		if errs[i] != nil || !reps[i].OK() {
			t.Fatalf("sweep %d: %v %+v", i, errs[i], reps[i].Failed)
		}
	}
	if got := len(reps[0].Hibernated) + len(reps[1].Hibernated); got != n {
		t.Fatalf("hibernated %d+%d, want %d in all", len(reps[0].Hibernated), len(reps[1].Hibernated), n)
	}
	ps, _ := a.store.ListProjects(ctx, engine.ProjectFilter{})
	for _, p := range ps {
		if p.Status != engine.StatusHibernated {
			t.Errorf("%s is %s", p.Slug, p.Status)
		}
		snaps, _ := a.eng.Snapshots(ctx, p.Slug, true)
		if len(snaps) != 1 {
			t.Errorf("%s has %d snapshots, want exactly one hibernation snapshot", p.Slug, len(snaps))
		}
		ops, _ := a.store.ListOps(ctx, p.ID, 0)
		hib := 0
		for _, o := range ops {
			if o.Kind == engine.OpHibernate {
				hib++
			}
		}
		if hib != 1 {
			t.Errorf("%s went through %d hibernate operations, want 1", p.Slug, hib)
		}
	}
	// With the lock in place, an overlapping sweep exits early and says so.
	c := openTest(t, state, "sweeper-c")
	if ok, err := c.store.TryLock(ctx, "sweep-hibernate", "someone-else", time.Now(), time.Minute); !ok || err != nil {
		t.Fatalf("take lock: %v %v", ok, err)
	}
	rep, err := c.eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: asOf})
	if err != nil || rep.Lock != "held-by-another-sweep" {
		t.Fatalf("second sweep under the lock: %v %+v", err, rep)
	}
}

// touchingStore touches one project right after the sweep selected it.
type touchingStore struct {
	engine.Store
	slug string
}

func (s touchingStore) IdleProjects(ctx context.Context, before, asOf time.Time, limit int) ([]engine.Project, error) {
	ps, err := s.Store.IdleProjects(ctx, before, asOf, limit)
	for _, p := range ps {
		if p.Slug == s.slug {
			if terr := s.Store.Touch(ctx, p.ID, engine.Activity{At: time.Now().Add(2 * time.Hour), Source: engine.SourceTouch}); terr != nil {
				return nil, terr
			}
		}
	}
	return ps, err
}

// Invariant 4: a project touched after the sweep selected it is not hibernated, whether the
// touch comes before the claim or while the snapshot is being taken.
func TestInvariantActivityRespected(t *testing.T) {
	ctx := context.Background()
	t.Run("touched before claim", func(t *testing.T) {
		state := t.TempDir()
		pt := openTest(t, state, "test-a", func(c *engine.Config) { c.Store = touchingStore{c.Store, "busy"} })
		enginetest.NewProject(t, pt.eng, "busy")
		enginetest.NewProject(t, pt.eng, "quiet")
		rep, err := pt.eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Hibernated) != 1 || rep.Hibernated[0].Slug != "quiet" || len(rep.Skipped) != 1 || rep.Skipped[0].Slug != "busy" {
			t.Fatalf("report: %+v", rep)
		}
		if p, _ := pt.eng.Project(ctx, "busy"); p.Status != engine.StatusActive {
			t.Fatalf("busy is %s", p.Status)
		}
	})
	t.Run("touched during snapshot", func(t *testing.T) {
		state := t.TempDir()
		var eng *engine.Engine
		pt := openTest(t, state, "test-a", func(c *engine.Config) {
			c.StepHook = func(kind engine.OpKind, step string) {
				if kind == engine.OpHibernate && step == "snapshot-ready" {
					if _, err := eng.Touch(ctx, "busy", ""); err != nil {
						t.Errorf("touch: %v", err)
					}
				}
			}
		})
		eng = pt.eng
		p := enginetest.NewProject(t, eng, "busy")
		dir := filepath.Join(state, "projects", p.Slug)
		before := enginetest.TreeDigest(t, dir)
		// Idle for a moment is idle enough; the touch at snapshot-ready comes after the cutoff.
		time.Sleep(20 * time.Millisecond)
		rep, err := eng.SweepHibernate(ctx, engine.SweepOptions{Idle: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Skipped) != 1 || len(rep.Hibernated) != 0 {
			t.Fatalf("report: %+v", rep)
		}
		got, _ := eng.Project(ctx, "busy")
		if got.Status != engine.StatusActive || got.OpID != "" {
			t.Fatalf("after touched hibernation: %+v", got)
		}
		if d := enginetest.DiffDigests(before, enginetest.TreeDigest(t, dir)); d != "" {
			t.Fatalf("tree changed:\n%s", d)
		}
	})
}

// Invariant 5, under concurrency: however many snapshot requests race, never more than 5
// manual snapshots.
func TestInvariantManualLimitConcurrent(t *testing.T) {
	state := t.TempDir()
	a := openTest(t, state, "test-a")
	b := openTest(t, state, "test-b")
	ctx := context.Background()
	enginetest.NewProject(t, a.eng, "racy")
	var wg sync.WaitGroup
	for i := range 12 {
		eng := a.eng
		if i%2 == 1 {
			eng = b.eng
		}
		wg.Go(func() {
			for {
				_, err := eng.CreateSnapshot(ctx, "racy", fmt.Sprintf("r%d", i))
				if !errors.Is(err, engine.ErrBusy) {
					if err != nil && !errors.Is(err, engine.ErrTimelineFull) {
						t.Errorf("snapshot %d: %v", i, err)
					}
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	snaps, _ := a.eng.Snapshots(ctx, "racy", false)
	if len(snaps) != engine.MaxManualSnapshots {
		t.Fatalf("%d manual snapshots, want exactly %d", len(snaps), engine.MaxManualSnapshots)
	}
}

// Invariant 7 (enginetest.PurgeFreesStorage) over the directory object store; cmd/sailtui runs
// it over S3.
func TestInvariantPurgeFreesStorage(t *testing.T) {
	state := t.TempDir()
	pt := openTest(t, state, "test-a")
	root := filepath.Join(state, "objects")
	enginetest.PurgeFreesStorage(t, pt.eng, pt.store, func() []string {
		var keys []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(root, path)
				keys = append(keys, filepath.ToSlash(rel))
			}
			return nil
		})
		return keys
	})
}

// Invariant 8 at the engine's door: hostile paths are refused and name the problem.
func TestInvariantPathsStayInside(t *testing.T) {
	state := t.TempDir()
	pt := openTest(t, state, "test-a")
	ctx := context.Background()
	p := enginetest.NewProject(t, pt.eng, "walled")
	outside := filepath.Join(state, "outside.txt")
	must(t, os.WriteFile(outside, []byte("secret"), 0o600))
	must(t, os.Symlink(state, filepath.Join(state, "projects", p.Slug, "escape")))
	for _, path := range []string{"../outside.txt", "/etc/passwd", "a/../../outside.txt", "a\x00b", "escape/outside.txt"} {
		var buf bytes.Buffer
		if err := pt.eng.ReadFile(ctx, p.Slug, path, &buf); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("read %q: got %v, want a bad-path error", path, err)
		}
		if err := pt.eng.WriteFile(ctx, p.Slug, path, strings.NewReader("x")); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("write %q: got %v, want a bad-path error", path, err)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Fatalf("file outside the project changed: %q", b)
	}
}

// A container's log outlives hibernation, is in no snapshot and goes with the project.
func TestLogsKeptAcrossHibernation(t *testing.T) {
	state := t.TempDir()
	pt := openTest(t, state, "test-a")
	enginetest.LogsAcrossHibernation(t, pt.eng, "chatty", pt.objects, func(p engine.Project) []string {
		files, _ := filepath.Glob(filepath.Join(state, "logs", p.Slug, "*"))
		return files
	})
}
