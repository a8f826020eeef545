package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// pairWriter is a container that never stops changing its tree, as a dev server rewriting its
// build output does: every round it renames a new counter into a, then the same counter into z,
// and rewrites big in place (truncate, then 1 MiB). At any one moment z <= a <= z+1 holds; a
// snapshot that is point in time shows exactly that. One that walks the tree while the loop
// runs reads a before the thousands of files of m/ and z after them, many rounds later, or
// has big change under it ("file shrank/grew while being archived").
const pairWriter = `i=0
while :; do
  i=$((i+1))
  echo $i > a.tmp && mv -f a.tmp a
  echo $i > z.tmp && mv -f z.tmp z
  cp big.seed big
done`

// projectDirs is where the engine's runtime keeps a project's tree on this machine.
type projectDirs func(engine.Project) string

func dirsOf(rt engine.Runtime) projectDirs {
	return rt.(archive.StorageDirs).StorageDir
}

// pointInTimeProject creates a project whose container runs pairWriter beside a tree large
// enough for the walk to take a while, and starts it.
func pointInTimeProject(t *testing.T, eng *engine.Engine, dirs projectDirs, name string) engine.Project {
	t.Helper()
	ctx := t.Context()
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: name, Owner: "tester",
		Containers: []engine.ContainerSpec{{Name: "writer", Directory: ".", Command: pairWriter}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := dirs(p)
	filler := strings.Repeat("package m // filler between a and z\n", 100)
	for i := range 3000 {
		sub := filepath.Join(dir, "m", fmt.Sprintf("d%02d", i/100))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.go", i)), []byte(filler), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seed := make([]byte, 1<<20)
	for i := range seed {
		seed[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.seed"), seed, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.StartProject(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	if p, err = eng.Project(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	waitWriter(t, dirs, p, 20*time.Second)
	return p
}

// writerCounter reads the live counter of a (0 while it is being replaced or not there yet).
func writerCounter(dirs projectDirs, p engine.Project) int {
	b, err := os.ReadFile(filepath.Join(dirs(p), "a"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// waitWriter fails the test unless the writer's counter moves within d: the container runs.
func waitWriter(t *testing.T, dirs projectDirs, p engine.Project, d time.Duration) {
	t.Helper()
	first := writerCounter(dirs, p)
	deadline := time.Now().Add(d)
	for writerCounter(dirs, p) <= first {
		if time.Now().After(deadline) {
			t.Fatalf("the writer container does not run: its counter stays at %d", first)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writerPID is the pid of the writer's process group (the container's recorded leader).
func writerPID(t *testing.T, pt *parts, p engine.Project) int {
	t.Helper()
	st, err := pt.runtime.ContainerStatus(t.Context(), p, engine.Container{ProjectID: p.ID, Name: "writer"})
	if err != nil || st.State != engine.ContainerRunning {
		t.Fatalf("writer status: %+v, %v", st, err)
	}
	return st.PID
}

// procStateOf is the state letter of /proc/<pid>/stat: 'T' for a stopped process.
func procStateOf(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return '?'
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) == 0 || len(f[0]) != 1 {
		return '?'
	}
	return f[0][0]
}

// archivedPair reads a and z out of a snapshot's archive in the directory object store.
func archivedPair(t *testing.T, state string, s engine.Snapshot) (a, z int) {
	t.Helper()
	f, err := os.Open(filepath.Join(state, "objects", filepath.FromSlash(s.Location)))
	if err != nil {
		t.Fatalf("open archive of %s: %v", s.ID, err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	a, z = -1, -1
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read archive of %s: %v", s.ID, err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch name {
		case "a", "z":
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s in %s holds %q", name, s.ID, b)
			}
			if name == "a" {
				a = n
			} else {
				z = n
			}
		}
	}
	return a, z
}

func checkPointInTime(t *testing.T, state string, s engine.Snapshot) {
	t.Helper()
	a, z := archivedPair(t, state, s)
	if a < 0 || z < 0 || z > a || a > z+1 {
		t.Errorf("snapshot %s is not point in time: a=%d z=%d, want z <= a <= z+1", s.ID, a, z)
	}
}

// Invariant 10: a manual snapshot, and the safety snapshot of a restore, of a project whose
// container rewrites its files all the time hold the tree of one moment, and none fails because
// a file changed under the walk.
func TestSnapshotPointInTime(t *testing.T) {
	state := t.TempDir()
	pt := openTest(t, state, "test-a")
	t.Cleanup(func() { stopEverything(t, state) })
	dirs := dirsOf(pt.runtime)
	snapshotsPointInTime(t, pt.eng, dirs, state, pointInTimeProject(t, pt.eng, dirs, "busy"), 8, 2)
}

// The same in docker mode: docker pause instead of SIGSTOP, the tree in a host directory.
func TestDockerSnapshotPointInTime(t *testing.T) {
	dcli := dockertest.Client(t)
	img := dockertest.Image(t, dcli)
	tok := dockertest.Token(t, dcli)
	state := t.TempDir()
	de := openDockerEngine(t, state, img, "sailtui-"+tok, nil)
	slug := "busy-" + randSuffix(t)
	t.Cleanup(func() { dockertest.RemoveLabelled(t, dcli, "sailtui.project="+slug) })
	dirs := dirsOf(de.runtime)
	snapshotsPointInTime(t, de.eng, dirs, state, pointInTimeProject(t, de.eng, dirs, slug), 4, 1)
}

// snapshotsPointInTime takes manual snapshots of the running project, then restores over it
// (each taking a safety snapshot of the live project), and checks every one.
func snapshotsPointInTime(t *testing.T, eng *engine.Engine, dirs projectDirs, state string, p engine.Project, rounds, restores int) {
	t.Helper()
	ctx := t.Context()

	var phases []string
	pctx := engine.WithProgress(ctx, func(pr engine.Progress) {
		if pr.Phase == "pause" || pr.Phase == "resume" {
			phases = append(phases, pr.Phase)
		}
	})
	var failed []string
	for i := range rounds {
		s, err := eng.CreateSnapshot(pctx, p.Slug, fmt.Sprintf("round %d", i))
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		checkPointInTime(t, state, s)
		waitWriter(t, dirs, p, 5*time.Second)
		if i < rounds-1 {
			if err := eng.DeleteSnapshot(ctx, p.Slug, s.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d manual snapshots of the running project failed:\n%s", len(failed), rounds, strings.Join(failed, "\n"))
	}
	if want := 2 * rounds; len(phases) != want || phases[0] != "pause" || phases[1] != "resume" {
		t.Errorf("progress phases %v, want pause/resume around each of the %d snapshots", phases, rounds)
	}

	// The safety snapshot of a restore over the live project is taken the same way.
	snaps, err := eng.Snapshots(ctx, p.Slug, false)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("timeline: %v, %v", snaps, err)
	}
	for range restores {
		res, err := eng.RestoreSnapshot(ctx, p.Slug, snaps[0].ID)
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		if res.Safety.ID == "" {
			t.Fatal("restore over the live project took no safety snapshot")
		}
		checkPointInTime(t, state, res.Safety)
		// The restore starts the writer again on the restored tree.
		waitWriter(t, dirs, p, 10*time.Second)
	}
}

// hookVolumes runs create, when set, in place of the archive: a Create that fails or hangs
// while the engine holds the project's containers paused.
type hookVolumes struct {
	engine.Volumes
	create atomic.Pointer[func(context.Context) error]
}

func (v *hookVolumes) Create(ctx context.Context, p engine.Project, s engine.Snapshot) (engine.Snapshot, error) {
	if h := v.create.Load(); h != nil {
		return s, (*h)(ctx)
	}
	return v.Volumes.Create(ctx, p, s)
}

// After a manual snapshot the containers run again, whether the snapshot succeeded, failed, or
// its caller gave up on it (cancelled context) in the middle of the walk.
func TestSnapshotResumesContainers(t *testing.T) {
	state := t.TempDir()
	hv := &hookVolumes{}
	pt := openTest(t, state, "test-a", func(c *engine.Config) { hv.Volumes = c.Volumes; c.Volumes = hv })
	t.Cleanup(func() { stopEverything(t, state) })
	ctx := t.Context()
	dirs := dirsOf(pt.runtime)
	p := pointInTimeProject(t, pt.eng, dirs, "resumed")
	pid := writerPID(t, pt, p)

	// pausedDuringCreate checks, from inside Create, that the writer is frozen.
	pausedDuringCreate := func() error {
		before := writerCounter(dirs, p)
		time.Sleep(100 * time.Millisecond)
		// D: the shell waits for a vfork child that is itself stopped before its exec.
		if s := procStateOf(pid); s != 'T' && s != 'D' {
			return fmt.Errorf("writer is %c during the snapshot, want T (stopped)", s)
		}
		if after := writerCounter(dirs, p); after != before {
			return fmt.Errorf("writer counter moved from %d to %d during the snapshot", before, after)
		}
		return nil
	}

	t.Run("ok", func(t *testing.T) {
		if _, err := pt.eng.CreateSnapshot(ctx, p.Slug, "ok"); err != nil {
			t.Fatal(err)
		}
		waitWriter(t, dirs, p, 5*time.Second)
	})
	t.Run("create fails", func(t *testing.T) {
		fail := func(context.Context) error {
			if err := pausedDuringCreate(); err != nil {
				return err
			}
			return errors.New("object store is down")
		}
		hv.create.Store(&fail)
		defer hv.create.Store(nil)
		_, err := pt.eng.CreateSnapshot(ctx, p.Slug, "fails")
		if err == nil || !strings.Contains(err.Error(), "object store is down") {
			t.Fatalf("snapshot: got %v, want the store's error (a wrong one means the writer was not paused)", err)
		}
		waitWriter(t, dirs, p, 5*time.Second)
		if s := procStateOf(pid); s == 'T' {
			t.Fatal("writer still stopped after the failed snapshot")
		}
	})
	t.Run("caller gives up", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		hang := func(hctx context.Context) error {
			if err := pausedDuringCreate(); err != nil {
				return err
			}
			cancel()
			<-hctx.Done()
			return hctx.Err()
		}
		hv.create.Store(&hang)
		defer hv.create.Store(nil)
		if _, err := pt.eng.CreateSnapshot(cctx, p.Slug, "cancelled"); !errors.Is(err, context.Canceled) {
			t.Fatalf("snapshot: got %v, want context.Canceled", err)
		}
		waitWriter(t, dirs, p, 5*time.Second)
	})
	if got := writerPID(t, pt, p); got != pid {
		t.Errorf("the writer was restarted (pid %d, was %d): it should only have been paused", got, pid)
	}
}
