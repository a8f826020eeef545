// Package containers holds what the runtimes that keep a project's containers themselves (local
// and docker) do alike over a project's containers: naming all of them, stopping all of them,
// and the checks and error words around starting and stopping one.
package containers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// Start is the StartContainer of both runtimes around their own start: a failure names the
// container.
func Start(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec,
	start func(context.Context, engine.Project, engine.Container, engine.StartSpec) (engine.ContainerStatus, error)) (engine.ContainerStatus, error) {
	st, err := start(ctx, p, c, spec)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s/%s: %w", p.Slug, c.Name, err)
	}
	return st, nil
}

// Stop is the StopContainer of both runtimes around their own stop: the project's slug, which
// names the container's files and Docker name, is checked first, and a failure names the
// container.
func Stop(ctx context.Context, p engine.Project, c engine.Container, stop func(context.Context, engine.Project, engine.Container) error) error {
	err := hostfs.CheckName("project slug", p.Slug)
	if err == nil {
		err = stop(ctx, p, c)
	}
	if err != nil {
		return fmt.Errorf("stop %s/%s: %w", p.Slug, c.Name, err)
	}
	return nil
}

// Names is the union of the containers in cs and the names the runtime holds for the project
// (held), sorted: what a stop or a describe of the whole project covers, so a container the
// caller forgot about is not left out.
func Names(cs []engine.Container, held []string) []string {
	set := make(map[string]bool, len(cs)+len(held))
	for _, c := range cs {
		set[c.Name] = true
	}
	for _, n := range held {
		set[n] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// StopAll stops the named containers of p with stop, all at once (each stop may wait the
// runtime's stop timeout for its process), and joins what failed.
func StopAll(ctx context.Context, p engine.Project, names []string, stop func(context.Context, engine.Project, engine.Container) error) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			errs[i] = stop(ctx, p, engine.Container{ProjectID: p.ID, Name: name})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
