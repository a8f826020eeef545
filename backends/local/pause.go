package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sailtui/sailtui/backends/internal/pauserec"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/flock"
	"github.com/sailtui/sailtui/engine/hostfs"
)

var _ engine.Pauser = (*Runtime)(nil)

// PauseTimeout bounds how long PauseProject waits for every process of the project to stop
// after SIGSTOP. A process in uninterruptible sleep (a slow disk) stops only when its system
// call returns; one that does not stop in this time fails the pause rather than let a snapshot
// pretend to be point in time.
const PauseTimeout = 5 * time.Second

// pauseState is <RunDir>/<slug>/.pause.json: written before a project's groups are stopped and
// removed once they are continued, so a sailtui that finds it with its owner gone knows whose
// groups to continue. The dot keeps it out of containerNames.
type pauseState struct {
	pauserec.Hold
	Groups []pausedGroup `json:"groups"`
}

type pausedGroup struct {
	Container  string `json:"container"`
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

func (r *Runtime) pausePath(slug string) string { return filepath.Join(r.runDir(slug), ".pause.json") }
func (r *Runtime) pauseLockPath(slug string) string {
	return filepath.Join(r.runDir(slug), ".pause.lock")
}

// PauseProject stops the process group of every running container of p with SIGSTOP and waits
// until each of their threads is stopped, so nothing of the project writes while a snapshot
// walks its tree. resume continues them with SIGCONT.
//
// A pause never outlives this process: a watchdog process (a shell reading a pipe whose other
// end only this process holds) sends SIGCONT to the groups when the pipe closes, which the
// kernel does when this process dies, kill -9 included. Should the watchdog die as well, the
// pause is recorded in the run directory with its owner, and the next ContainerStatus,
// StartContainer or PauseProject of the project, in any sailtui, continues the groups of an
// owner that is gone (StopContainer continues any stopped group it stops).
//
// Processes of a container that left its process group (setsid, setpgid) are not paused: they
// are not stopped with it either.
func (r *Runtime) PauseProject(ctx context.Context, p engine.Project, cs []engine.Container) (func(context.Context) error, error) {
	resume, err := r.pauseProject(ctx, p, cs)
	if err != nil {
		return nil, fmt.Errorf("pause %s: %w", p.Slug, err)
	}
	return resume, nil
}

func (r *Runtime) pauseProject(ctx context.Context, p engine.Project, cs []engine.Container) (func(context.Context) error, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !supported {
		// No container process can run here (StartContainer refuses): nothing to pause.
		return pauserec.NoResume, nil
	}
	names, err := r.containerNames(p.Slug, cs)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(r.runDir(p.Slug)); errors.Is(err, fs.ErrNotExist) {
		return pauserec.NoResume, nil // never started anything
	}
	unlock, err := flock.Lock(ctx, r.pauseLockPath(p.Slug), true)
	if err != nil {
		return nil, fmt.Errorf("lock pause record: %w", err)
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	if held, err := r.healPauseLocked(p.Slug); err != nil {
		return nil, err
	} else if held != nil {
		return nil, held.Busy()
	}
	var groups []pausedGroup
	for _, name := range names {
		rec, err := readRecordFile(r.recordPath(p.Slug, name))
		if err != nil {
			return nil, err
		}
		// A container being stopped is left to its stop: stopping it would only delay that.
		if rec == nil || !rec.StoppedAt.IsZero() || !groupAlive(rec.PID, rec.StartTicks) {
			continue
		}
		groups = append(groups, pausedGroup{Container: name, PID: rec.PID, StartTicks: rec.StartTicks})
	}
	if len(groups) == 0 {
		return pauserec.NoResume, nil
	}
	// The watchdog and the record come before the first SIGSTOP: there is no moment at which a
	// group is stopped and nothing would continue it.
	watch, err := startPauseWatchdog(groups)
	if err != nil {
		return nil, fmt.Errorf("start pause watchdog: %w", err)
	}
	st := pauseState{Hold: pauserec.Take(), Groups: groups}
	if err := pauserec.Write(r.pausePath(p.Slug), st); err != nil {
		st.Release()
		watch.stop()
		return nil, err
	}
	// Not held during the pause: status reads of the project would wait for the whole walk.
	unlock()
	locked = false

	pp := &pausedProject{r: r, slug: p.Slug, state: st, watch: watch}
	if err := stopGroups(ctx, groups); err != nil {
		if rerr := pp.resume(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return pp.resume, nil
}

// stopGroups sends SIGSTOP to every group and waits until none of their processes runs. SIGSTOP
// is sent again at every look: a process that joined a group meanwhile (a fork in flight) is
// stopped too.
func stopGroups(ctx context.Context, groups []pausedGroup) error {
	pgids := make(map[int]bool, len(groups))
	for _, g := range groups {
		pgids[g.PID] = true
	}
	deadline := time.Now().Add(PauseTimeout)
	wait := 100 * time.Microsecond
	for {
		for _, g := range groups {
			if err := signalGroup(g.PID, g.StartTicks, syscall.SIGSTOP); err != nil {
				return fmt.Errorf("stop process group %d of %s: %w", g.PID, g.Container, err)
			}
		}
		pid, state, running := unstoppedMember(pgids)
		if !running {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d (state %c) did not stop within %s", pid, state, PauseTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the processes to stop: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// pausedProject is one pause taken by this process; resume undoes it once.
type pausedProject struct {
	r     *Runtime
	slug  string
	state pauseState
	watch *pauseWatchdog

	once sync.Once
	err  error
}

func (pp *pausedProject) resume(ctx context.Context) error {
	pp.once.Do(func() { pp.err = pp.doResume(ctx) })
	return pp.err
}

func (pp *pausedProject) doResume(ctx context.Context) error {
	var errs []error
	for _, g := range pp.state.Groups {
		if err := signalGroup(g.PID, g.StartTicks, syscall.SIGCONT); err != nil {
			errs = append(errs, fmt.Errorf("continue process group %d of %s: %w", g.PID, g.Container, err))
		}
	}
	// Only once the groups run again: until then the watchdog is what guards them.
	pp.watch.stop()
	pp.state.Release()
	if err := pp.r.clearPause(ctx, pp.slug, pp.state.Token); err != nil {
		// The groups run; a record left behind is cleared by whoever reads it after this
		// process is gone (continuing running groups changes nothing).
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resume %s: %w", pp.slug, err)
	}
	return nil
}

// clearPause removes the pause record if it is still the one of token.
func (r *Runtime) clearPause(ctx context.Context, slug, token string) error {
	unlock, err := flock.Lock(ctx, r.pauseLockPath(slug), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the project was destroyed meanwhile
	}
	if err != nil {
		return fmt.Errorf("lock pause record: %w", err)
	}
	defer unlock()
	st, err := pauserec.Read[pauseState](r.pausePath(slug))
	if err != nil || st == nil || st.Token != token {
		return err
	}
	return pauserec.Remove(r.pausePath(slug))
}

// healPause continues the groups of a pause whose owner is gone, and returns the pause that is
// still in progress, if any. Cheap when the project is not paused: one failed stat.
func (r *Runtime) healPause(ctx context.Context, slug string) (*pauseState, error) {
	if _, err := os.Stat(r.pausePath(slug)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	// The lock waits for a pause being set up or cleared; never for a pause being held.
	unlock, err := flock.Lock(ctx, r.pauseLockPath(slug), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock pause record: %w", err)
	}
	defer unlock()
	return r.healPauseLocked(slug)
}

func (r *Runtime) healPauseLocked(slug string) (*pauseState, error) {
	st, err := pauserec.Read[pauseState](r.pausePath(slug))
	if err != nil || st == nil {
		return nil, err
	}
	if st.Live() {
		return st, nil
	}
	var errs []error
	for _, g := range st.Groups {
		if err := signalGroup(g.PID, g.StartTicks, syscall.SIGCONT); err != nil {
			errs = append(errs, fmt.Errorf("continue process group %d of %s, paused by %s that is gone: %w", g.PID, g.Container, st.Owner, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return nil, pauserec.Remove(r.pausePath(slug))
}

// detail is what ContainerStatus says of a container held by a pause in progress.
func (st *pauseState) detail(name string) string {
	if st == nil {
		return ""
	}
	for _, g := range st.Groups {
		if g.Container == name {
			return st.Detail()
		}
	}
	return ""
}
