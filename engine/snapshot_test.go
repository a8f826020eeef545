package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

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

// Invariant 10: a manual snapshot, and the safety snapshot of a restore, of a project whose
// container rewrites its files all the time hold the tree of one moment, and none fails because
// a file changed under the walk.
func TestSnapshotPointInTime(t *testing.T) {
	state := t.TempDir()
	pt := openTest(t, state, "test-a")
	dirs := pt.dirs()
	enginetest.SnapshotsPointInTime(t, pt.eng, dirs, pt.objects, enginetest.PointInTimeProject(t, pt.eng, dirs, "busy"), 8, 2)
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
	ctx := t.Context()
	dirs := pt.dirs()
	p := enginetest.PointInTimeProject(t, pt.eng, dirs, "resumed")
	pid := writerPID(t, pt, p)

	// pausedDuringCreate checks, from inside Create, that the writer is frozen.
	pausedDuringCreate := func() error {
		before := enginetest.WriterCounter(dirs, p)
		time.Sleep(100 * time.Millisecond)
		// D: the shell waits for a vfork child that is itself stopped before its exec.
		if s := procStateOf(pid); s != 'T' && s != 'D' {
			return fmt.Errorf("writer is %c during the snapshot, want T (stopped)", s)
		}
		if after := enginetest.WriterCounter(dirs, p); after != before {
			return fmt.Errorf("writer counter moved from %d to %d during the snapshot", before, after)
		}
		return nil
	}

	t.Run("ok", func(t *testing.T) {
		if _, err := pt.eng.CreateSnapshot(ctx, p.Slug, "ok"); err != nil {
			t.Fatal(err)
		}
		enginetest.WaitWriter(t, dirs, p, 5*time.Second)
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
		enginetest.WaitWriter(t, dirs, p, 5*time.Second)
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
		enginetest.WaitWriter(t, dirs, p, 5*time.Second)
	})
	if got := writerPID(t, pt, p); got != pid {
		t.Errorf("the writer was restarted (pid %d, was %d): it should only have been paused", got, pid)
	}
}
