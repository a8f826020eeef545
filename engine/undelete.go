package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// OpUndelete brings a removed project back (journaled like the other operations, so a process
// killed half-way is finished by the next sweep).
const OpUndelete OpKind = "undelete"

// purgeMargin is the end of the retention period that belongs to the purge: a snapshot that
// close to expiry is not brought back, since a purge running now may be removing its data.
const purgeMargin = time.Hour

// undeleteCutoff is the oldest deletion time a snapshot can still be brought back from.
func (e *Engine) undeleteCutoff() time.Time {
	return e.now().Add(-SnapshotRetention + purgeMargin)
}

// UndeleteSnapshot brings a soft-deleted snapshot of project ref back into its timeline, as it
// was before it was deleted. key names it as every snapshot argument does (ResolveSnapshot),
// among the deleted ones. A manual one needs a free slot (invariant 5); one that failed, or
// whose retention is (nearly) over, cannot come back.
func (e *Engine) UndeleteSnapshot(ctx context.Context, ref, key string) (Snapshot, error) {
	if err := e.writable("undelete snapshot"); err != nil {
		return Snapshot{}, err
	}
	p, err := e.Project(ctx, ref)
	if err != nil {
		return Snapshot{}, err
	}
	if p.Status == StatusDeleted {
		return Snapshot{}, fmt.Errorf("undelete snapshot: project %s is deleted; bring it back first (sailtui project undelete %s): %w", p.Slug, p.Slug, ErrBadState)
	}
	s, err := e.resolveSnapshot(ctx, p, key, func(s Snapshot) bool { return s.Status == SnapshotDeleted })
	if errors.Is(err, ErrNotFound) {
		if live, lerr := e.resolveSnapshot(ctx, p, key, nil); lerr == nil {
			return live, fmt.Errorf("undelete snapshot %s of %s: it is %s, not deleted; nothing to bring back: %w", live.ID, p.Slug, live.Status, ErrBadState)
		}
	}
	if err != nil {
		return s, err
	}
	back, err := e.store.UndeleteSnapshot(ctx, s.ID, e.undeleteCutoff(), MaxManualSnapshots)
	switch {
	case errors.Is(err, ErrTimelineFull):
		return s, fmt.Errorf("undelete snapshot %s: project %s already has %d manual snapshots, the limit; free a slot with 'sailtui snapshot rm %s SNAPSHOT' and try again: %w",
			s.ID, p.Slug, MaxManualSnapshots, p.Slug, ErrTimelineFull)
	case errors.Is(err, ErrConflict):
		return s, fmt.Errorf("%w: %w", err, ErrBadState)
	case err != nil:
		return s, err
	}
	e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, Kind: "snapshot", Snapshot: back.ID, Reason: "snapshot undeleted"})
	return back, nil
}

// UndeleteProject brings a removed project back from its final snapshot, while that is kept:
// the project returns hibernated on that snapshot, so `project wake` restores its files and
// starts it. Its other snapshots stay deleted (snapshot undelete brings each back). ref is the
// project's slug (or, when a live project has taken the slug, its ID).
func (e *Engine) UndeleteProject(ctx context.Context, ref string) (Project, error) {
	if err := e.writable("undelete project"); err != nil {
		return Project{}, err
	}
	p, err := e.store.GetProject(ctx, ref)
	switch {
	case errors.Is(err, ErrNotFound):
		// Where to look is the list that shows removed projects too, not the live list.
		return p, fmt.Errorf("undelete project %q: no project of that name, removed or not (removed ones are listed by: sailtui projects ls --all): %w", ref, ErrNotFound)
	case err != nil:
		return p, fmt.Errorf("undelete project %q: find it: %w", ref, err)
	}
	if p.Status != StatusDeleted {
		return p, fmt.Errorf("undelete project %s: it is %s, not deleted (a deleted project of that name comes back only once the name is free; find its ID with: sailtui projects ls --all -o json): %w",
			p.Slug, p.Status, ErrBadState)
	}
	if err := e.slugFree(ctx, p); err != nil {
		return p, err
	}
	// Checked before the claim too, so a project without a way back is refused untouched.
	if _, err := e.finalSnapshot(ctx, p, ""); err != nil {
		return p, err
	}
	o, err := e.claim(ctx, p, OpUndelete, []ProjectStatus{StatusDeleted}, StatusDeleted, Claim{})
	if err != nil {
		return p, err
	}
	return e.undeleteClaimed(ctx, o)
}

// undeleteClaimed does the work of an undelete that holds the project (and finishes one whose
// process died): bring back the final snapshot, then the project, hibernated on it.
func (e *Engine) undeleteClaimed(ctx context.Context, o *op) (Project, error) {
	p := o.p
	fail := func(err error) (Project, error) {
		return o.finish(ctx, Release{To: StatusDeleted, Reason: p.StatusReason}, OpFailed, fmt.Errorf("undelete project %s: %w", p.Slug, err))
	}
	final, err := e.finalSnapshot(ctx, p, o.rec.SnapshotID)
	if err != nil {
		return fail(err)
	}
	if err := e.slugFree(ctx, p); err != nil {
		return fail(err)
	}
	o.rec.SnapshotID = final.ID
	if final.Status == SnapshotDeleted {
		if _, err := e.store.UndeleteSnapshot(ctx, final.ID, e.undeleteCutoff(), MaxManualSnapshots); err != nil {
			return fail(fmt.Errorf("bring back its final snapshot %s: %w", final.ID, err))
		}
	}
	if err := o.step(ctx, "snapshot-back"); err != nil {
		return o.p, err
	}
	done, err := o.finish(ctx, Release{To: StatusHibernated, Reason: "undeleted: wake it to restore its files",
		SetHibernationSnapshot: true, HibernationSnapshot: final.ID}, OpDone, nil)
	if err == nil {
		// Coming back is activity: the sweep does not take it for idle at once.
		e.touch(ctx, p, SourceUndelete)
	}
	return done, err
}

// slugFree refuses to bring p back under a slug a live project has taken since.
func (e *Engine) slugFree(ctx context.Context, p Project) error {
	cur, err := e.store.GetProject(ctx, p.Slug)
	if err != nil {
		return fmt.Errorf("undelete project %s: check its name: %w", p.Slug, err)
	}
	if cur.ID != p.ID && cur.Status != StatusDeleted {
		return fmt.Errorf("undelete project %s: another project (%s) has that name now; remove it first or keep it: %w", p.Slug, cur.ID, ErrExists)
	}
	return nil
}

// finalSnapshot is what a removed project comes back from: the snapshot its removal took (the
// journal names it), else its newest hibernation snapshot that holds data (a project removed
// while hibernated: the one it would have woken from). hint, when set, is the one an
// interrupted undelete chose. It must still be within retention.
func (e *Engine) finalSnapshot(ctx context.Context, p Project, hint string) (Snapshot, error) {
	id := hint
	if id == "" {
		ops, err := e.store.ListOps(ctx, p.ID, 20)
		if err != nil {
			return Snapshot{}, fmt.Errorf("undelete project %s: read its journal: %w", p.Slug, err)
		}
		for _, op := range ops {
			if op.Kind == OpDelete && op.State == OpDone {
				id = op.SnapshotID
				break
			}
		}
	}
	if id == "" {
		snaps, err := e.store.ListSnapshots(ctx, SnapshotFilter{ProjectID: p.ID, Types: []SnapshotType{SnapshotHibernation}, IncludeDeleted: true})
		if err != nil {
			return Snapshot{}, fmt.Errorf("undelete project %s: list its snapshots: %w", p.Slug, err)
		}
		for _, s := range newestFirst(snaps) {
			if s.Error == "" && (s.Status == SnapshotDeleted || s.Status == SnapshotReady) {
				id = s.ID
				break
			}
		}
	}
	if id == "" {
		return Snapshot{}, fmt.Errorf("undelete project %s: it has no final snapshot to come back from (it had no storage when it was removed): %w", p.Slug, ErrNotFound)
	}
	s, err := e.store.GetSnapshot(ctx, id)
	if err != nil {
		return s, fmt.Errorf("undelete project %s: its final snapshot %s: %w", p.Slug, id, err)
	}
	if s.Status == SnapshotDeleted && !s.DeletedAt.After(e.undeleteCutoff()) {
		return s, fmt.Errorf("undelete project %s: its final snapshot %s was deleted %s, past its %d days of retention: %w",
			p.Slug, id, s.DeletedAt.Format(time.RFC3339), int(SnapshotRetention.Hours()/24), ErrBadState)
	}
	if s.Status != SnapshotDeleted && s.Status != SnapshotReady {
		return s, fmt.Errorf("undelete project %s: its final snapshot %s is %s: %w", p.Slug, id, s.Status, ErrBadState)
	}
	return s, nil
}
