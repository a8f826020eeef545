package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sailtui/sailtui/backends/internal/containers"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/flock"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// record is what a start leaves in <RunDir>/<slug>/<container>.json for whoever looks next.
type record struct {
	PID int `json:"pid"`
	// StartTicks is field 22 of /proc/<pid>/stat when the process was started: a pid whose
	// start time differs is another process.
	StartTicks   uint64    `json:"start_ticks"`
	Port         int       `json:"port"`
	DeclaredPort int       `json:"declared_port,omitempty"`
	Command      string    `json:"command"`
	Dir          string    `json:"dir"`
	StartedAt    time.Time `json:"started_at"`
	// StoppedAt is set by StopContainer before it signals, so an exit caused by the stop reads
	// as "stopped" rather than "exited".
	StoppedAt time.Time `json:"stopped_at,omitzero"`
	// ExitCode is known only when the process that started the container saw it end.
	ExitCode *int      `json:"exit_code,omitempty"`
	ExitedAt time.Time `json:"exited_at,omitzero"`
	// CapturePID and CaptureTicks are the capture process writing the output to the log.
	CapturePID   int    `json:"capture_pid,omitempty"`
	CaptureTicks uint64 `json:"capture_start_ticks,omitempty"`
}

func readRecordFile(path string) (*record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("run record %s: %w", path, err)
	}
	return &rec, nil
}

func (r *Runtime) writeRecord(slug, name string, rec *record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return hostfs.WriteFileAtomic(r.recordPath(slug, name), append(b, '\n'), 0o600)
}

// portPath is where the port container name last had is kept: beside its log, which a
// hibernation keeps (it removes the run records) and a deletion drops (DropLogs), so a wake
// gives the old ports back, as docker does, and the URLs an operator has open work again.
func (r *Runtime) portPath(slug, name string) string {
	return filepath.Join(r.logDir(slug), name+".port")
}

// keptPort is the port container name last had; 0 when none was kept.
func (r *Runtime) keptPort(slug, name string) int {
	b, err := os.ReadFile(r.portPath(slug, name))
	if err != nil {
		return 0
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || port <= 0 || port > 65535 {
		return 0 // a damaged record only loses the port
	}
	return port
}

// keepPort records the port of a started container (under its lock). A port not kept is only
// a different URL after the next wake, not a failed start.
func (r *Runtime) keepPort(slug, name string, port int) {
	_ = hostfs.WriteFileAtomic(r.portPath(slug, name), []byte(strconv.Itoa(port)+"\n"), 0o600)
}

// lock serialises changes to one container's record across goroutines and processes.
func (r *Runtime) lock(ctx context.Context, slug, name string) (func(), error) {
	unlock, err := flock.Lock(ctx, r.lockPath(slug, name), true)
	if err != nil {
		return nil, fmt.Errorf("lock run record: %w", err)
	}
	return unlock, nil
}

// containerWorkDir validates the container's directory and returns it as a host path. It must
// exist: running a startup command in a directory made up on the spot only hides a missing
// template.
func (r *Runtime) containerWorkDir(p engine.Project, c engine.Container, sub string) (string, error) {
	dir, err := r.projectDir(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("project directory does not exist: %w", engine.ErrNotFound)
		}
		return "", err
	}
	cdir, err := engine.CleanRel(c.Directory)
	if err != nil {
		return "", fmt.Errorf("container directory: %w", err)
	}
	subdir, err := engine.CleanRel(sub)
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	res, err := hostfs.Tree{Root: dir}.Dir(filepath.ToSlash(filepath.Join(cdir, subdir)))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(res)), nil
}

// StartContainer runs spec.Command with `/bin/sh -c` in the container's directory, in a new
// session, stdin /dev/null, output appended to the container's log. The environment is the
// passed-through variables of this process, spec.Env, c.Env, then the runtime's own:
// PORT (a free port on Host picked for this container: local processes share the host network),
// HOST, PROJECT_ID, CONTAINER_NAME and SAILTUI_DECLARED_PORT (spec.Port, the port the app uses
// in other modes). A running container is left alone and its status returned.
func (r *Runtime) StartContainer(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec) (engine.ContainerStatus, error) {
	return containers.Start(ctx, p, c, spec, r.startContainer)
}

func (r *Runtime) startContainer(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec) (engine.ContainerStatus, error) {
	if err := hostfs.CheckName("container name", c.Name); err != nil {
		return engine.ContainerStatus{}, err
	}
	// The local runtime runs no image: every container needs a command.
	if err := spec.CheckCommand(true); err != nil {
		return engine.ContainerStatus{}, err
	}
	if !supported {
		return engine.ContainerStatus{}, errUnsupportedOS()
	}
	workDir, err := r.containerWorkDir(p, c, "")
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	if err := os.MkdirAll(r.runDir(p.Slug), 0o700); err != nil {
		return engine.ContainerStatus{}, err
	}
	if err := os.MkdirAll(r.logDir(p.Slug), 0o700); err != nil {
		return engine.ContainerStatus{}, err
	}
	unlock, err := r.lock(ctx, p.Slug, c.Name)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	defer unlock()
	// A group left stopped by a sailtui that died mid-snapshot would read as running and be
	// left alone, frozen.
	if _, err := r.healPause(ctx, p.Slug); err != nil {
		return engine.ContainerStatus{}, err
	}

	prev, err := readRecordFile(r.recordPath(p.Slug, c.Name))
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	prevPort := r.keptPort(p.Slug, c.Name) // a hibernation removed the record, not this
	if prev != nil {
		if groupAlive(prev.PID, prev.StartTicks) {
			return r.status(c.Name, prev), nil
		}
		prevPort = prev.Port
	}
	if err := ctx.Err(); err != nil {
		return engine.ContainerStatus{}, err
	}
	port, err := r.pickPort(p.Slug+"/"+c.Name, prevPort)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	own := map[string]string{
		"PORT":           strconv.Itoa(port),
		"HOST":           r.cfg.Host,
		"PROJECT_ID":     p.ID,
		"CONTAINER_NAME": c.Name,
	}
	if spec.Port > 0 {
		own["SAILTUI_DECLARED_PORT"] = strconv.Itoa(spec.Port)
	}
	env, err := mergeEnv(r.baseEnv(), spec.Env, c.Env, own)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	r.mark(p.Slug, c.Name, engine.LogMarkStarted)
	out, capt, err := r.startCapture(r.logPath(p.Slug, c.Name))
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	// Not exec.CommandContext: the process must outlive ctx and this program. Its output is a
	// pipe to the capture process (capture.go), which outlives both as well.
	cmd := exec.Command("/bin/sh", "-c", spec.Command)
	cmd.Dir = workDir
	cmd.Env = env
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = detachedAttr()
	err = cmd.Start()
	_ = out.Close() // the capture ends once the container's processes are gone
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	pid := cmd.Process.Pid
	// The child cannot be reaped before our Wait, so its /proc entry is there to read.
	ticks, err := procStartTicks(pid)
	if err == nil {
		rec := &record{
			PID:          pid,
			StartTicks:   ticks,
			Port:         port,
			DeclaredPort: spec.Port,
			Command:      spec.Command,
			Dir:          workDir,
			StartedAt:    time.Now().UTC(),
			CapturePID:   capt.pid,
			CaptureTicks: capt.ticks,
		}
		if err = r.writeRecord(p.Slug, c.Name, rec); err == nil {
			r.keepPort(p.Slug, c.Name, port)
			ch := &child{pid: pid, ticks: ticks, done: make(chan struct{}), capture: capt}
			r.mu.Lock()
			r.children[p.Slug+"/"+c.Name] = ch
			r.mu.Unlock()
			go r.reap(p.Slug, c.Name, cmd, ch)
			return r.status(c.Name, rec), nil
		}
	}
	// Unrecorded, the process would be out of everyone's reach: take it down again.
	_ = killGroup(pid, syscall.SIGKILL)
	_ = cmd.Wait()
	return engine.ContainerStatus{}, fmt.Errorf("record started process: %w", err)
}

func errUnsupportedOS() error {
	return fmt.Errorf("local runtime processes need Linux (/proc): %w", errors.ErrUnsupported)
}

// reap waits for a container this Runtime started, so it does not linger as a zombie while this
// program lives, and records its exit code unless a stop caused the exit.
func (r *Runtime) reap(slug, name string, cmd *exec.Cmd, ch *child) {
	defer func() {
		r.mu.Lock()
		if r.children[slug+"/"+name] == ch {
			delete(r.children, slug+"/"+name)
		}
		r.mu.Unlock()
		close(ch.done)
	}()
	ticks := ch.ticks
	_ = cmd.Wait()
	code, ok := exitCode(cmd.ProcessState.Sys())
	if !ok {
		code = cmd.ProcessState.ExitCode()
	}
	// Not r.lock: when the project was destroyed meanwhile, the lock file must not be made
	// again under a DestroyProject that is removing the directory.
	unlock, err := flock.Lock(context.Background(), r.lockPath(slug, name), false)
	if err != nil {
		return
	}
	defer unlock()
	rec, err := readRecordFile(r.recordPath(slug, name))
	if err != nil || rec == nil || rec.PID != cmd.Process.Pid || rec.StartTicks != ticks || !rec.StoppedAt.IsZero() {
		return
	}
	rec.ExitCode = &code
	rec.ExitedAt = time.Now().UTC()
	_ = r.writeRecord(slug, name, rec)
	if ch.capture != nil {
		select {
		case <-ch.capture.done:
		case <-time.After(captureDrain):
		}
	}
	r.mark(slug, name, fmt.Sprintf("exited with code %d", code))
}

// status reads a record against the process table.
func (r *Runtime) status(name string, rec *record) engine.ContainerStatus {
	st := engine.ContainerStatus{Name: name, State: engine.ContainerStopped}
	if rec == nil {
		return st
	}
	if groupAlive(rec.PID, rec.StartTicks) {
		st.State = engine.ContainerRunning
		st.HostPort = rec.Port
		st.URL = r.url(rec.Port)
		st.LocalURL = st.URL
		st.PID = rec.PID
		st.StartedAt = rec.StartedAt
		switch {
		case !rec.StoppedAt.IsZero():
			st.Detail = "stopping"
		case rec.ExitCode != nil:
			st.Detail = "startup shell exited; processes of its group still run"
		}
		return st
	}
	if !rec.StoppedAt.IsZero() {
		return st
	}
	st.State = engine.ContainerExited
	st.StartedAt = rec.StartedAt
	if rec.ExitCode != nil {
		st.ExitCode = *rec.ExitCode
		st.Detail = fmt.Sprintf("exited with code %d", *rec.ExitCode)
	} else {
		st.Detail = "exited; exit code unknown (it ended while no sailtui that started it was running)"
	}
	return st
}

// ContainerStatus reports running (its process group has a live member), stopped (never
// started, or stopped through the runtime) or exited (ended on its own). A container paused
// for a snapshot in progress is running, with a detail that says so; a pause whose owner is
// gone is undone first (see PauseProject).
func (r *Runtime) ContainerStatus(ctx context.Context, p engine.Project, c engine.Container) (engine.ContainerStatus, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("status: %w", err)
	}
	if err := hostfs.CheckName("container name", c.Name); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("status %s: %w", p.Slug, err)
	}
	paused, err := r.healPause(ctx, p.Slug)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("status %s/%s: %w", p.Slug, c.Name, err)
	}
	rec, err := readRecordFile(r.recordPath(p.Slug, c.Name))
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("status %s/%s: %w", p.Slug, c.Name, err)
	}
	st := r.status(c.Name, rec)
	if d := paused.detail(c.Name); d != "" && st.State == engine.ContainerRunning {
		st.Detail = d
	}
	if st.State == engine.ContainerExited && rec.ExitCode == nil {
		// If it is our own child that just ended, its reaper is recording the exit code: wait
		// for it when it is still at work, and read the record again either way, since it may
		// have finished between the read above and now (it was seen failing so in make test).
		r.awaitReap(ctx, p.Slug, c.Name, rec)
		if rec, err = readRecordFile(r.recordPath(p.Slug, c.Name)); err != nil {
			return engine.ContainerStatus{}, fmt.Errorf("status %s/%s: %w", p.Slug, c.Name, err)
		}
		st = r.status(c.Name, rec)
	}
	return st, nil
}

// awaitReap waits (briefly) for this Runtime's reaper of the recorded process, if it is ours
// and has not finished yet.
func (r *Runtime) awaitReap(ctx context.Context, slug, name string, rec *record) {
	r.mu.Lock()
	ch := r.children[slug+"/"+name]
	r.mu.Unlock()
	if ch == nil || ch.pid != rec.PID || ch.ticks != rec.StartTicks {
		return
	}
	select {
	case <-ch.done:
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
}

// StopContainer sends SIGTERM to the container's process group, waits up to StopTimeout, then
// sends SIGKILL. Stopping a stopped or unknown container does nothing. When ctx ends during the
// wait it goes straight to SIGKILL.
func (r *Runtime) StopContainer(ctx context.Context, p engine.Project, c engine.Container) error {
	return containers.Stop(ctx, p, c, r.stopContainer)
}

// stopContainer is StopContainer's own part; containers.Stop has checked p's slug.
func (r *Runtime) stopContainer(ctx context.Context, p engine.Project, c engine.Container) error {
	if err := hostfs.CheckName("container name", c.Name); err != nil {
		return err
	}
	if _, err := os.Stat(r.recordPath(p.Slug, c.Name)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// The lock is taken with a context that outlives ctx: a cancelled caller still wants
	// the stop done, and the wait below is bounded anyway.
	unlock, err := r.lock(context.WithoutCancel(ctx), p.Slug, c.Name)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := readRecordFile(r.recordPath(p.Slug, c.Name))
	if err != nil || rec == nil {
		return err
	}
	if rec.StoppedAt.IsZero() {
		rec.StoppedAt = time.Now().UTC()
		if err := r.writeRecord(p.Slug, c.Name, rec); err != nil {
			return err
		}
	}
	alive := groupAlive(rec.PID, rec.StartTicks)
	if err := r.stopGroup(ctx, rec.PID, rec.StartTicks); err != nil {
		return err
	}
	if alive {
		// After the container's last lines, which its capture may still be writing.
		waitCaptured(ctx, rec)
		r.mark(p.Slug, c.Name, engine.LogMarkStopped)
	}
	return nil
}

func (r *Runtime) stopGroup(ctx context.Context, pid int, ticks uint64) error {
	if !groupAlive(pid, ticks) {
		return nil
	}
	if err := signalGroup(pid, ticks, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal process group %d: %w", pid, err)
	}
	// A stopped group (paused for a snapshot, or by hand) keeps SIGTERM pending until it runs
	// again: continue it so it can shut down cleanly rather than wait out StopTimeout for KILL.
	if err := signalGroup(pid, ticks, syscall.SIGCONT); err != nil {
		return fmt.Errorf("continue process group %d: %w", pid, err)
	}
	if waitGone(ctx, pid, ticks, r.cfg.StopTimeout) {
		return nil
	}
	if err := signalGroup(pid, ticks, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill process group %d: %w", pid, err)
	}
	if waitGone(context.WithoutCancel(ctx), pid, ticks, 5*time.Second) {
		return nil
	}
	return fmt.Errorf("process group %d still has live processes after SIGKILL", pid)
}

// waitGone polls until the group has no live process, d passes or ctx ends.
func waitGone(ctx context.Context, pid int, ticks uint64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(pid, ticks) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return !groupAlive(pid, ticks)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// AddressOf implements engine.Addresser: containers here are processes sharing this machine's
// network, each on the port picked for it, so another container reaches one at Host and that
// port, once it has been started.
func (r *Runtime) AddressOf(p engine.Project, c engine.Container) (string, int, bool) {
	rec, err := readRecordFile(r.recordPath(p.Slug, c.Name))
	if err != nil || rec == nil || rec.Port == 0 {
		return "", 0, false
	}
	host := r.cfg.Host
	if host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return host, rec.Port, true
}
