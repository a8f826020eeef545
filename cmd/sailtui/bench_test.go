package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/sqlite"
	"github.com/sailtui/sailtui/engine"
)

// slowRuntime is a runtime whose projects exist and do nothing: the sweep benchmark measures the
// engine's scheduling, not a runtime.
type slowRuntime struct{}

func (slowRuntime) Mode() string                                        { return "bench" }
func (slowRuntime) EnsureProject(context.Context, engine.Project) error { return nil }
func (slowRuntime) StopContainer(context.Context, engine.Project, engine.Container) error {
	return nil
}
func (slowRuntime) StartContainer(context.Context, engine.Project, engine.Container, engine.StartSpec) (engine.ContainerStatus, error) {
	return engine.ContainerStatus{State: engine.ContainerRunning}, nil
}
func (slowRuntime) ContainerStatus(context.Context, engine.Project, engine.Container) (engine.ContainerStatus, error) {
	return engine.ContainerStatus{State: engine.ContainerStopped}, nil
}
func (slowRuntime) StopProject(context.Context, engine.Project, []engine.Container) error {
	return nil
}
func (slowRuntime) DestroyProject(context.Context, engine.Project, []engine.Container) error {
	return nil
}
func (slowRuntime) ProjectExists(context.Context, engine.Project) (bool, error) { return true, nil }
func (slowRuntime) ReadFile(context.Context, engine.Project, string, io.Writer) error {
	return engine.ErrNotFound
}
func (slowRuntime) WriteFile(context.Context, engine.Project, string, io.Reader) error { return nil }
func (slowRuntime) DeleteFile(context.Context, engine.Project, string) error           { return nil }
func (slowRuntime) ListFiles(context.Context, engine.Project, string) ([]engine.FileInfo, error) {
	return nil, nil
}
func (slowRuntime) Exec(context.Context, engine.Project, engine.Container, engine.ExecRequest) (engine.ExecResult, error) {
	return engine.ExecResult{}, nil
}
func (slowRuntime) Logs(context.Context, engine.Project, engine.Container, engine.LogOptions) (io.ReadCloser, error) {
	return io.NopCloser(nil), nil
}
func (slowRuntime) Describe(context.Context, engine.Project, []engine.Container) (string, error) {
	return "", nil
}

// slowVolumes takes `delay` to make each snapshot: the "runtime that takes 2 s per hibernate".
type slowVolumes struct{ delay time.Duration }

func (slowVolumes) Name() string { return "bench" }
func (v slowVolumes) Create(ctx context.Context, _ engine.Project, s engine.Snapshot, _ engine.ProgressFunc) (engine.Snapshot, error) {
	select {
	case <-time.After(v.delay):
	case <-ctx.Done():
		return s, ctx.Err()
	}
	s.Location, s.SizeBytes = s.ID, 1
	return s, nil
}
func (slowVolumes) WaitReady(_ context.Context, s engine.Snapshot) (engine.Snapshot, error) {
	return s, nil
}
func (slowVolumes) Restore(context.Context, engine.Project, engine.Snapshot, engine.ProgressFunc) error {
	return nil
}
func (slowVolumes) Delete(context.Context, engine.Snapshot) error { return nil }

// BenchmarkSweepWallTime: a sweep of 1,000 idle projects against a runtime that takes 2 s per
// hibernate, as a ratio to the ideal N × 2 s / concurrency (goal ≤ 1.15). SAILTUI_BENCH_PROJECTS
// and SAILTUI_BENCH_DELAY shrink it for a quick look.
func BenchmarkSweepWallTime(b *testing.B) {
	n, delay, conc := 1000, 2*time.Second, engine.DefaultSweepConcurrency
	if v := os.Getenv("SAILTUI_BENCH_PROJECTS"); v != "" {
		fmt.Sscan(v, &n)
	}
	if v := os.Getenv("SAILTUI_BENCH_DELAY"); v != "" {
		delay, _ = time.ParseDuration(v)
	}
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		eng, err := engine.New(engine.Config{Store: store, Runtime: slowRuntime{}, Volumes: slowVolumes{delay}, SweepConcurrency: conc})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if _, err := eng.CreateProject(ctx, engine.CreateRequest{Name: fmt.Sprintf("bench-%04d", i)}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		rep, err := eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: time.Now().Add(time.Hour)})
		wall := time.Since(start)
		b.StopTimer()
		if err != nil || len(rep.Hibernated) != n {
			b.Fatalf("sweep: %v, hibernated %d of %d, failed %v", err, len(rep.Hibernated), n, rep.Failed)
		}
		ideal := time.Duration(float64(n) * float64(delay) / float64(conc))
		ratio := wall.Seconds() / ideal.Seconds()
		b.ReportMetric(ratio, "x-ideal")
		b.ReportMetric(wall.Seconds(), "wall-s")
		fmt.Printf("sweep: %d projects, %s per hibernate, concurrency %d: wall %s vs ideal %s, ratio %.3fx (goal <= 1.15x)\n",
			n, delay, conc, wall.Round(time.Millisecond), ideal, ratio)
		store.Close()
	}
}
