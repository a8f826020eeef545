package local

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// sampleWindow is how long Usage waits for a second reading of a container it has no recent
// reading of (the first call of a console, every call of the CLI).
const sampleWindow = 500 * time.Millisecond

var _ engine.UsageReader = (*Runtime)(nil)

// Usage implements engine.UsageReader from /proc: the CPU time and resident memory of the
// live processes of each running container's process group (everything its command started,
// unless it left the group), in one pass over /proc. Resident memory is the sum of their RSS,
// so pages they share count once per process, as top's RES does.
func (r *Runtime) Usage(ctx context.Context, p engine.Project, cs []engine.Container) (map[string]engine.ContainerUsage, error) {
	if !supported {
		return nil, fmt.Errorf("CPU and memory %w: %w", engine.ErrNotAvailable, errUnsupportedOS())
	}
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return nil, err
	}
	groups := map[string]*record{}
	for _, c := range cs {
		if err := hostfs.CheckName("container name", c.Name); err != nil {
			return nil, err
		}
		rec, err := readRecordFile(r.recordPath(p.Slug, c.Name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		if rec != nil && groupAlive(rec.PID, rec.StartTicks) {
			groups[c.Name] = rec
		}
	}
	out := make(map[string]engine.ContainerUsage, len(groups))
	if len(groups) == 0 {
		return out, nil
	}
	first := time.Now()
	missing, err := r.readRates(p, groups, out)
	if err != nil || len(missing) == 0 {
		return out, err
	}
	// No recent reading of these to take a rate from: read them again shortly.
	t := time.NewTimer(sampleWindow - time.Since(first))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	_, err = r.readRates(p, missing, out)
	return out, err
}

// readRates reads the groups once and fills out for those whose CPU rate the reading gives;
// it returns the groups it gave none for (no earlier reading, or one too recent).
func (r *Runtime) readRates(p engine.Project, groups map[string]*record, out map[string]engine.ContainerUsage) (map[string]*record, error) {
	pgids := make(map[int]bool, len(groups))
	for _, rec := range groups {
		pgids[rec.PID] = true
	}
	at := time.Now()
	sums, err := readGroupUsage(pgids)
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	missing := map[string]*record{}
	for name, rec := range groups {
		g := sums[rec.PID]
		if g.procs == 0 {
			continue // ended meanwhile
		}
		key := p.Slug + "/" + name + "/" + strconv.Itoa(rec.PID) + "/" + strconv.FormatUint(rec.StartTicks, 10)
		cores, ok := r.cpu.Rate(key, at, g.cpu)
		if !ok {
			missing[name] = rec
			continue
		}
		out[name] = engine.ContainerUsage{CPU: cores, Memory: g.rss}
	}
	return missing, nil
}
