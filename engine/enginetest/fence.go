package enginetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Invariant 9: a write that sailtui acknowledged is in the project afterwards, or in the
// snapshot the operation took. Writers on one engine (a process) race hibernations, sweeps,
// restores and manual snapshots on another engine over the same store; every put and exec that
// returned success must be found afterwards. The fence lives in the store, so every store and
// runtime gets the same rounds.

// FenceKinds are the exclusive operations a fence round races the writers with.
var FenceKinds = []string{"hibernate", "sweep", "restore", "snapshot"}

// slowReader hands out its content in pieces with pauses, as a put from a slow pipe does, so
// a put is still writing when an operation starts.
type slowReader struct {
	data  []byte
	pause time.Duration
}

func (r *slowReader) Read(b []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.pause)
	n := copy(b[:min(len(b), 1+len(r.data)/3)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// ackLog records the writes that were acknowledged: path -> content.
type ackLog struct {
	mu   sync.Mutex
	acks map[string]string
	n    atomic.Int64 // refused or failed writes, for the report
	// quiet, when set, makes the writers all pause together for 300 ms of every 1.3 s.
	quiet bool
}

func (a *ackLog) ack(path, content string) {
	a.mu.Lock()
	a.acks[path] = content
	a.mu.Unlock()
}

// write runs writers until stop closes: puts through a slow reader and execs that write after
// a pause; only those that returned success are recorded.
func (a *ackLog) write(eng *engine.Engine, slug string, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			ctx := context.Background()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				content := fmt.Sprintf("writer %d write %d %x\n", w, k, rand.Uint64())
				if w == 2 {
					// exec: the write lands 40 ms after the command started.
					path := fmt.Sprintf("acks/e%d-%d", w, k)
					res, err := eng.Exec(ctx, slug, "web", engine.ExecRequest{Argv: []string{"sh", "-c",
						`sleep 0.04; mkdir -p acks && printf %s "$1" > "$2.tmp" && mv "$2.tmp" "$2"`, "sh", content, path}})
					if err == nil && res.ExitCode == 0 {
						a.ack(path, content)
					} else {
						a.n.Add(1)
					}
				} else {
					path := fmt.Sprintf("acks/p%d-%d", w, k)
					err := eng.WriteFile(ctx, slug, path, &slowReader{data: []byte(content), pause: 15 * time.Millisecond})
					if err == nil {
						a.ack(path, content)
					} else {
						a.n.Add(1)
					}
				}
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
				if a.quiet {
					if phase := time.Duration(time.Now().UnixNano()) % (1300 * time.Millisecond); phase >= time.Second {
						time.Sleep(1300*time.Millisecond - phase)
					}
				}
			}
		})
	}
	wg.Wait()
}

// missing lists the acknowledged writes that are in none of the trees.
func (a *ackLog) missing(trees ...string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for path, want := range a.acks {
		found := false
		for _, root := range trees {
			if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path))); err == nil && string(b) == want {
				found = true
				break
			}
		}
		if !found {
			out = append(out, path)
		}
	}
	return out
}

// copyTree copies the regular files of src into a new temp directory (the tree as it is now).
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// FenceRound races writers (puts and execs through the writers engine) against repeated
// operations of one kind (FenceKinds) through the ops engine, on a new project fence-<kind>
// with a container web, then checks that every acknowledged write is in the project, or, for
// restores, in one of the safety snapshots they took. writers and ops may be the same engine;
// two engines over one store are two processes.
func FenceRound(t *testing.T, writers, ops *engine.Engine, dirs ProjectDirs, kind string) {
	ctx := context.Background()
	p := NewProject(t, writers, "fence-"+kind)
	if _, err := writers.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "web", Directory: ".", Command: "sleep 600"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ops.StopProject(context.Background(), p.Slug) })
	var before engine.Snapshot
	if kind == "restore" {
		var err error
		if before, err = ops.CreateSnapshot(ctx, p.Slug, "before the writers"); err != nil {
			t.Fatal(err)
		}
	}
	dir := dirs(p)
	// A sweep skips a project in use: the writers leave it idle now and then, as real ones do,
	// so that some sweeps find it idle (and hibernate it) and others find writes in flight.
	log := &ackLog{acks: map[string]string{}, quiet: kind == "sweep"}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { log.write(writers, p.Slug, stop); close(done) }()

	var safety []engine.Snapshot
	succeeded, goal := 0, 3
	if kind == "restore" {
		// Safety snapshots rotate (two are kept): each one must still be there to look into.
		goal = engine.DefaultKeepAuto
	}
	if kind == "sweep" {
		// Some sweeps land in a quiet moment and see no write in flight: more rounds.
		goal = 5
	}
	deadline := time.Now().Add(20 * time.Second)
	for succeeded < goal && time.Now().Before(deadline) {
		time.Sleep(time.Duration(100+rand.IntN(150)) * time.Millisecond)
		var err error
		switch kind {
		case "hibernate":
			if _, err = ops.Hibernate(ctx, p.Slug); err == nil {
				_, err = ops.Wake(ctx, p.Slug)
			}
		case "sweep":
			var rep engine.SweepReport
			rep, err = ops.SweepHibernate(ctx, engine.SweepOptions{AsOf: time.Now().Add(time.Hour)})
			if err == nil && len(rep.Failed) > 0 {
				err = fmt.Errorf("sweep failed: %+v", rep.Failed)
			}
			if err == nil && len(rep.Hibernated) == 0 {
				continue // in use at that moment: skipped, as it should be
			}
			if err == nil {
				_, err = ops.Wake(ctx, p.Slug)
			}
		case "restore":
			var res engine.RestoreResult
			if res, err = ops.RestoreSnapshot(ctx, p.Slug, before.ID); err == nil {
				safety = append(safety, res.Safety)
			}
		case "snapshot":
			_, err = ops.CreateSnapshot(ctx, p.Slug, "")
			if errors.Is(err, engine.ErrTimelineFull) {
				err = nil
			}
		default:
			t.Fatalf("no fence round %q (want one of %v)", kind, FenceKinds)
		}
		if err != nil && !errors.Is(err, engine.ErrBusy) {
			close(stop)
			<-done
			t.Fatalf("%s: %v", kind, err)
		}
		if err == nil {
			succeeded++
		}
	}
	close(stop)
	<-done
	if succeeded == 0 {
		t.Fatalf("no %s went through in 20 s while the writers ran", kind)
	}
	if len(log.acks) == 0 {
		t.Fatal("no write was acknowledged: the test proves nothing")
	}

	trees := []string{copyTree(t, dir)}
	// A restore puts the project back to the snapshot from before the writers: every write
	// acknowledged before it must be in the safety snapshot it took. Restore each safety
	// snapshot in turn and look there too.
	for _, s := range safety {
		if _, err := ops.RestoreSnapshot(ctx, p.Slug, s.ID); err != nil {
			t.Fatalf("restore safety snapshot %s: %v", s.ID, err)
		}
		trees = append(trees, copyTree(t, dir))
	}
	if miss := log.missing(trees...); len(miss) > 0 {
		t.Fatalf("%d of %d acknowledged writes were lost across %d %s(s) (%d refused): %s",
			len(miss), len(log.acks), succeeded, kind, log.n.Load(), strings.Join(miss[:min(len(miss), 10)], ", "))
	}
	t.Logf("%d acknowledged writes kept across %d %s(s); %d refused or stopped", len(log.acks), succeeded, kind, log.n.Load())
}
