package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
)

// Config wires an Engine. Store, Runtime and Volumes are required; everything else has a default.
type Config struct {
	Store    Store
	Runtime  Runtime
	Volumes  Volumes
	Notifier Notifier
	Clock    Clock
	Logger   *slog.Logger
	// RouterMetrics, when set, is read by the hibernation sweep: traffic through the router
	// is activity (RouterMetrics, RouteNamer).
	RouterMetrics RouterMetrics

	// Owner identifies this process as the holder of operations; the default is
	// "<host>/<pid>/<start>" so that a holder on this host that died can be recognised at once.
	Owner string
	// IdleTimeout is how long a project may go without activity before the sweep hibernates it.
	IdleTimeout time.Duration
	// StopIdleTimeout, when set and shorter than IdleTimeout, is the first idle tier: the sweep
	// stops the containers of projects idle this long (files kept, instant restart) and
	// hibernates them only after IdleTimeout.
	StopIdleTimeout time.Duration
	// IdleWarning, when set, is how long before a hibernation its project is warned (one
	// idle_warning event): a sweep warns every project that will be idle past the timeout
	// within it, and hibernates none whose warning is younger (SAILTUI_IDLE_WARNING_MINUTES).
	// Zero gives no warning.
	IdleWarning time.Duration
	// MaxKeepAlive bounds how far ahead a keep-alive may hold the idle sweep off a project
	// (SAILTUI_MAX_KEEP_ALIVE): a forgotten keep-alive must not keep a project up for days.
	MaxKeepAlive time.Duration
	// OpTimeout is how long an operation may go without a heartbeat before another process
	// takes it over (a holder known to be dead is taken over at once).
	OpTimeout time.Duration
	// SweepConcurrency bounds how many projects one sweep hibernates at once.
	SweepConcurrency int
	// SweepLockTTL is how long a sweep's global lock outlives a sweep that died holding it
	// (it is renewed while the sweep runs).
	SweepLockTTL time.Duration
	// UseWait bounds how long hibernate, wake, restore, snapshot and delete wait for the file
	// operations and execs in progress on the project to end; after a third of it they are
	// asked to stop, and an operation still facing uses at the end is refused.
	UseWait time.Duration
	// KeepAutoSnapshots is how many ready hibernation (and safety) snapshots stay live per
	// project, a hibernated project's wake point among them; older ones are soft-deleted and
	// purged after the retention period.
	KeepAutoSnapshots int
	// DefaultCommand runs a container that has no command of its own and no TESSLATE.md command.
	DefaultCommand string
	// SkipInstallDeps turns off the dependency step before an app's command (see
	// WithDependencyInstall): SAILTUI_INSTALL_DEPS=false.
	SkipInstallDeps bool
	// StartTimeout bounds how long a start waits for each container to come up: running and,
	// where it has a port, accepting connections on it (SAILTUI_START_TIMEOUT).
	StartTimeout time.Duration
	// StartSettle is how long a container without a port (or on a runtime that cannot probe
	// ports) must run, not exited, to count as started.
	StartSettle time.Duration
	// ReadOnly refuses every operation that changes something.
	ReadOnly bool
	// StepHook is called after every journaled step; the crash-safety tests kill the process here.
	StepHook func(kind OpKind, step string)
}

// Engine is the orchestrator. It is safe for concurrent use.
type Engine struct {
	store    Store
	runtime  Runtime
	volumes  Volumes
	notifier Notifier
	clock    Clock
	log      *slog.Logger
	cfg      Config
}

// Defaults of Config.
const (
	DefaultIdleTimeout      = 30 * time.Minute
	DefaultOpTimeout        = 10 * time.Minute
	DefaultSweepConcurrency = 16
	DefaultKeepAuto         = 2
	DefaultSweepLockTTL     = 3 * time.Minute
	DefaultMaxKeepAlive     = 12 * time.Hour
)

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Runtime == nil || cfg.Volumes == nil {
		return nil, fmt.Errorf("engine: store, runtime and volumes are required: %w", ErrBadInput)
	}
	if cfg.Notifier == nil {
		cfg.Notifier = NewBus()
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Owner == "" {
		cfg.Owner = ProcessOwner()
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.IdleWarning < 0 {
		return nil, fmt.Errorf("engine: idle warning %s must not be negative: %w", cfg.IdleWarning, ErrBadInput)
	}
	if cfg.IdleTimeout < 0 {
		return nil, fmt.Errorf("engine: idle timeout %s must be positive: %w", cfg.IdleTimeout, ErrBadInput)
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = DefaultOpTimeout
	}
	if cfg.MaxKeepAlive <= 0 {
		cfg.MaxKeepAlive = DefaultMaxKeepAlive
	}
	if cfg.SweepConcurrency <= 0 {
		cfg.SweepConcurrency = DefaultSweepConcurrency
	}
	if cfg.SweepLockTTL <= 0 {
		cfg.SweepLockTTL = DefaultSweepLockTTL
	}
	if cfg.UseWait <= 0 {
		cfg.UseWait = DefaultUseWait
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StartSettle <= 0 {
		cfg.StartSettle = DefaultStartSettle
	}
	if cfg.KeepAutoSnapshots <= 0 {
		cfg.KeepAutoSnapshots = DefaultKeepAuto
	}
	return &Engine{
		store: cfg.Store, runtime: cfg.Runtime, volumes: cfg.Volumes, notifier: cfg.Notifier,
		clock: cfg.Clock, log: cfg.Logger, cfg: cfg,
	}, nil
}

// The engine is the only door to its parts: the console and the command line read through
// these, never the store, runtime or notifier themselves.

// Mode is the runtime's deployment mode ("local", "docker", "kubernetes").
func (e *Engine) Mode() string { return e.runtime.Mode() }

// StoreName names the store for humans ("sqlite /path", "postgres host/db").
func (e *Engine) StoreName() string { return e.store.Describe() }

// Now is the engine's clock.
func (e *Engine) Now() time.Time { return e.now() }

// ListProjects lists projects as stored (deleted ones with f.IncludeDeleted).
func (e *Engine) ListProjects(ctx context.Context, f ProjectFilter) ([]Project, error) {
	ps, err := e.store.ListProjects(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return ps, nil
}

// ProjectsChangedSince is the incremental read of the projects list (Store.ListProjectsChangedSince):
// cursor 0 lists every live project, an answer's Cursor then lists what changed after it,
// deleted projects included so that a reader can drop them.
func (e *Engine) ProjectsChangedSince(ctx context.Context, cursor int64) (ProjectChanges, error) {
	ch, err := e.store.ListProjectsChangedSince(ctx, cursor)
	if err != nil {
		return ProjectChanges{}, fmt.Errorf("list changed projects: %w", err)
	}
	return ch, nil
}

// EventsShared reports whether Subscribe hears every process on the store (a notifier such as
// Postgres LISTEN/NOTIFY), not only this one (the in-process Bus).
func (e *Engine) EventsShared() bool {
	_, local := e.notifier.(*Bus)
	return !local
}

// WatchStoreWrites tells of writes to the store by any process, where the store can
// (engine.WriteWatcher); errors.ErrUnsupported where it cannot, and the caller reads the
// store on a timer instead.
func (e *Engine) WatchStoreWrites(ctx context.Context) (<-chan struct{}, error) {
	w, ok := e.store.(WriteWatcher)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return w.WatchWrites(ctx)
}

// Subscribe delivers status events (this process's and, with a shared notifier, every
// engine's on the store) until ctx ends.
func (e *Engine) Subscribe(ctx context.Context) (<-chan Event, error) {
	return e.notifier.Subscribe(ctx)
}

// Snapshot finds the snapshot of project ref that id names (its ID, label or a unique ID
// prefix, as ResolveSnapshot), deleted ones included.
func (e *Engine) Snapshot(ctx context.Context, ref, id string) (Snapshot, error) {
	return e.snapshotOf(ctx, ref, id)
}

func (e *Engine) IdleTimeout() time.Duration { return e.cfg.IdleTimeout }
func (e *Engine) ReadOnly() bool             { return e.cfg.ReadOnly }

func (e *Engine) now() time.Time { return e.clock.Now().UTC() }

func (e *Engine) writable(what string) error {
	if e.cfg.ReadOnly {
		return fmt.Errorf("%s: %w", what, ErrReadOnly)
	}
	return nil
}

func newID() string { return uuid.NewString() }

// publish sends an event; a notifier failure is logged, never fails the operation that caused it.
func (e *Engine) publish(ctx context.Context, ev Event) {
	if ev.Time.IsZero() {
		ev.Time = e.now()
	}
	if ev.Kind == "" {
		ev.Kind = "status"
	}
	if err := e.notifier.Publish(ctx, ev); err != nil {
		e.log.Warn("publish event", "project", ev.Slug, "err", err)
	}
}

// Project finds a live or deleted project by slug or id.
func (e *Engine) Project(ctx context.Context, ref string) (Project, error) {
	p, err := e.store.GetProject(ctx, ref)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Project{}, fmt.Errorf("project %q not found (list them with: sailtui projects ls): %w", ref, ErrNotFound)
		}
		return Project{}, fmt.Errorf("find project %q: %w", ref, err)
	}
	return p, nil
}

// liveProject is Project refusing deleted projects.
func (e *Engine) liveProject(ctx context.Context, ref string) (Project, error) {
	p, err := e.Project(ctx, ref)
	if err != nil {
		return p, err
	}
	if p.Status == StatusDeleted {
		return p, fmt.Errorf("project %s is deleted: %w", p.Slug, ErrBadState)
	}
	return p, nil
}

// Touch records activity on a project through the door source (SourceTouch when empty): what
// a platform calls when its IDE or agent works in a project by means of its own.
func (e *Engine) Touch(ctx context.Context, ref, source string) (Project, error) {
	if source == "" {
		source = SourceTouch
	}
	if err := CheckSource(source); err != nil {
		return Project{}, fmt.Errorf("touch %s: %w", ref, err)
	}
	if err := e.writable("touch " + ref); err != nil {
		return Project{}, err
	}
	p, err := e.liveProject(ctx, ref)
	if err != nil {
		return p, err
	}
	if err := e.store.Touch(ctx, p.ID, e.activity(source)); err != nil {
		return p, fmt.Errorf("touch %s: %w", p.Slug, err)
	}
	return e.Project(ctx, p.ID)
}

// hostName is cached: it never changes for a process and is part of every owner string.
var hostName = func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}()
