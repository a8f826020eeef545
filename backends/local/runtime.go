// Package local is sailtui's embedded default runtime: a project is a directory on this machine
// and a container is a process group running the container's startup command in its directory.
//
// Containers are detached (a session of their own, output appended to a log file) so they keep
// running after the console that started them exits; every start is recorded in the run
// directory (pid, process start time, port) so the next console finds them again. The pid is
// trusted only together with the start time the kernel reports for it, so a pid reused by an
// unrelated process is never mistaken for a container, let alone signalled.
//
// File operations stay inside the project directory (invariant 8): see ReadFile.
package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sailtui/sailtui/backends/internal/containers"
	"github.com/sailtui/sailtui/backends/internal/trash"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/capped"
	"github.com/sailtui/sailtui/engine/cpurate"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// Config places the runtime's state on disk. Two Runtimes built on the same directories (in
// one process or in two) see and control the same containers.
type Config struct {
	// ProjectsDir holds one directory per project: <ProjectsDir>/<slug>.
	ProjectsDir string
	// RunDir holds the records of started containers: <RunDir>/<slug>/<container>.json.
	RunDir string
	// LogDir holds container output: <LogDir>/<slug>/<container>.log (and .log.1, the file
	// before it), each line with the time it was written. It must not be inside ProjectsDir:
	// logs are kept across hibernation and are in no snapshot; they go when the project is
	// deleted (DropLogs). The port each container last had is kept there with them
	// (<container>.port), so a wake gives it back.
	LogDir string
	// LogMaxBytes caps each container's log on disk, current and rotated file together
	// (default 8 MiB).
	LogMaxBytes int64
	// Host is the address containers are told to listen on and URLs point to (default 127.0.0.1).
	Host string
	// StopTimeout is how long a stopping container gets between SIGTERM and SIGKILL (default 5s).
	StopTimeout time.Duration
	// PassEnv names further variables of this process handed to containers, beyond the defaults
	// (PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, TZ, TMPDIR). A trailing *
	// matches a prefix. The console's own environment may hold store or object-store
	// credentials, so nothing else is passed on.
	PassEnv []string
	// ReadOnly deletes nothing behind the engine's back: what waits in the trash stays there
	// (--readonly; the engine refuses every change itself).
	ReadOnly bool
}

// DefaultStopTimeout is used when Config.StopTimeout is zero.
const DefaultStopTimeout = 5 * time.Second

// DefaultMaxOutput caps each of an exec's stdout and stderr when the request sets no cap.
const DefaultMaxOutput = capped.DefaultMax

// Runtime implements engine.Runtime and engine.GitCloner with processes and the host filesystem.
type Runtime struct {
	cfg Config

	mu sync.Mutex
	// recent remembers ports handed out lately and to whom: a process may take a moment to
	// bind its port, and another container's start must not pick it meanwhile.
	recent map[int]portLease
	// children are the containers this Runtime started and still reaps, by slug/name.
	children map[string]*child
	// trash deletes torn-down project trees in the background (<ProjectsDir>/.sailtui-trash,
	// one rename away): a hibernation returns at archive speed.
	trash *trash.Bin
	// Reaper is the engine.Reaper over trash.
	trash.Reaper
	// cpu keeps the last CPU reading of each container, for the next Usage (usage.go).
	cpu cpurate.Sampler
}

// The torn-down trees go to a trash bin and are deleted in the background (Reaper).
var _ engine.Reaper = (*Runtime)(nil)

type portLease struct {
	owner string
	at    time.Time
}

// child is a container process this Runtime started; done closes once it has been reaped and
// its exit recorded.
type child struct {
	pid     int
	ticks   uint64
	done    chan struct{}
	capture *capture
}

var (
	_ engine.Runtime   = (*Runtime)(nil)
	_ engine.GitCloner = (*Runtime)(nil)
)

// New makes the directories of cfg (absolute, so a later chdir changes nothing) and returns a
// Runtime on them.
func New(cfg Config) (*Runtime, error) {
	dirs := []struct {
		name string
		p    *string
		perm fs.FileMode
	}{
		{"ProjectsDir", &cfg.ProjectsDir, 0o755},
		{"RunDir", &cfg.RunDir, 0o700},
		{"LogDir", &cfg.LogDir, 0o700},
	}
	for _, d := range dirs {
		if *d.p == "" {
			return nil, fmt.Errorf("local runtime: %s is not set: %w", d.name, engine.ErrBadInput)
		}
		abs, err := filepath.Abs(*d.p)
		if err != nil {
			return nil, fmt.Errorf("local runtime: %s: %w", d.name, err)
		}
		if err := os.MkdirAll(abs, d.perm); err != nil {
			return nil, fmt.Errorf("local runtime: create %s: %w", d.name, err)
		}
		*d.p = abs
	}
	if inside(cfg.LogDir, cfg.ProjectsDir) {
		return nil, fmt.Errorf("local runtime: LogDir %s is inside ProjectsDir %s, where logs would go into snapshots: give it a directory of its own: %w", cfg.LogDir, cfg.ProjectsDir, engine.ErrBadInput)
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	// Opening the bin resumes the delete of what a process that ended first left in it.
	bin := trash.Open(cfg.ProjectsDir, trash.Options{ReadOnly: cfg.ReadOnly})
	r := &Runtime{cfg: cfg, recent: map[int]portLease{}, children: map[string]*child{}, trash: bin, Reaper: bin.Reaper()}
	return r, nil
}

// Mode is "local".
func (r *Runtime) Mode() string { return "local" }

// StorageDir is the project's directory, <ProjectsDir>/<slug>. It is a pure function of the
// project. For a slug that is not a single path component (empty, ".", "..", with a slash) it
// returns "" rather than a path outside ProjectsDir; callers must treat "" as an error.
func (r *Runtime) StorageDir(p engine.Project) string {
	if hostfs.CheckName("project slug", p.Slug) != nil {
		return ""
	}
	return filepath.Join(r.cfg.ProjectsDir, p.Slug)
}

func (r *Runtime) projectDir(p engine.Project) (string, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return "", err
	}
	return filepath.Join(r.cfg.ProjectsDir, p.Slug), nil
}

func (r *Runtime) runDir(slug string) string { return filepath.Join(r.cfg.RunDir, slug) }
func (r *Runtime) logDir(slug string) string { return filepath.Join(r.cfg.LogDir, slug) }
func (r *Runtime) recordPath(slug, name string) string {
	return filepath.Join(r.runDir(slug), name+".json")
}
func (r *Runtime) lockPath(slug, name string) string {
	return filepath.Join(r.runDir(slug), name+".lock")
}
func (r *Runtime) logPath(slug, name string) string {
	return filepath.Join(r.logDir(slug), name+".log")
}

// EnsureProject creates the project directory (idempotent).
func (r *Runtime) EnsureProject(ctx context.Context, p engine.Project) error {
	dir, err := r.projectDir(p)
	if err != nil {
		return fmt.Errorf("ensure project: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ensure project %s: %w", p.Slug, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("ensure project %s: %w", p.Slug, err)
	}
	return nil
}

// ProjectExists reports whether the project directory is there.
func (r *Runtime) ProjectExists(ctx context.Context, p engine.Project) (bool, error) {
	dir, err := r.projectDir(p)
	if err != nil {
		return false, fmt.Errorf("project exists: %w", err)
	}
	return hostfs.ProjectDirExists(p.Slug, dir)
}

// StopProject stops the containers in cs and any other container of the project that has a
// run record, so a container the caller forgot about is not left running, and ends every
// recorded terminal exec session of the project with all its processes (as stopping a docker
// container ends what its execs run): nothing of the project runs on after a stop, let alone
// in the tree a hibernation then removes.
func (r *Runtime) StopProject(ctx context.Context, p engine.Project, cs []engine.Container) error {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return fmt.Errorf("stop project: %w", err)
	}
	if err := r.endSessions(p.Slug, false); err != nil {
		return fmt.Errorf("stop project %s: %w", p.Slug, err)
	}
	names, err := r.containerNames(p.Slug, cs)
	if err != nil {
		return fmt.Errorf("stop project %s: %w", p.Slug, err)
	}
	return containers.StopAll(ctx, p, names, r.StopContainer)
}

// containerNames is the union of cs and the containers with run records, sorted.
func (r *Runtime) containerNames(slug string, cs []engine.Container) ([]string, error) {
	ents, err := os.ReadDir(r.runDir(slug))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var held []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && hostfs.CheckName("container", name) == nil {
			held = append(held, name)
		}
	}
	return containers.Names(cs, held), nil
}

// DestroyProject stops every container of the project and removes its directory and run
// records. Its logs stay (they are outside the tree, in no snapshot): a woken project's log
// goes on from where it was; DropLogs removes them with the project. Idempotent. The engine calls it only once a verified snapshot exists (invariant 1).
func (r *Runtime) DestroyProject(ctx context.Context, p engine.Project, cs []engine.Container) error {
	dir, err := r.projectDir(p)
	if err != nil {
		return fmt.Errorf("destroy project: %w", err)
	}
	if err := r.StopProject(ctx, p, cs); err != nil {
		// Removing the files under running processes would leave them running in a deleted
		// directory, out of sight of every record.
		return fmt.Errorf("destroy project %s: %w", p.Slug, err)
	}
	// The tree goes to the trash (one rename), deleted in the background (backends/internal/trash).
	if err := r.trash.Throw(dir, p.Slug); err != nil {
		return fmt.Errorf("destroy project %s: %w", p.Slug, err)
	}
	var errs []error
	for _, d := range []string{r.runDir(p.Slug)} {
		err := os.RemoveAll(d)
		// A reaper of this Runtime may still be finishing in the run directory; its work is
		// moot now, so try again rather than fail the destroy.
		for i := 0; err != nil && i < 5; i++ {
			time.Sleep(20 * time.Millisecond)
			err = os.RemoveAll(d)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroy project %s: %w", p.Slug, err)
	}
	return nil
}

// inside reports whether dir is base or below it.
func inside(dir, base string) bool {
	rel, err := filepath.Rel(base, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// pickPort finds a free port for container owner (slug/name), preferring the one it had
// before so its URL survives a restart.
func (r *Runtime) pickPort(owner string, prev int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for p, l := range r.recent {
		if now.Sub(l.at) > time.Minute {
			delete(r.recent, p)
		}
	}
	claimed := r.claimedPorts()
	try := func(port int) (int, bool) {
		l, err := net.Listen("tcp", net.JoinHostPort(r.cfg.Host, fmt.Sprint(port)))
		if err != nil {
			return 0, false
		}
		got := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if lease, taken := r.recent[got]; (taken && lease.owner != owner) || claimed[got] {
			return 0, false
		}
		r.recent[got] = portLease{owner: owner, at: now}
		return got, true
	}
	if prev > 0 {
		if port, ok := try(prev); ok {
			return port, nil
		}
	}
	for range 50 {
		if port, ok := try(0); ok {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port on %s", r.cfg.Host)
}

// claimedPorts are the ports of recorded containers that still run (they may not have bound
// them yet).
func (r *Runtime) claimedPorts() map[int]bool {
	out := map[int]bool{}
	files, _ := filepath.Glob(filepath.Join(r.cfg.RunDir, "*", "*.json"))
	for _, f := range files {
		rec, err := readRecordFile(f)
		if err != nil || rec == nil || rec.Port == 0 {
			continue
		}
		if groupAlive(rec.PID, rec.StartTicks) {
			out[rec.Port] = true
		}
	}
	return out
}

// defaultPassEnv is what a developer's processes need from the console's environment.
var defaultPassEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR"}

func (r *Runtime) baseEnv() map[string]string {
	pass := append(append([]string(nil), defaultPassEnv...), r.cfg.PassEnv...)
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for _, pat := range pass {
			if prefix, isPrefix := strings.CutSuffix(pat, "*"); (isPrefix && strings.HasPrefix(k, prefix)) || k == pat {
				env[k] = v
				break
			}
		}
	}
	if env["PATH"] == "" {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	return env
}

// mergeEnv layers maps in order (later wins) and checks every entry, since the kernel would
// refuse a NUL byte with an unhelpful EINVAL.
func mergeEnv(layers ...map[string]string) ([]string, error) {
	m := map[string]string{}
	for _, l := range layers {
		for k, v := range l {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
				return nil, fmt.Errorf("environment variable %q is not valid: %w", k, engine.ErrBadInput)
			}
			m[k] = v
		}
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

func (r *Runtime) url(port int) string {
	return "http://" + net.JoinHostPort(r.cfg.Host, fmt.Sprint(port)) + "/"
}
