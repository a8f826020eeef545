package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// usageParallel bounds the stats requests of one Usage in flight at once.
const usageParallel = 8

var _ engine.UsageReader = (*Runtime)(nil)

// Usage implements engine.UsageReader with the Engine's stats API, a few containers at a time.
// Each running container of the project is read once: one sample (one-shot) whose CPU rate is
// taken since the reading of the previous call, or, for a container without a recent reading,
// the daemon's pair of samples a second apart. (A daemon may answer a one-shot only at the next
// tick of its one-second stats collector, as 20.10 does: a call can take a second either way.) Memory is counted as docker stats counts it: the cgroup's usage less its inactive
// file cache.
func (r *Runtime) Usage(ctx context.Context, p engine.Project, cs []engine.Container) (map[string]engine.ContainerUsage, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(cs))
	for _, c := range cs {
		want[c.Name] = true
	}
	res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{
		Filters: client.Filters{}.Add("label", LabelProjectID+"="+p.ID).Add("status", "running"),
	})
	if err != nil {
		return nil, fmt.Errorf("list running containers: %w", err)
	}
	out := map[string]engine.ContainerUsage{}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	sem := make(chan struct{}, usageParallel)
	for _, s := range res.Items {
		name := s.Labels[LabelContainer]
		if !want[name] {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			u, err := r.containerUsage(ctx, s.ID)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			out[name] = u
		})
	}
	wg.Wait()
	if len(out) == 0 && len(errs) > 0 {
		// Not one answer: the daemon's trouble, not a container that ended meanwhile.
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// containerUsage reads one container's stats: one sample when a reading of the previous call
// is kept to take the rate from, else the daemon's pair of samples.
func (r *Runtime) containerUsage(ctx context.Context, id string) (engine.ContainerUsage, error) {
	pair := !r.cpu.Has(id, time.Now())
	st, err := r.stats(ctx, id, pair)
	if err != nil {
		return engine.ContainerUsage{}, err
	}
	// Kept as the base of the next call's rate, whichever gives this one.
	cores, ok := r.cpu.Rate(id, st.Read, time.Duration(st.CPUStats.CPUUsage.TotalUsage))
	if pair || !ok {
		cores, ok = pairRate(st)
	}
	if !ok {
		return engine.ContainerUsage{}, errors.New("the daemon gave no CPU reading to take a rate from")
	}
	return engine.ContainerUsage{CPU: cores, Memory: memoryInUse(st.MemoryStats), MemoryLimit: int64(st.MemoryStats.Limit)}, nil
}

// stats is one stats answer, with the daemon's previous sample when pair (a second's wait).
func (r *Runtime) stats(ctx context.Context, id string, pair bool) (*container.StatsResponse, error) {
	res, err := r.cli.ContainerStats(ctx, id, client.ContainerStatsOptions{IncludePreviousSample: pair})
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("read stats: %w", err)
	}
	return &st, nil
}

// pairRate is the cores used between the daemon's previous sample and this one.
func pairRate(st *container.StatsResponse) (float64, bool) {
	dt := st.Read.Sub(st.PreRead)
	if st.PreRead.IsZero() || dt <= 0 {
		return 0, false
	}
	used := float64(st.CPUStats.CPUUsage.TotalUsage) - float64(st.PreCPUStats.CPUUsage.TotalUsage)
	return max(used, 0) / float64(dt), true
}

// memoryInUse is the cgroup's memory less its inactive file cache, which the kernel drops at
// need: what docker stats shows (cgroup v1 names it total_inactive_file, v2 inactive_file).
func memoryInUse(m container.MemoryStats) int64 {
	if v, ok := m.Stats["total_inactive_file"]; ok && v < m.Usage {
		return int64(m.Usage - v)
	}
	if v := m.Stats["inactive_file"]; v < m.Usage {
		return int64(m.Usage - v)
	}
	return int64(m.Usage)
}
