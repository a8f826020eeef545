package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// ContainerUsage is what one running container uses, as its runtime measures it.
type ContainerUsage struct {
	// CPU is processor time per second of wall time, in cores: 0.5 is half of one core, 2 is
	// two cores fully (docker stats and top show it as 50% and 200%).
	CPU float64 `json:"cpu_cores"`
	// Memory is resident memory in bytes: the processes' RSS (local), the cgroup's usage less
	// its inactive file cache (docker, as docker stats counts it), the working set (kubernetes).
	Memory int64 `json:"memory_bytes"`
	// MemoryLimit is the most memory the container may use, when the runtime knows one
	// (docker: its cgroup's limit, the host's memory when none was set); 0 otherwise.
	MemoryLimit int64 `json:"memory_limit_bytes,omitempty"`
}

// CPUText is CPU as tables show it (the console and the CLI alike): percent of one core, with
// a decimal below 10%.
func (u ContainerUsage) CPUText() string {
	pct := u.CPU * 100
	if pct < 9.95 {
		return strconv.FormatFloat(pct, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(pct, 'f', 0, 64) + "%"
}

// MemoryText is Memory as tables show it: binary units in at most four characters ("512K",
// "45M", "1.2G").
func (u ContainerUsage) MemoryText() string {
	v, units := float64(u.Memory), "BKMGTP"
	i := 0
	// 1000 and up goes to the next unit, so the figure stays within three digits.
	for v >= 999.5 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i > 0 && v < 9.95 {
		return strconv.FormatFloat(v, 'f', 1, 64) + units[i:i+1]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + units[i:i+1]
}

// Usage measures what the running containers of a project use now (see UsageReader), by
// container name; a container without an entry was not measured (it does not run). The
// error wraps ErrNotAvailable when the runtime cannot measure at all, and reads as a note for
// the operator: "CPU and memory not available: " and why.
func (e *Engine) Usage(ctx context.Context, ref string) (map[string]ContainerUsage, error) {
	ur, ok := e.runtime.(UsageReader)
	if !ok {
		return nil, fmt.Errorf("CPU and memory %w: the %s runtime does not measure them", ErrNotAvailable, e.runtime.Mode())
	}
	p, err := e.Project(ctx, ref)
	if err != nil {
		return nil, err
	}
	if p.Status != StatusActive && p.Status != StatusRestoring {
		return map[string]ContainerUsage{}, nil // nothing of it runs
	}
	cs, err := e.store.ListContainers(ctx, p.ID)
	if err != nil {
		return nil, fmt.Errorf("list containers of %s: %w", p.Slug, err)
	}
	run := cs[:0]
	for _, c := range cs {
		if c.Runs() {
			run = append(run, c)
		}
	}
	if len(run) == 0 {
		return map[string]ContainerUsage{}, nil
	}
	u, err := ur.Usage(ctx, p, run)
	if errors.Is(err, ErrNotAvailable) {
		return nil, err // the runtime's reason, which reads as it is ("CPU and memory not available: ...")
	}
	if err != nil {
		return nil, fmt.Errorf("resource use of %s: %w", p.Slug, err)
	}
	return u, nil
}
