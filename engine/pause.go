package engine

import (
	"context"
	"fmt"
	"time"
)

// Pauser is offered by runtimes that can freeze a project's processes in place, so that a
// snapshot taken while the project runs holds its tree as it was at one moment (invariant 10)
// rather than a mix of before and after of whatever the project's code was writing meanwhile.
// Runtimes whose snapshots are crash-consistent by themselves (a CSI VolumeSnapshot) do not
// offer it.
type Pauser interface {
	// PauseProject freezes every running container of p: those in cs and any other the
	// runtime knows of for p. A container that is not running is left as it is. It returns
	// once every process is frozen, or with an error and nothing left frozen.
	//
	// resume thaws what PauseProject froze. The caller must call it on every path; a second
	// call does nothing and returns the first call's result. The runtime also makes sure a
	// pause does not outlive the process that took it (a crash, kill -9): a frozen project
	// would otherwise serve nothing until an operator noticed.
	PauseProject(ctx context.Context, p Project, cs []Container) (resume func(context.Context) error, err error)
}

// pausesForSnapshot says whether the snapshot the operation takes is of a running project: a
// manual snapshot, or the safety snapshot a restore takes of the live project before replacing
// it. Hibernation and deletion stop the containers before they snapshot.
func (o *op) pausesForSnapshot() bool {
	return o.rec.Kind == OpSnapshot || o.rec.Kind == OpRestore
}

// createPointInTime is e.volumes.Create with the project's containers paused for the walk, when
// the runtime can pause them and the operation snapshots a running project. The containers are
// resumed whatever Create did, even when ctx is cancelled; a failed resume is logged and
// published, and does not change the snapshot's result: the snapshot is good, and the operator
// has to look at the containers either way. progress gets the pause and resume phases; Create
// reports through ctx, bound to the operation.
func (o *op) createPointInTime(ctx context.Context, s Snapshot, progress ProgressFunc) (Snapshot, error) {
	e := o.e
	vctx := withProgressFor(ctx, o.p.ID, o.rec.Kind)
	pauser, ok := e.runtime.(Pauser)
	if !ok || !o.pausesForSnapshot() {
		return e.volumes.Create(vctx, o.p, s)
	}
	cs, err := e.runningContainers(ctx, o.p.ID)
	if err != nil {
		return s, fmt.Errorf("pause containers: list containers: %w", err)
	}
	progress(Progress{Phase: "pause"})
	started := time.Now()
	resume, err := pauser.PauseProject(ctx, o.p, cs)
	if err != nil {
		return s, fmt.Errorf("pause containers: %w", err)
	}
	defer func() {
		progress(Progress{Phase: "resume"})
		rctx := context.WithoutCancel(ctx)
		if err := resume(rctx); err != nil {
			e.log.Error("resume containers after snapshot", "project", o.p.Slug, "snapshot", s.ID, "err", err)
			e.publish(rctx, Event{ProjectID: o.p.ID, Slug: o.p.Slug, Kind: "container", Snapshot: s.ID,
				Reason: fmt.Sprintf("containers could not be resumed after snapshot %s: %v", s.ID, err)})
			return
		}
		e.log.Debug("containers paused for snapshot", "project", o.p.Slug, "snapshot", s.ID,
			"paused_ms", time.Since(started).Milliseconds())
	}()
	return e.volumes.Create(vctx, o.p, s)
}
