package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// snapshotPauseReps is how many manual snapshots (and tar|zstd runs) each iteration measures,
// alternating which goes first; the best of each is kept, as in the archive benchmark.
const snapshotPauseReps = 3

// BenchmarkSnapshotPause measures what a manual snapshot of a running project costs the
// project: how long its containers stay paused (from the pause to the resume the engine
// reports) while the embedded default (local runtime, directory object store) archives the
// 20k-file tree, beside `tar -cf - . | zstd -1 -T0` of the same tree in the same run. The
// ratio is the pause over that baseline: the walk itself is all the pause should be. The
// read-back check of the archive comes after the resume and is not part of the pause.
func BenchmarkSnapshotPause(b *testing.B) {
	for _, tool := range []string{"sh", "tar", "zstd"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s not found on PATH (install the Debian package %q): %v", tool, tool, err)
		}
	}
	ctx := context.Background()
	state := b.TempDir()
	cfg := testDefaults()
	cfg.StateDir = state
	pt, err := openEngine(ctx, cfg, slog.New(slog.DiscardHandler), func(c *engine.Config) { c.StepHook = nil })
	if err != nil {
		b.Fatal(err)
	}
	defer pt.close()
	// The container keeps writing, as a dev server does; without the pause it would break
	// the snapshot now and then ("file changed while being archived").
	p, err := pt.eng.CreateProject(ctx, engine.CreateRequest{Name: "bench-pause", Containers: []engine.ContainerSpec{{
		Name: "app", Directory: ".",
		Command: `i=0; while :; do i=$((i+1)); echo $i > tick.tmp && mv -f tick.tmp tick; sleep 0.01; done`,
	}}})
	if err != nil {
		b.Fatal(err)
	}
	defer stopEverythingTB(b, pt, p)
	dir := pt.runtime.(archive.StorageDirs).StorageDir(p)
	files, payload := archivetest.GenerateTree(b, dir)
	if _, err := pt.eng.StartProject(ctx, p.Slug); err != nil {
		b.Fatal(err)
	}
	pauser, ok := pt.runtime.(engine.Pauser)
	if !ok {
		b.Fatal("the local runtime does not pause")
	}

	var (
		mu             sync.Mutex
		pausedAt       time.Time
		pause          time.Duration
		pausesSeen     int
		bestPause      = time.Duration(1<<63 - 1)
		bestTar        = bestPause
		bestSnapshot   = bestPause
		bestPauseAlone = bestPause
	)
	pctx := engine.WithProgress(ctx, func(pr engine.Progress) {
		mu.Lock()
		defer mu.Unlock()
		switch pr.Phase {
		case "pause":
			pausedAt = time.Now()
		case "resume":
			pause = time.Since(pausedAt)
			pausesSeen++
		}
	})
	theirs := filepath.Join(state, "theirs.tar.zst")
	tarCreate := func() {
		syscall.Sync()
		start := time.Now()
		cmd := exec.Command("sh", "-c", fmt.Sprintf("tar -cf - . | zstd -1 -T0 -q -f -o %q", theirs))
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tar|zstd: %v\n%s", err, out)
		}
		bestTar = min(bestTar, time.Since(start))
		_ = os.Remove(theirs)
	}
	snapshot := func() {
		syscall.Sync()
		start := time.Now()
		s, err := pt.eng.CreateSnapshot(pctx, p.Slug, "bench")
		if err != nil {
			b.Fatalf("manual snapshot: %v", err)
		}
		bestSnapshot = min(bestSnapshot, time.Since(start))
		mu.Lock()
		bestPause = min(bestPause, pause)
		mu.Unlock()
		// Free the timeline slot for the next round.
		if err := pt.eng.DeleteSnapshot(ctx, p.Slug, s.ID); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	for range b.N {
		for rep := range snapshotPauseReps {
			if rep%2 == 0 {
				snapshot()
				tarCreate()
			} else {
				tarCreate()
				snapshot()
			}
		}
		// The pause itself, with nothing done while paused: its fixed cost.
		for range snapshotPauseReps {
			start := time.Now()
			resume, err := pauser.PauseProject(ctx, p, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := resume(ctx); err != nil {
				b.Fatal(err)
			}
			bestPauseAlone = min(bestPauseAlone, time.Since(start))
		}
	}
	b.StopTimer()
	if pausesSeen != b.N*snapshotPauseReps {
		b.Fatalf("the engine reported %d pauses for %d manual snapshots", pausesSeen, b.N*snapshotPauseReps)
	}
	if st, err := pt.runtime.ContainerStatus(ctx, p, engine.Container{ProjectID: p.ID, Name: "app"}); err != nil || st.State != engine.ContainerRunning {
		b.Fatalf("the container does not run after the snapshots: %+v, %v", st, err)
	}
	ratio := float64(bestPause) / float64(bestTar)
	b.ReportMetric(float64(bestPause.Microseconds())/1000, "pause_ms")
	b.ReportMetric(ratio, "pause_vs_tar_ratio")
	b.ReportMetric(float64(bestTar.Microseconds())/1000, "tar_zstd_ms")
	b.ReportMetric(float64(bestPauseAlone.Microseconds())/1000, "pause_resume_only_ms")
	b.ReportMetric(float64(bestSnapshot.Microseconds())/1000, "snapshot_ms")
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	fmt.Printf("manual snapshot of a running project, tree %d files, %.0f MiB, %d CPUs, best of %d: containers paused %v vs tar|zstd -1 -T0 %v, ratio %.2fx; pause+resume with nothing in between %v; whole snapshot (with read-back) %v\n",
		files, float64(payload)/(1<<20), runtime.GOMAXPROCS(0), snapshotPauseReps,
		ms(bestPause), ms(bestTar), ratio, bestPauseAlone.Round(10*time.Microsecond), ms(bestSnapshot))
}

// stopEverythingTB stops the project's containers: a benchmark has no state-dir cleanup of
// its own (stopEverything takes a *testing.T).
func stopEverythingTB(tb testing.TB, pt *parts, p engine.Project) {
	cs, _ := pt.store.ListContainers(context.Background(), p.ID)
	if err := pt.runtime.StopProject(context.Background(), p, cs); err != nil {
		tb.Logf("stop %s: %v", p.Slug, err)
	}
}
