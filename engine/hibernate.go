package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrTouched reports that a project saw activity after it was selected for hibernation; it was
// put back, not hibernated (invariant 4).
var ErrTouched = errors.New("activity after selection; left active")

// Hibernate snapshots all of a project's storage, verifies the snapshot, and only then tears the
// environment down (invariant 1).
func (e *Engine) Hibernate(ctx context.Context, ref string) (Project, error) {
	p, err := e.forWrite(ctx, "hibernate", ref)
	if err != nil {
		return p, err
	}
	if p.Status == StatusHibernated {
		return p, nil
	}
	if p.Status == StatusFailed && p.HibernationSnapshot != "" {
		return e.finishTeardown(ctx, p)
	}
	if p.Status == StatusFailed {
		return p, fmt.Errorf("hibernate %s: project is failed (%s) and has no snapshot to hibernate from; next: %s: %w", p.Slug, p.StatusReason, NextStep(p), ErrBadState)
	}
	o, err := e.claim(ctx, p, OpHibernate, []ProjectStatus{StatusActive}, StatusHibernating, Claim{})
	if err != nil {
		return p, err
	}
	// Uses that ended while the claim waited them out were activity the operator asked to
	// override; activity after that puts the project back.
	// An operator's own hibernate overrides a keep-alive: it is as explicit a wish.
	return e.hibernateClaimed(ctx, o, o.fenced, time.Time{})
}

// hibernateClaimed runs (or resumes) a hibernation. cutoff is the activity time after which the
// project counts as touched and is put back instead; so it is when keptAliveAt is set and a
// keep-alive holds the project then.
func (e *Engine) hibernateClaimed(ctx context.Context, o *op, cutoff, keptAliveAt time.Time) (Project, error) {
	p := o.p
	progress := progressFor(ctx, p.ID, OpHibernate)
	cs, err := e.runningContainers(ctx, p.ID)
	if err != nil {
		return o.finish(ctx, Release{To: StatusActive}, OpFailed, fmt.Errorf("hibernate %s: list containers: %w", p.Slug, err))
	}
	// running are the containers a hibernation that does not go on starts again.
	var running []Container
	if o.resumed {
		// What ran before the hibernation went with the process that stopped it: put back as a
		// wake would have woken it, every container started. Otherwise a resumed hibernation
		// that cannot finish (a snapshot that is not ready in time) would leave the project
		// active with nothing running.
		running = cs
	} else {
		for _, c := range cs {
			// A container still starting was meant to run as much as a running one.
			if st, err := e.runtime.ContainerStatus(ctx, p, c); err == nil && (st.State == ContainerRunning || st.State == ContainerStarting) {
				running = append(running, c)
			}
		}
	}
	if pf, ok := e.volumes.(Preflighter); ok && !o.resumed {
		// A resumed hibernation has stopped the containers already, and may be past its
		// snapshot: it goes on, whatever a check would say now.
		progress(Progress{Phase: "preflight"})
		if err := pf.Preflight(ctx, p); err != nil {
			err = fmt.Errorf("hibernate %s: nothing was stopped: %w", p.Slug, err)
			return o.finish(ctx, Release{To: StatusActive, Reason: err.Error()}, OpRolledBack, err)
		}
	}
	progress(Progress{Phase: "stop"})
	if err := o.guard(ctx, "stop the containers"); err != nil {
		return e.putBack(ctx, o, running, err)
	}
	if err := e.runtime.StopProject(ctx, p, cs); err != nil {
		return e.putBack(ctx, o, running, fmt.Errorf("hibernate %s: stop containers: %w", p.Slug, err))
	}
	if o.rec.SnapshotID == "" {
		o.rec.SnapshotID = snapshotID(SnapshotHibernation, o.rec.ID, o.rec.StartedAt)
	}
	if err := o.step(ctx, "stopped"); err != nil {
		return e.putBack(ctx, o, running, err)
	}
	snap, err := o.takeSnapshot(ctx, o.rec.SnapshotID, SnapshotHibernation, "hibernation")
	if err != nil {
		err = fmt.Errorf("hibernate %s: %w", p.Slug, err)
		if live, xerr := e.runtime.ProjectExists(ctx, p); xerr == nil && !live {
			// A resumed hibernation whose storage is already gone and whose snapshot does not
			// verify now: the project is not active, it needs an operator. The snapshot stays
			// its wake point, so a wake retries once the store answers again.
			return o.finish(ctx, Release{To: StatusFailed, Reason: err.Error(),
				SetHibernationSnapshot: true, HibernationSnapshot: o.rec.SnapshotID}, OpFailed, err)
		}
		return e.putBack(ctx, o, running, err)
	}
	cur, err := e.store.GetProject(ctx, p.ID)
	if err != nil {
		return e.putBack(ctx, o, running, fmt.Errorf("hibernate %s: re-read project: %w", p.Slug, err))
	}
	if cur.LastActivity.After(cutoff) {
		return e.putBack(ctx, o, running, fmt.Errorf("hibernate %s: %w", p.Slug, ErrTouched))
	}
	if !keptAliveAt.IsZero() && cur.KeptAlive(keptAliveAt) {
		return e.putBack(ctx, o, running, fmt.Errorf("hibernate %s: kept alive until %s: %w", p.Slug, cur.KeepAliveUntil.Format(time.RFC3339), ErrTouched))
	}
	progress(Progress{Phase: "teardown"})
	return e.tearDown(ctx, o, p, cs, snap, "teardown failed")
}

// tearDown removes the environment of a hibernation whose snapshot snap is ready, and ends it
// hibernated from snap. From here the snapshot is the project: a failure to tear down must not
// put the project back to active with a half-removed tree, so it is retried and otherwise
// reported (failed says how, in the error), the project failed with snap to wake from.
func (e *Engine) tearDown(ctx context.Context, o *op, p Project, cs []Container, snap Snapshot, failed string) (Project, error) {
	var destroyErr error
	for range 2 {
		if err := o.guard(ctx, "tear down"); err != nil {
			return o.finish(ctx, Release{}, OpFailed, err)
		}
		if destroyErr = e.runtime.DestroyProject(ctx, p, cs); destroyErr == nil {
			break
		}
	}
	if destroyErr != nil {
		return o.finish(ctx, Release{To: StatusFailed, Reason: "teardown incomplete; wake restores from " + snap.ID,
			SetHibernationSnapshot: true, HibernationSnapshot: snap.ID}, OpFailed,
			fmt.Errorf("hibernate %s: snapshot %s is ready but %s: %w", p.Slug, snap.ID, failed, destroyErr))
	}
	if err := o.step(ctx, "torn-down"); err != nil {
		return o.p, err
	}
	e.markLogs(ctx, p, cs, LogMarkHibernated)
	done, err := o.finish(ctx, Release{To: StatusHibernated, SetHibernationSnapshot: true, HibernationSnapshot: snap.ID}, OpDone, nil)
	if err == nil {
		e.rotate(ctx, done, SnapshotHibernation, e.cfg.KeepAutoSnapshots)
	}
	return done, err
}

// finishTeardown ends the hibernation of a project left failed with its snapshot taken (a
// teardown that did not complete, e.g. a foreign container on its network): with that snapshot
// ready, what is left of the environment is removed and the project is hibernated from it.
// Nothing can have changed the tree since: a failed project admits no use (invariant 9), and
// its snapshot is already what a wake restores.
func (e *Engine) finishTeardown(ctx context.Context, p Project) (Project, error) {
	snap, err := e.readySnapshot(ctx, p, p.HibernationSnapshot)
	if err != nil {
		return p, fmt.Errorf("hibernate %s: the teardown cannot be finished: %w; sailtui project wake %s retries the restore from it", p.Slug, err, p.Slug)
	}
	o, err := e.claim(ctx, p, OpHibernate, []ProjectStatus{StatusFailed}, StatusHibernating, Claim{})
	if err != nil {
		return p, err
	}
	// Journaled as a hibernation that has stopped and snapshotted: a resumed one reuses the
	// snapshot and goes on to the teardown.
	o.rec.SnapshotID = snap.ID
	if err := o.step(ctx, "stopped"); err != nil {
		return o.finish(ctx, Release{To: StatusFailed, Reason: p.StatusReason}, OpFailed, err)
	}
	cs, err := e.runningContainers(ctx, p.ID)
	if err != nil {
		return o.finish(ctx, Release{To: StatusFailed, Reason: p.StatusReason}, OpFailed, fmt.Errorf("hibernate %s: list containers: %w", p.Slug, err))
	}
	progressFor(ctx, p.ID, OpHibernate)(Progress{Phase: "teardown"})
	return e.tearDown(ctx, o, p, cs, snap, "teardown failed again")
}

// putBack ends a hibernation that must not go on: the storage is intact, the containers that
// were running are started again and the project is active.
func (e *Engine) putBack(ctx context.Context, o *op, running []Container, cause error) (Project, error) {
	ctx = context.WithoutCancel(ctx)
	if err := o.guard(ctx, "start the containers again"); err != nil {
		// Superseded: the taker decides what runs now. A store that does not answer: the
		// release below fails too, and the next take-over puts the project back.
		return o.finish(ctx, Release{To: StatusActive, Reason: cause.Error()}, OpRolledBack, joinSuperseded(cause, err))
	}
	for _, c := range running {
		if _, _, err := e.startContainer(ctx, o.p, c, nil); err != nil {
			e.log.Warn("restart container after aborted hibernation", "project", o.p.Slug, "container", c.Name, "err", err)
		}
	}
	return o.finish(ctx, Release{To: StatusActive, Reason: cause.Error()}, OpRolledBack, cause)
}

// Wake restores a hibernated project from its hibernation snapshot and starts its containers.
func (e *Engine) Wake(ctx context.Context, ref string) (Project, error) {
	p, err := e.forWrite(ctx, "wake", ref)
	if err != nil {
		return p, err
	}
	if p.Status == StatusActive {
		// "active" is only the truth when the storage is there.
		if ok, err := e.runtime.ProjectExists(ctx, p); err == nil && !ok {
			return p, fmt.Errorf("wake %s: project is active but its storage is gone; sailtui doctor tells the snapshot to wake it from: %w", p.Slug, ErrBadState)
		}
		// Awake already: what is asked is a project that runs, so whatever is missing of its
		// environment (containers an idle tier stopped, a network removed by hand) is brought
		// back, as a start does.
		return e.StartProject(ctx, p.ID)
	}
	if p.HibernationSnapshot == "" {
		if err := e.inProgress(ctx, "wake "+p.Slug, p); err != nil {
			return p, err // a hibernation under way: its snapshot is not recorded yet
		}
		return p, fmt.Errorf("wake %s: project is %s and has no hibernation snapshot: %w", p.Slug, p.Status, ErrBadState)
	}
	o, err := e.claim(ctx, p, OpWake, []ProjectStatus{StatusHibernated, StatusFailed}, StatusRestoring, Claim{})
	if err != nil {
		return p, err
	}
	o.rec.SnapshotID = p.HibernationSnapshot
	return e.wakeClaimed(ctx, o)
}

// unusableArchive is said of a snapshot whose archive is gone or fails its checksum. Retrying
// cannot help, unlike after a dropped connection, so the message says what can; restores swap
// in only a complete, verified tree, so nothing was changed.
const unusableArchive = " (its archive is missing or damaged; nothing was changed: restore another of the project's snapshots)"

func (e *Engine) wakeClaimed(ctx context.Context, o *op) (Project, error) {
	p := o.p
	if o.rec.SnapshotID == "" {
		// Killed right after the claim: the project still names its wake point.
		o.rec.SnapshotID = p.HibernationSnapshot
	}
	if o.rec.Step == "restored" || o.rec.Step == "started" {
		// A resumed wake whose tree is already in place only has containers left to start.
		return e.startAfterRestore(ctx, o)
	}
	if err := o.step(ctx, "restoring"); err != nil {
		return o.finish(ctx, Release{To: StatusHibernated}, OpFailed, err)
	}
	snap, err := e.readySnapshot(ctx, p, o.rec.SnapshotID)
	if err != nil {
		return o.finish(ctx, Release{To: StatusHibernated, Reason: err.Error()}, OpFailed, fmt.Errorf("wake %s: %w", p.Slug, err))
	}
	if err := o.guard(ctx, "restore "+snap.ID); err != nil {
		return o.finish(ctx, Release{To: StatusHibernated}, OpFailed, err)
	}
	// Storage that is there although the project is hibernated came back from somewhere (a
	// disk that was unmounted when doctor --fix pointed the project at a snapshot, an earlier
	// wake's leftovers): it may hold acknowledged writes the snapshot has not, so it is kept
	// as a safety snapshot before anything replaces it.
	if present, err := e.runtime.ProjectExists(ctx, p); err != nil {
		return o.finish(ctx, Release{To: StatusHibernated, Reason: err.Error()}, OpFailed, fmt.Errorf("wake %s: check storage: %w", p.Slug, err))
	} else if present {
		kept, err := o.takeSnapshot(ctx, safetyID(o), SnapshotSafety, "present before waking from "+snap.ID)
		if err != nil {
			err = fmt.Errorf("wake %s: its storage is present although it is hibernated, and keeping it as a safety snapshot failed; nothing was replaced: %w", p.Slug, err)
			return o.finish(ctx, Release{To: StatusHibernated, Reason: err.Error()}, OpFailed, err)
		}
		o.kept = kept.ID
	}
	if err := e.runtime.EnsureProject(ctx, p); err != nil {
		return o.finish(ctx, Release{To: StatusHibernated, Reason: err.Error()}, OpFailed, fmt.Errorf("wake %s: prepare environment: %w", p.Slug, err))
	}
	// Nothing may run in a tree that is about to be swapped (a resumed wake may find containers
	// its killed predecessor started).
	if cs, err := e.runningContainers(ctx, p.ID); err == nil {
		if err := e.runtime.StopProject(ctx, p, cs); err != nil {
			return o.finish(ctx, Release{To: StatusHibernated, Reason: err.Error()}, OpFailed, fmt.Errorf("wake %s: stop leftover containers: %w", p.Slug, err))
		}
	}
	if err := e.volumes.Restore(o.withGuard(withProgressFor(ctx, p.ID, OpWake)), p, snap); err != nil {
		what := "restore snapshot " + snap.ID
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrChecksum) {
			what += unusableArchive
		}
		return o.finish(ctx, Release{To: StatusHibernated, Reason: what + ": " + err.Error()}, OpFailed, fmt.Errorf("wake %s: %s: %w", p.Slug, what, err))
	}
	if err := o.step(ctx, "restored"); err != nil {
		return o.p, err
	}
	return e.startAfterRestore(ctx, o)
}

// startAfterRestore counts the restore as activity, starts every container and releases the
// project as active with live storage (no hibernation snapshot to wake from any more).
func (e *Engine) startAfterRestore(ctx context.Context, o *op) (Project, error) {
	p := o.p
	source := SourceWake
	if o.rec.Kind != OpWake {
		source = SourceRestore
	}
	e.touch(ctx, p, source)
	if cs, err := e.runningContainers(ctx, p.ID); err == nil {
		what := LogMarkWoke
		if o.rec.Kind != OpWake {
			what = LogMarkRestored
		}
		e.markLogs(ctx, p, cs, what)
	}
	progressFor(ctx, p.ID, o.rec.Kind)(Progress{Phase: "start"})
	if err := o.guard(ctx, "start the containers"); err != nil {
		return o.finish(ctx, Release{To: StatusActive}, OpFailed, err)
	}
	startErr := e.startAll(ctx, p)
	if err := o.step(ctx, "started"); err != nil {
		return o.p, err
	}
	reason := startFailedReason(startErr)
	if o.kept != "" {
		reason = strings.TrimPrefix(reason+"; ", "; ") + fmt.Sprintf("the files present before the wake are kept as safety snapshot %s (sailtui snapshot restore %s %s brings them back)", o.kept, p.Slug, o.kept)
	}
	return o.finish(ctx, Release{To: StatusActive, Reason: reason, SetHibernationSnapshot: true, HibernationSnapshot: ""}, OpDone, startErr)
}

// readySnapshot loads a snapshot of p that can be restored.
func (e *Engine) readySnapshot(ctx context.Context, p Project, id string) (Snapshot, error) {
	s, err := e.store.GetSnapshot(ctx, id)
	if err != nil {
		return s, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if s.ProjectID != p.ID {
		return s, fmt.Errorf("snapshot %s belongs to another project: %w", id, ErrBadInput)
	}
	if s.Status != SnapshotReady {
		return s, fmt.Errorf("snapshot %s is %s, not ready: %w", id, s.Status, ErrBadState)
	}
	return s, nil
}

// forWrite is the door of every operation that changes a project: refused on a read-only
// engine (what names the operation), else the project ref after converge.
func (e *Engine) forWrite(ctx context.Context, what, ref string) (Project, error) {
	if err := e.writable(what); err != nil {
		return Project{}, err
	}
	return e.converge(ctx, ref)
}

// converge finds a project and, when its operation's holder died or went silent, finishes or
// rolls back that operation first (invariant 2), so the caller sees a settled project.
func (e *Engine) converge(ctx context.Context, ref string) (Project, error) {
	p, err := e.liveProject(ctx, ref)
	if err != nil || !e.stale(p) {
		return p, err
	}
	kind := p.OpKind
	p, err = e.resume(ctx, p)
	if err != nil && !errors.Is(err, ErrTouched) {
		return p, fmt.Errorf("finish interrupted %s of %s: %w", kind, p.Slug, err)
	}
	return e.liveProject(ctx, p.ID)
}

// resume takes over a stale operation and drives it to an end.
func (e *Engine) resume(ctx context.Context, p Project) (Project, error) {
	o, err := e.takeOver(ctx, p)
	if err != nil {
		return p, err
	}
	switch o.rec.Kind {
	case OpHibernate:
		return e.hibernateClaimed(ctx, o, o.rec.StartedAt, time.Time{})
	case OpWake:
		return e.wakeClaimed(ctx, o)
	case OpRestore:
		return e.restoreClaimed(ctx, o)
	case OpDelete:
		return e.deleteClaimed(ctx, o)
	case OpUndelete:
		return e.undeleteClaimed(ctx, o)
	case OpSnapshot:
		// A manual snapshot is not retried behind the user's back: mark it failed.
		if s, err := e.store.GetSnapshot(ctx, o.rec.SnapshotID); err == nil && s.Status == SnapshotPending {
			_ = o.failSnapshot(ctx, s, fmt.Errorf("interrupted: the process taking it stopped"))
		}
		return o.finish(ctx, Release{To: o.p.Status}, OpRolledBack, nil)
	case OpCreate:
		return o.finish(ctx, Release{To: StatusFailed, Reason: "creation was interrupted; remove the project and create it again"}, OpFailed, nil)
	default:
		return o.finish(ctx, Release{To: o.p.Status}, OpRolledBack, nil)
	}
}
