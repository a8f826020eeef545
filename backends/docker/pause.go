package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/internal/pauserec"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

var _ engine.Pauser = (*Runtime)(nil)

// pausedDirName holds a record per project whose containers this runtime paused:
// <StateDir>/docker-paused/<slug>.json, written before the first pause and removed after the
// last unpause. Docker keeps a paused container paused forever; the record is how a sailtui that
// comes after one that died mid-snapshot knows the pause is a leftover to undo, and not one an
// operator made with `docker pause`.
const pausedDirName = "docker-paused"

type pauseState struct {
	pauserec.Hold
	Containers []string `json:"containers"` // Docker container ids
}

func (r *Runtime) pausePath(p engine.Project) string {
	return filepath.Join(r.cfg.StateDir, pausedDirName, p.Slug+".json")
}

// PauseProject freezes every running Docker container of the project (docker pause: the
// cgroup freezer; the call returns once the container is frozen), so nothing in the project
// writes while a snapshot walks its files. resume unpauses them.
//
// A container the runtime did not pause (one an operator paused by hand) is left as it is, and
// so is one that stopped meanwhile. A pause whose sailtui died before resuming is undone by the
// next ContainerStatus, StartContainer or PauseProject of the project in a sailtui on the same
// state directory (StopContainer unpauses any paused container it stops).
func (r *Runtime) PauseProject(ctx context.Context, p engine.Project, cs []engine.Container) (func(context.Context) error, error) {
	resume, err := r.pauseProject(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("pause %s: %w", p.Slug, err)
	}
	return resume, nil
}

func (r *Runtime) pauseProject(ctx context.Context, p engine.Project) (func(context.Context) error, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.pauseMu.Lock()
	defer r.pauseMu.Unlock()
	if held, err := r.healPauseLocked(ctx, p); err != nil {
		return nil, err
	} else if held != nil {
		return nil, held.Busy()
	}
	list, err := r.projectContainers(ctx, p)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range list {
		if c.State == container.StateRunning {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		return pauserec.NoResume, nil
	}
	st := pauseState{Hold: pauserec.Take(), Containers: ids}
	if err := r.writePauseState(p, st); err != nil {
		st.Release()
		return nil, err
	}
	pp := &pausedProject{r: r, p: p, hold: st.Hold}
	errs := make([]error, len(ids))
	paused := make([]bool, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			_, err := r.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
			switch {
			case err == nil:
				paused[i] = true
			case cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err):
				// Removed, stopped or paused by someone else since the list: not running, or
				// not ours to unpause.
			default:
				errs[i] = fmt.Errorf("pause container %s: %w", id, err)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		if paused[i] {
			pp.ids = append(pp.ids, id)
		}
	}
	err = errors.Join(errs...)
	if err == nil && len(pp.ids) < len(ids) {
		// A container paused by someone else meanwhile must not be unpaused by a healer.
		st.Containers = pp.ids
		err = r.writePauseState(p, st)
	}
	if err != nil {
		if rerr := pp.doResume(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return pp.resume, nil
}

// pausedProject is one pause taken by this runtime; resume undoes it once.
type pausedProject struct {
	r    *Runtime
	p    engine.Project
	hold pauserec.Hold
	ids  []string

	once sync.Once
	err  error
}

func (pp *pausedProject) resume(ctx context.Context) error {
	pp.once.Do(func() {
		pp.r.pauseMu.Lock()
		defer pp.r.pauseMu.Unlock()
		pp.err = pp.doResume(ctx)
	})
	return pp.err
}

// doResume unpauses and, when all are running again, drops the record; with pauseMu held.
func (pp *pausedProject) doResume(ctx context.Context) error {
	err := pp.r.unpause(ctx, pp.ids)
	// Failed or not, the pause is over for this process: the record, kept on a failure, is
	// now a leftover that the next look at the project's containers tries again.
	pp.hold.Release()
	if err != nil {
		return fmt.Errorf("resume %s: %w", pp.p.Slug, err)
	}
	st, err := pp.r.readPauseState(pp.p)
	if err == nil && st != nil && st.Token == pp.hold.Token {
		err = pauserec.Remove(pp.r.pausePath(pp.p))
	}
	if err != nil {
		return fmt.Errorf("resume %s: %w", pp.p.Slug, err)
	}
	return nil
}

// unpause unpauses the containers, concurrently; one that is gone or no longer paused is fine.
func (r *Runtime) unpause(ctx context.Context, ids []string) error {
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = r.unpauseContainer(ctx, id) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// unpauseWait bounds how long unpauseContainer waits for the daemon to report the container
// running again.
const unpauseWait = 10 * time.Second

// unpauseContainer unpauses one container and returns once the daemon reports it not paused.
// The daemon resumes the task before it updates the container's state (it does that on
// containerd's resume event), so right after a successful unpause an inspect may still say
// paused, and a second unpause is refused by containerd with "cannot resume a running
// process". Both are the same fact: the container runs. A container that is gone is fine too.
func (r *Runtime) unpauseContainer(ctx context.Context, id string) error {
	_, err := r.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	if err != nil && (cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err)) {
		return nil
	}
	deadline := time.Now().Add(unpauseWait)
	for {
		ins, ierr := r.inspect(ctx, id)
		switch {
		case ierr != nil:
			return fmt.Errorf("unpause container %s: %w", id, errors.Join(err, ierr))
		case ins == nil || ins.State == nil || !ins.State.Paused:
			return nil
		case err == nil && time.Now().Before(deadline):
			// Unpaused; the daemon's state follows.
		default:
			if err == nil {
				err = fmt.Errorf("still paused %s after the daemon accepted the unpause", unpauseWait)
			}
			return fmt.Errorf("unpause container %s: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("unpause container %s: %w", id, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (r *Runtime) writePauseState(p engine.Project, st pauseState) error {
	if err := os.MkdirAll(filepath.Dir(r.pausePath(p)), 0o700); err != nil {
		return fmt.Errorf("record pause: %w", err)
	}
	return pauserec.Write(r.pausePath(p), st)
}

func (r *Runtime) readPauseState(p engine.Project) (*pauseState, error) {
	return pauserec.Read[pauseState](r.pausePath(p))
}

// healPauseLocked unpauses what a sailtui that is gone left paused, and returns the pause still
// in progress, if any; with pauseMu held.
func (r *Runtime) healPauseLocked(ctx context.Context, p engine.Project) (*pauseState, error) {
	st, err := r.readPauseState(p)
	if err != nil || st == nil {
		return nil, err
	}
	if st.Live() {
		return st, nil
	}
	if err := r.unpause(context.WithoutCancel(ctx), st.Containers); err != nil {
		return nil, fmt.Errorf("undo the pause left by %s: %w", st.Owner, err)
	}
	return nil, pauserec.Remove(r.pausePath(p))
}

// settlePause looks at a container found paused: a pause left behind by a sailtui that is gone
// is undone (and the container inspected again), and a container held by a snapshot in
// progress gets the detail that says so. A container paused by someone else is left alone.
func (r *Runtime) settlePause(ctx context.Context, p engine.Project, name string, ins *container.InspectResponse) (*container.InspectResponse, string, error) {
	if ins == nil || ins.State == nil || !ins.State.Paused || r.owns(p, ins) != nil {
		return ins, "", nil
	}
	r.pauseMu.Lock()
	before, err := r.readPauseState(p)
	var held *pauseState
	if err == nil {
		held, err = r.healPauseLocked(ctx, p)
	}
	r.pauseMu.Unlock()
	switch {
	case err != nil:
		return nil, "", err
	case held != nil && slices.Contains(held.Containers, ins.ID):
		return ins, held.Detail(), nil
	case held == nil && before != nil && slices.Contains(before.Containers, ins.ID):
		ins, err = r.inspect(ctx, name)
		return ins, "", err
	}
	return ins, "", nil
}
