package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// snapshotID derives a snapshot's name from the operation that makes it, so a resumed operation
// finds the snapshot it already made instead of taking a new one. The op id is a random UUID:
// names are unique and never reused, whatever the clock says.
func snapshotID(t SnapshotType, opID string, at time.Time) string {
	short := strings.ReplaceAll(opID, "-", "")
	if len(short) > 12 {
		short = short[:12]
	}
	return fmt.Sprintf("%s-%s-%s", t, at.UTC().Format("20060102-150405"), short)
}

// takeSnapshot makes snapshot id of the held project, or finishes it when a previous attempt of
// the same operation got part of the way. It returns only a ready, verified snapshot.
func (o *op) takeSnapshot(ctx context.Context, id string, t SnapshotType, label string) (Snapshot, error) {
	e := o.e
	s, err := e.store.GetSnapshot(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		s = Snapshot{ID: id, ProjectID: o.p.ID, Owner: o.p.Owner, Type: t, Label: label,
			Status: SnapshotPending, CreatedAt: e.now(), Backend: e.volumes.Name(), UnpackedBytes: -1}
		if err := e.store.InsertSnapshot(ctx, s, MaxManualSnapshots, o.hold); err != nil {
			return s, o.noteLost(fmt.Errorf("record snapshot %s: %w", id, err))
		}
	case err != nil:
		return s, fmt.Errorf("read snapshot %s: %w", id, err)
	case s.Status == SnapshotReady:
		// A retry: reuse what the previous attempt made, after reading it back once more.
		v, err := e.volumes.WaitReady(ctx, s)
		if err == nil {
			return v, nil
		}
		// Never give up a ready snapshot when the storage it copies is gone: it may be the
		// only copy of the project, and the failure may pass (a store that is down).
		if ok, xerr := e.runtime.ProjectExists(ctx, o.p); xerr != nil || !ok {
			return s, fmt.Errorf("snapshot %s does not verify and the project's storage is gone; keeping it: %w", id, err)
		}
		e.log.Warn("snapshot from earlier attempt does not verify; taking it again", "snapshot", id, "err", err)
	}
	if err := o.step(ctx, "snapshot-pending"); err != nil {
		return s, err
	}
	if ok, err := e.runtime.ProjectExists(ctx, o.p); err != nil {
		return s, fmt.Errorf("snapshot %s: check storage: %w", id, err)
	} else if !ok {
		return s, o.failSnapshot(ctx, s, fmt.Errorf("snapshot %s: the project's storage is missing", id))
	}
	s.Status, s.Error, s.DeletedAt = SnapshotPending, "", time.Time{}
	if s.Parts, err = e.snapshotParts(ctx, o.p); err != nil {
		return s, o.failSnapshot(ctx, s, fmt.Errorf("snapshot %s: %w", id, err))
	}
	progress := progressFor(ctx, o.p.ID, o.rec.Kind)
	// The walk pauses the project's containers and writes under this snapshot's name: both
	// are the taker's business once this op was superseded.
	if err := o.guard(ctx, "take snapshot "+id); err != nil {
		return s, err
	}
	created, err := o.createPointInTime(ctx, s, progress)
	if err != nil {
		return s, o.failSnapshot(ctx, s, fmt.Errorf("snapshot %s: %w", id, err))
	}
	if sk := created.Skipped; sk.Count > 0 {
		// Nothing of them is lost that a restore could give back, but their owner should know
		// they will be missing (a socket its server makes again; a device node is not a file).
		e.log.Warn("snapshot left out entries no snapshot can hold (sockets, devices)", "project", o.p.Slug,
			"snapshot", id, "count", sk.Count, "first", sk.First)
	}
	if err := e.store.UpdateSnapshot(ctx, created, o.hold); err != nil {
		return s, o.noteLost(fmt.Errorf("record snapshot %s: %w", id, err))
	}
	if err := o.step(ctx, "snapshot-written"); err != nil {
		return created, err
	}
	progress(Progress{Phase: "verify"})
	ready, err := e.volumes.WaitReady(ctx, created)
	if err != nil {
		return created, o.failSnapshot(ctx, created, fmt.Errorf("snapshot %s: verify: %w", id, err))
	}
	ready.Status, ready.ReadyAt = SnapshotReady, e.now()
	if err := e.store.UpdateSnapshot(ctx, ready, o.hold); err != nil {
		return ready, o.noteLost(fmt.Errorf("record snapshot %s ready: %w", id, err))
	}
	e.publish(ctx, Event{ProjectID: o.p.ID, Slug: o.p.Slug, Kind: "snapshot", Snapshot: id, Reason: "snapshot ready"})
	if err := o.step(ctx, "snapshot-ready"); err != nil {
		return ready, err
	}
	return ready, nil
}

// failSnapshot retires a snapshot that will never be ready: whatever part of it was stored is
// removed, and it is soft-deleted with its error kept, so it takes no timeline slot, shows with
// --all, and the purge forgets it after the retention period (failed attempts do not pile up).
//
// Both steps are this op's only while it holds the project: a superseded op's snapshot may be
// its taker's by now (a takeover resumes the same snapshot id), so the row is retired by a
// fenced write and the data is removed only after that write went in.
func (o *op) failSnapshot(ctx context.Context, s Snapshot, cause error) error {
	ctx = context.WithoutCancel(ctx)
	if errors.Is(cause, ErrSuperseded) {
		return cause
	}
	s.Status, s.Error, s.DeletedAt = SnapshotDeleted, cause.Error(), o.e.now()
	if err := o.e.store.UpdateSnapshot(ctx, s, o.hold); err != nil {
		if errors.Is(o.noteLost(err), ErrSuperseded) {
			return joinSuperseded(cause, o.supersededErr())
		}
		o.e.log.Warn("mark snapshot failed", "snapshot", s.ID, "err", err)
	}
	if err := o.guard(ctx, "remove the failed snapshot's data"); err != nil {
		return joinSuperseded(cause, err)
	}
	if err := o.e.volumes.Delete(ctx, s); err != nil {
		o.e.log.Warn("remove failed snapshot's data", "snapshot", s.ID, "err", err)
	}
	return cause
}

// rotate soft-deletes the project's ready snapshots of type t beyond the newest keep; the
// purge removes them after the retention period. The project's wake point is never rotated
// and is one of the keep (counted apart, keep 2 would keep 3): beside it the newest keep-1
// others are kept, or keep when it is not of type t.
func (e *Engine) rotate(ctx context.Context, p Project, t SnapshotType, keep int) {
	snaps, err := e.store.ListSnapshots(ctx, SnapshotFilter{ProjectID: p.ID, Types: []SnapshotType{t}})
	if err != nil {
		e.log.Warn("rotate snapshots", "project", p.Slug, "err", err)
		return
	}
	isWakePoint := func(s Snapshot) bool { return s.ID == p.HibernationSnapshot && s.Status == SnapshotReady }
	kept := 0
	if slices.ContainsFunc(snaps, isWakePoint) {
		kept = 1
	}
	for _, s := range newestFirst(snaps) {
		if s.Status != SnapshotReady || isWakePoint(s) {
			continue
		}
		kept++
		if kept <= keep {
			continue
		}
		s.Status, s.DeletedAt = SnapshotDeleted, e.now()
		// Unfenced: a rotation runs after its operation released the project.
		if err := e.store.UpdateSnapshot(ctx, s, Hold{}); err != nil {
			e.log.Warn("rotate snapshot", "snapshot", s.ID, "err", err)
		}
	}
}

func newestFirst(snaps []Snapshot) []Snapshot {
	out := slices.Clone(snaps)
	slices.SortStableFunc(out, func(a, b Snapshot) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out
}
