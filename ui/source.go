package ui

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// source is everything the console reads. The Engine provides it through engineSource; tests
// feed fixed data through a fake, so no unit test needs a store or a runtime.
type source interface {
	// ProjectsChangedSince is the incremental read of the projects list
	// (engine.Engine.ProjectsChangedSince): cursor 0 lists every live project, an answer's
	// cursor then lists what changed after it, deleted projects included.
	ProjectsChangedSince(ctx context.Context, cursor int64) (engine.ProjectChanges, error)
	// Containers lists a project's containers with their runtime status (engine.Engine.Containers).
	Containers(ctx context.Context, ref string) (engine.Project, []engine.ContainerView, error)
	// Usage measures what a project's running containers use (engine.Engine.Usage); the
	// Containers pane asks at its refresh pace only.
	Usage(ctx context.Context, ref string) (map[string]engine.ContainerUsage, error)
	// ProbeContainers is Containers with whether each running container's port answers
	// (engine.Engine.ProbeContainers): what the Containers pane shows.
	ProbeContainers(ctx context.Context, ref string) (engine.Project, []engine.ContainerView, error)
	// Snapshots lists a project's timeline, newest first (engine.Engine.Snapshots).
	Snapshots(ctx context.Context, ref string, includeDeleted bool) ([]engine.Snapshot, error)
	// Subscribe delivers status events until ctx ends, then closes the channel.
	Subscribe(ctx context.Context) (<-chan engine.Event, error)
	// EventsShared is true when Subscribe hears every process on the store, not only this one.
	EventsShared() bool
	// WatchStoreWrites tells of writes to the store by any process
	// (engine.Engine.WatchStoreWrites); errors.ErrUnsupported where the store cannot.
	WatchStoreWrites(ctx context.Context) (<-chan struct{}, error)
	IdleTimeout() time.Duration
	Now() time.Time

	// Describe is the runtime's own view of a project.
	Describe(ctx context.Context, ref string) (string, error)
	// History is a project's operations, activity and warnings, newest first
	// (engine.Engine.History).
	History(ctx context.Context, ref string, limit int) (engine.Project, []engine.HistoryEntry, error)
	// Logs streams a container's log (engine.Engine.Logs).
	Logs(ctx context.Context, ref, name string, opts engine.LogOptions) (io.ReadCloser, error)
	// SweepHibernate runs (with DryRun: previews) the hibernation sweep.
	SweepHibernate(ctx context.Context, opts engine.SweepOptions) (engine.SweepReport, error)
	// Doctor runs the doctor's checks without fixing anything.
	Doctor(ctx context.Context) (engine.DoctorReport, error)

	// The actions. Long ones report progress to the reporter engine.WithProgress put in ctx,
	// read back with engine.ProgressFrom: the one progress channel, whoever the source is.
	StartProject(ctx context.Context, ref string) (engine.Project, error)
	StopProject(ctx context.Context, ref string) (engine.Project, error)
	Hibernate(ctx context.Context, ref string) (engine.Project, error)
	Wake(ctx context.Context, ref string) (engine.Project, error)
	StartContainer(ctx context.Context, ref, name string) (engine.ContainerStatus, error)
	StopContainer(ctx context.Context, ref, name string) error
	CreateSnapshot(ctx context.Context, ref, label string) (engine.Snapshot, error)
	ReplaceSnapshot(ctx context.Context, ref, oldID, label string) (engine.Snapshot, error)
	RestoreSnapshot(ctx context.Context, ref, id string) (engine.RestoreResult, error)
	RelabelSnapshot(ctx context.Context, ref, id, label string) (engine.Snapshot, error)
	DeleteSnapshot(ctx context.Context, ref, id string) error
	UndeleteSnapshot(ctx context.Context, ref, id string) (engine.Snapshot, error)
	UndeleteProject(ctx context.Context, ref string) (engine.Project, error)
	// KeepAlive keeps the idle sweep off a project for d (engine.Engine.KeepAlive);
	// CancelKeepAlive ends that.
	KeepAlive(ctx context.Context, ref string, d time.Duration) (engine.Project, error)
	CancelKeepAlive(ctx context.Context, ref string) (engine.Project, error)
}

// engineSource adapts an Engine; everything but Subscribe, Now and Doctor is the Engine's own.
type engineSource struct{ *engine.Engine }

func (s engineSource) Subscribe(ctx context.Context) (<-chan engine.Event, error) {
	return s.Engine.Subscribe(ctx)
}

func (s engineSource) Now() time.Time { return s.Engine.Now() }

func (s engineSource) Doctor(ctx context.Context) (engine.DoctorReport, error) {
	return s.Engine.Doctor(ctx, false)
}

// usage is the per-row detail that needs a call per project (containers, timeline), so it is
// fetched only for the rows on screen.
type usage struct {
	running, total int
	manual         int
	err            error
	// stale marks a value still worth showing but due for a refetch.
	stale bool
}

const (
	// loadTimeout bounds one load so a hung backend shows up as an error instead of a list
	// that silently stops updating.
	loadTimeout = 15 * time.Second
	// usageParallel bounds concurrent per-project calls (one runtime status per container).
	usageParallel = 8
)

// fetchUsage reads the usage of each project, a few at a time.
func fetchUsage(ctx context.Context, src source, ps []engine.Project) map[string]usage {
	out := make(map[string]usage, len(ps))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, usageParallel)
	for _, p := range ps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			u := projectUsage(ctx, src, p)
			mu.Lock()
			out[p.ID] = u
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func projectUsage(ctx context.Context, src source, p engine.Project) usage {
	var u usage
	_, cs, err := src.Containers(ctx, p.ID)
	if err != nil {
		u.err = fmt.Errorf("containers of %s: %w", p.Slug, err)
		return u
	}
	u.total = len(cs)
	for _, c := range cs {
		if c.Status.State == engine.ContainerRunning {
			u.running++
		}
	}
	snaps, err := src.Snapshots(ctx, p.ID, false)
	if err != nil {
		u.err = fmt.Errorf("snapshots of %s: %w", p.Slug, err)
		return u
	}
	for _, s := range snaps {
		if s.Type == engine.SnapshotManual && s.Status != engine.SnapshotDeleted {
			u.manual++
		}
	}
	return u
}

var _ source = engineSource{}
