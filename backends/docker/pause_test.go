package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// pairWriter renames a new counter into a, then the same counter into z, round after round, so
// z <= a <= z+1 at any one moment, and a snapshot of one moment shows exactly that; the files
// of m/ sit between the two in the walk.
const pairWriter = `i=0
while :; do
  i=$((i+1))
  echo $i > a.tmp && mv -f a.tmp a
  echo $i > z.tmp && mv -f z.tmp z
done`

// startPairWriter starts pairWriter in the root of a new project beside 2,000 filler files.
func startPairWriter(t *testing.T, r *Runtime, name string) (*project, engine.Container) {
	t.Helper()
	pr := newProject(t, r, name)
	filler := strings.Repeat("filler between a and z\n", 200)
	for i := range 2000 {
		pr.write(fmt.Sprintf("m/d%02d/f%04d.txt", i/100, i), filler)
	}
	c := engine.Container{ProjectID: pr.p.ID, Name: "writer", Directory: "."}
	pr.cs = append(pr.cs, c)
	if _, err := r.StartContainer(t.Context(), pr.p, c, engine.StartSpec{Command: pairWriter}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	waitCounter(t, r, pr.p)
	return pr, c
}

func counterOf(r *Runtime, p engine.Project) int { return enginetest.WriterCounter(r.StorageDir, p) }

// waitCounter fails the test unless the writer's counter moves: the container runs.
func waitCounter(t *testing.T, r *Runtime, p engine.Project) {
	t.Helper()
	first := counterOf(r, p)
	waitFor(t, "the writer's counter to move", func() bool { return counterOf(r, p) > first })
}

// TestPauseProject: docker pause freezes the project's containers (its files stop changing),
// status says why, a second pause is refused, and resume lets them run on.
func TestPauseProject(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	r := newTestRuntime(t, testConfig(t, cli))
	pr, c := startPairWriter(t, r, "pause")
	ctx := t.Context()

	resume, err := r.PauseProject(ctx, pr.p, pr.cs)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := r.inspect(ctx, r.containerName(pr.p, c))
	if err != nil || ins == nil || !ins.State.Paused {
		t.Fatalf("container after PauseProject: %+v, %v", ins, err)
	}
	before := counterOf(r, pr.p)
	time.Sleep(300 * time.Millisecond)
	if after := counterOf(r, pr.p); after != before {
		t.Errorf("the counter moved from %d to %d while paused", before, after)
	}
	st, err := r.ContainerStatus(ctx, pr.p, c)
	if err != nil || st.State != engine.ContainerRunning || !strings.Contains(st.Detail, "paused for a snapshot") {
		t.Errorf("status while paused: %+v, %v", st, err)
	}
	if _, err := r.PauseProject(ctx, pr.p, pr.cs); !errors.Is(err, engine.ErrBusy) {
		t.Errorf("second pause: got %v, want ErrBusy", err)
	}
	// A cancelled caller still gets its containers back.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := resume(context.WithoutCancel(cctx)); err != nil {
		t.Fatal(err)
	}
	if err := resume(ctx); err != nil {
		t.Fatalf("second resume: %v", err)
	}
	waitCounter(t, r, pr.p)
	if st, err := r.ContainerStatus(ctx, pr.p, c); err != nil || st.State != engine.ContainerRunning || st.Detail != "" {
		t.Errorf("status after resume: %+v, %v", st, err)
	}
	if _, err := os.Stat(r.pausePath(pr.p)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pause record left after resume: %v", err)
	}
}

// failingStore refuses every Put: a snapshot that fails in the middle of the walk.
type failingStore struct{ memStore }

func (*failingStore) Put(ctx context.Context, key string, r io.Reader) (engine.ObjectInfo, error) {
	_, _ = io.CopyN(io.Discard, r, 1<<20)
	return engine.ObjectInfo{}, errors.New("object store is down")
}

// TestPausedSnapshot takes snapshots through the archive sandwich the way the engine does for
// a running project (pause, create, resume): each holds one moment of the tree, and the
// container runs on after each, also after one that failed.
func TestPausedSnapshot(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	r := newTestRuntime(t, testConfig(t, cli))
	store := &memStore{}
	vols := archive.NewSandwich(store, r, archive.SandwichOptions{})
	broken := archive.NewSandwich(&failingStore{}, r, archive.SandwichOptions{})
	pr, c := startPairWriter(t, r, "snap")
	ctx := t.Context()
	ins, err := r.inspect(ctx, r.containerName(pr.p, c))
	if err != nil || ins == nil {
		t.Fatalf("inspect: %v", err)
	}
	for i := range 4 {
		v := vols
		if i == 2 {
			v = broken
		}
		resume, err := r.PauseProject(ctx, pr.p, pr.cs)
		if err != nil {
			t.Fatal(err)
		}
		snap, cerr := v.Create(ctx, pr.p, engine.Snapshot{ID: fmt.Sprintf("snap%d", i), ProjectID: pr.p.ID, Owner: pr.p.Owner, Type: engine.SnapshotManual})
		if err := resume(context.WithoutCancel(ctx)); err != nil {
			t.Fatalf("resume after snapshot %d: %v", i, err)
		}
		waitCounter(t, r, pr.p)
		if i == 2 {
			if cerr == nil {
				t.Fatal("a snapshot into a broken store succeeded")
			}
			continue
		}
		if cerr != nil {
			t.Fatalf("snapshot %d of the paused project: %v", i, cerr)
		}
		a, z := pairIn(t, store, snap.Location)
		if z > a || a > z+1 || z <= 0 {
			t.Errorf("snapshot %d is not point in time: a=%d z=%d, want z <= a <= z+1", i, a, z)
		}
	}
	after, err := r.inspect(ctx, r.containerName(pr.p, c))
	if err != nil || after == nil || after.ID != ins.ID || !after.State.Running || after.State.Paused {
		t.Errorf("after the snapshots the container should be the same one, running: %+v, %v", after, err)
	}
}

// pairIn reads a and z out of an archive in the store.
func pairIn(t *testing.T, store *memStore, key string) (a, z int) {
	t.Helper()
	rc, err := store.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	return enginetest.ArchivedPair(t, rc, key)
}

// TestPauseLeftByDeadSailtui: a pause whose sailtui died before resuming (its record names a
// process that is gone) is undone by the next sailtui that looks at the containers or starts
// them; a container an operator paused by hand is left paused.
func TestPauseLeftByDeadSailtui(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	cfg := testConfig(t, cli)
	r := newTestRuntime(t, cfg)
	for _, via := range []string{"status", "start", "pause"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			pr, c := startPairWriter(t, r, "left-"+via)
			ctx := t.Context()
			if _, err := r.PauseProject(ctx, pr.p, pr.cs); err != nil {
				t.Fatal(err)
			}
			// What a sailtui killed -9 leaves: the record, naming a process that no longer runs.
			st, err := r.readPauseState(pr.p)
			if err != nil || st == nil {
				t.Fatalf("pause record: %+v, %v", st, err)
			}
			parts := strings.Split(st.Owner, "/")
			st.Owner = strings.Join(parts[:len(parts)-1], "/") + "/1"
			if err := r.writePauseState(pr.p, *st); err != nil {
				t.Fatal(err)
			}
			next := newTestRuntime(t, cfg)
			switch via {
			case "status":
				got, err := next.ContainerStatus(ctx, pr.p, c)
				if err != nil || got.State != engine.ContainerRunning || got.Detail != "" {
					t.Errorf("status: %+v, %v", got, err)
				}
			case "start":
				if _, err := next.StartContainer(ctx, pr.p, c, engine.StartSpec{Command: pairWriter}); err != nil {
					t.Fatal(err)
				}
			case "pause":
				resume, err := next.PauseProject(ctx, pr.p, pr.cs)
				if err != nil {
					t.Fatal(err)
				}
				if err := resume(ctx); err != nil {
					t.Fatal(err)
				}
			}
			waitCounter(t, r, pr.p)
			if _, err := os.Stat(r.pausePath(pr.p)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("record of the dead pauser left: %v", err)
			}
		})
	}
	t.Run("operator pause kept", func(t *testing.T) {
		t.Parallel()
		pr, c := startPairWriter(t, r, "manual")
		ctx := t.Context()
		name := r.containerName(pr.p, c)
		if _, err := cli.ContainerPause(ctx, name, client.ContainerPauseOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ContainerStatus(ctx, pr.p, c); err != nil {
			t.Fatal(err)
		}
		// Not running, so not paused (nor unpaused) by a snapshot either.
		resume, err := r.PauseProject(ctx, pr.p, pr.cs)
		if err != nil {
			t.Fatal(err)
		}
		if err := resume(ctx); err != nil {
			t.Fatal(err)
		}
		ins, err := r.inspect(ctx, name)
		if err != nil || ins == nil || !ins.State.Paused {
			b, _ := json.Marshal(ins)
			t.Fatalf("a container paused by hand was unpaused: %s, %v", b, err)
		}
		// Stopping it works at once, paused or not.
		start := time.Now()
		if err := r.StopContainer(ctx, pr.p, c); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > cfg.StopTimeout+time.Second {
			t.Errorf("stopping a paused container took %v", took)
		}
	})
}
