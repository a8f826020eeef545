package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MaxLabelLength bounds snapshot labels (they are shown in a console column).
const MaxLabelLength = 120

func checkLabel(label string) (string, error) {
	label = strings.TrimSpace(label)
	if err := checkText("label", label, MaxLabelLength); err != nil {
		return "", err
	}
	return label, nil
}

// Snapshots lists a project's timeline, newest first.
func (e *Engine) Snapshots(ctx context.Context, ref string, includeDeleted bool) ([]Snapshot, error) {
	p, err := e.Project(ctx, ref)
	if err != nil {
		return nil, err
	}
	snaps, err := e.store.ListSnapshots(ctx, SnapshotFilter{ProjectID: p.ID, IncludeDeleted: includeDeleted})
	if err != nil {
		return nil, fmt.Errorf("list snapshots of %s: %w", p.Slug, err)
	}
	return newestFirst(snaps), nil
}

// CreateSnapshot takes a manual snapshot of a live project and returns once it is ready or
// failed. The sixth manual snapshot is refused (invariant 5); nothing is evicted.
func (e *Engine) CreateSnapshot(ctx context.Context, ref, label string) (Snapshot, error) {
	if err := e.writable("snapshot"); err != nil {
		return Snapshot{}, err
	}
	label, err := checkLabel(label)
	if err != nil {
		return Snapshot{}, err
	}
	p, err := e.converge(ctx, ref)
	if err != nil {
		return Snapshot{}, err
	}
	if err := e.inProgress(ctx, "snapshot "+p.Slug, p); err != nil {
		return Snapshot{}, err
	}
	if p.Status != StatusActive {
		return Snapshot{}, fmt.Errorf("snapshot %s: project is %s; wake it first (sailtui project wake %s): %w", p.Slug, p.Status, p.Slug, ErrBadState)
	}
	if err := e.checkTimelineRoom(ctx, p); err != nil {
		return Snapshot{}, err
	}
	o, err := e.claim(ctx, p, OpSnapshot, []ProjectStatus{StatusActive}, StatusActive, Claim{})
	if err != nil {
		return Snapshot{}, err
	}
	o.rec.SnapshotID = snapshotID(SnapshotManual, o.rec.ID, o.rec.StartedAt)
	if label == "" {
		label = "snapshot " + o.rec.StartedAt.Format("2006-01-02 15:04")
	}
	snap, err := o.takeSnapshot(ctx, o.rec.SnapshotID, SnapshotManual, label)
	if err != nil {
		if errors.Is(err, ErrTimelineFull) {
			err = timelineFull(p)
		}
		_, err = o.finish(ctx, Release{To: StatusActive}, OpFailed, fmt.Errorf("snapshot %s: %w", p.Slug, err))
		return snap, err
	}
	_, err = o.finish(ctx, Release{To: StatusActive}, OpDone, nil)
	return snap, err
}

// checkTimelineRoom refuses early, with the way out, when the timeline is already full; the
// store checks again atomically when the snapshot is recorded.
func (e *Engine) checkTimelineRoom(ctx context.Context, p Project) error {
	snaps, err := e.store.ListSnapshots(ctx, SnapshotFilter{ProjectID: p.ID, Types: []SnapshotType{SnapshotManual}})
	if err != nil {
		return fmt.Errorf("snapshot %s: list timeline: %w", p.Slug, err)
	}
	if len(snaps) >= MaxManualSnapshots {
		return timelineFull(p)
	}
	return nil
}

func timelineFull(p Project) error {
	return fmt.Errorf("project %s already has %d manual snapshots, the limit; free a slot with "+
		"'sailtui snapshot rm %s ID' (deleted snapshots are kept %d days) and try again: %w",
		p.Slug, MaxManualSnapshots, p.Slug, int(SnapshotRetention.Hours()/24), ErrTimelineFull)
}

// ReplaceSnapshot frees the slot of manual snapshot oldID (soft delete) and takes a new manual
// snapshot in its place: what the console offers when the timeline is full. If the new snapshot
// fails the old one is brought back.
func (e *Engine) ReplaceSnapshot(ctx context.Context, ref, oldID, label string) (Snapshot, error) {
	old, err := e.snapshotOf(ctx, ref, oldID)
	if err != nil {
		return Snapshot{}, err
	}
	oldID = old.ID
	if old.Type != SnapshotManual {
		return Snapshot{}, fmt.Errorf("replace %s: only manual snapshots take a timeline slot: %w", oldID, ErrBadInput)
	}
	if err := e.DeleteSnapshot(ctx, ref, oldID); err != nil {
		return Snapshot{}, err
	}
	snap, err := e.CreateSnapshot(ctx, ref, label)
	if err != nil {
		if uerr := e.store.UpdateSnapshot(context.WithoutCancel(ctx), old, Hold{}); uerr != nil {
			err = errors.Join(err, fmt.Errorf("bring back %s: %w", oldID, uerr))
		}
	}
	return snap, err
}

func (e *Engine) snapshotOf(ctx context.Context, ref, key string) (Snapshot, error) {
	p, err := e.Project(ctx, ref)
	if err != nil {
		return Snapshot{}, err
	}
	return e.resolveSnapshot(ctx, p, key, nil)
}

// ResolveSnapshot finds the snapshot of project ref that key names, deleted ones included: its
// ID, else its label, else a unique prefix of its ID (as docker takes ID prefixes). A key that
// names several is refused with the candidates, so nothing is done to a guess.
func (e *Engine) ResolveSnapshot(ctx context.Context, ref, key string) (Snapshot, error) {
	return e.snapshotOf(ctx, ref, key)
}

// maxCandidates bounds the list an ambiguous snapshot key is answered with.
const maxCandidates = 8

// resolveSnapshot is ResolveSnapshot among the snapshots of p that keep accepts (nil: all).
func (e *Engine) resolveSnapshot(ctx context.Context, p Project, key string, keep func(Snapshot) bool) (Snapshot, error) {
	if strings.TrimSpace(key) == "" {
		return Snapshot{}, fmt.Errorf("no snapshot given: name one by its ID, label or a unique ID prefix (list them with: sailtui snapshot ls %s --all): %w", p.Slug, ErrBadInput)
	}
	if s, err := e.store.GetSnapshot(ctx, key); err == nil && s.ProjectID == p.ID && (keep == nil || keep(s)) {
		return s, nil
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return s, fmt.Errorf("read snapshot %s: %w", key, err)
	}
	snaps, err := e.store.ListSnapshots(ctx, SnapshotFilter{ProjectID: p.ID, IncludeDeleted: true})
	if err != nil {
		return Snapshot{}, fmt.Errorf("find snapshot %q of %s: %w", key, p.Slug, err)
	}
	var byLabel, byPrefix []Snapshot
	for _, s := range newestFirst(snaps) {
		if keep != nil && !keep(s) {
			continue
		}
		if s.Label == key {
			byLabel = append(byLabel, s)
		}
		if strings.HasPrefix(s.ID, key) {
			byPrefix = append(byPrefix, s)
		}
	}
	found := byLabel
	if len(found) == 0 {
		found = byPrefix
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Snapshot{}, fmt.Errorf("project %s has no snapshot %q (by ID, label or ID prefix; list them with: sailtui snapshot ls %s --all): %w", p.Slug, key, p.Slug, ErrNotFound)
	}
	lines := make([]string, 0, maxCandidates+1)
	for i, s := range found {
		if i == maxCandidates {
			lines = append(lines, fmt.Sprintf("and %d more", len(found)-i))
			break
		}
		lines = append(lines, fmt.Sprintf("%s (%s, %s, %q)", s.ID, s.Type, s.Status, s.Label))
	}
	return Snapshot{}, fmt.Errorf("snapshot %q of %s is ambiguous, it names %d snapshots: %s; give its full ID or a longer prefix: %w",
		key, p.Slug, len(found), strings.Join(lines, "; "), ErrBadInput)
}

// RelabelSnapshot changes a snapshot's label.
func (e *Engine) RelabelSnapshot(ctx context.Context, ref, id, label string) (Snapshot, error) {
	if err := e.writable("relabel"); err != nil {
		return Snapshot{}, err
	}
	label, err := checkLabel(label)
	if err != nil {
		return Snapshot{}, err
	}
	s, err := e.snapshotOf(ctx, ref, id)
	if err != nil {
		return s, err
	}
	s.Label = label
	if err := e.store.UpdateSnapshot(ctx, s, Hold{}); err != nil {
		return s, fmt.Errorf("relabel %s: %w", id, err)
	}
	return s, nil
}

// DeleteSnapshot soft-deletes a snapshot: it leaves the timeline (freeing a manual slot) and
// its data is purged after the retention period. The snapshot a hibernated project wakes from
// cannot be deleted.
func (e *Engine) DeleteSnapshot(ctx context.Context, ref, id string) error {
	if err := e.writable("delete snapshot"); err != nil {
		return err
	}
	s, err := e.snapshotOf(ctx, ref, id)
	if err != nil {
		return err
	}
	id = s.ID
	p, err := e.Project(ctx, ref)
	if err != nil {
		return err
	}
	if p.HibernationSnapshot == s.ID && p.Status != StatusActive {
		return fmt.Errorf("snapshot %s holds hibernated project %s; wake it first: %w", id, p.Slug, ErrBadState)
	}
	if s.Status == SnapshotDeleted {
		return nil
	}
	if s.Status == SnapshotPending {
		return fmt.Errorf("snapshot %s is still being taken: %w", id, ErrBusy)
	}
	s.Status, s.DeletedAt = SnapshotDeleted, e.now()
	if err := e.store.UpdateSnapshot(ctx, s, Hold{}); err != nil {
		return fmt.Errorf("delete snapshot %s: %w", id, err)
	}
	e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, Kind: "snapshot", Snapshot: id, Reason: "snapshot deleted"})
	return nil
}

// RestoreResult tells what a restore replaced and where the state before it went.
type RestoreResult struct {
	Project  Project  `json:"project"`
	Restored Snapshot `json:"restored"`
	// Safety is the snapshot of the state before the restore (empty when the project was
	// hibernated: its hibernation snapshot already holds that state).
	Safety Snapshot `json:"safety,omitzero"`
}

// RestoreSnapshot puts a project back to snapshot id. Over a live project a safety snapshot of
// the current state is taken first, so the restore can be undone (invariant 6).
func (e *Engine) RestoreSnapshot(ctx context.Context, ref, id string) (RestoreResult, error) {
	p, err := e.forWrite(ctx, "restore", ref)
	if err != nil {
		return RestoreResult{}, err
	}
	target, err := e.snapshotOf(ctx, ref, id)
	if err != nil {
		return RestoreResult{}, err
	}
	id = target.ID
	if target.Status == SnapshotDeleted && target.Error == "" {
		return RestoreResult{}, fmt.Errorf("restore %s: snapshot %s is deleted; bring it back first (sailtui snapshot undelete %s %s): %w", p.Slug, id, p.Slug, id, ErrBadState)
	}
	if target.Status != SnapshotReady {
		return RestoreResult{}, fmt.Errorf("restore %s: snapshot %s is %s, not ready: %w", p.Slug, id, target.Status, ErrBadState)
	}
	o, err := e.claim(ctx, p, OpRestore, []ProjectStatus{StatusActive, StatusHibernated}, StatusRestoring, Claim{})
	if err != nil {
		return RestoreResult{}, err
	}
	o.rec.SnapshotID = id
	if err := o.step(ctx, "target"); err != nil {
		_, err = o.finish(ctx, Release{To: p.Status}, OpFailed, err)
		return RestoreResult{}, err
	}
	res := RestoreResult{Restored: target}
	res.Project, err = e.restoreClaimed(ctx, o)
	if s, serr := e.store.GetSnapshot(ctx, safetyID(o)); serr == nil {
		res.Safety = s
	}
	return res, err
}

func safetyID(o *op) string { return snapshotID(SnapshotSafety, o.rec.ID, o.rec.StartedAt) }

func (e *Engine) restoreClaimed(ctx context.Context, o *op) (Project, error) {
	p := o.p
	live, lerr := e.runtime.ProjectExists(ctx, p)
	back := StatusHibernated
	if live {
		back = StatusActive
	}
	if o.rec.SnapshotID == "" && lerr == nil {
		// Interrupted between its claim and journaling its target: nothing was done yet.
		return o.finish(ctx, Release{To: back}, OpRolledBack, nil)
	}
	target, err := e.readySnapshot(ctx, p, o.rec.SnapshotID)
	if err != nil || lerr != nil {
		return o.finish(ctx, Release{To: back}, OpFailed, fmt.Errorf("restore %s: %w", p.Slug, errors.Join(err, lerr)))
	}
	cs, err := e.runningContainers(ctx, p.ID)
	if err != nil {
		return o.finish(ctx, Release{To: back}, OpFailed, fmt.Errorf("restore %s: list containers: %w", p.Slug, err))
	}
	if live {
		if _, err := o.takeSnapshot(ctx, safetyID(o), SnapshotSafety, "before restoring "+target.ID); err != nil {
			return o.finish(ctx, Release{To: StatusActive}, OpFailed, fmt.Errorf("restore %s: safety snapshot: %w", p.Slug, err))
		}
		progressFor(ctx, p.ID, OpRestore)(Progress{Phase: "stop"})
		if err := o.guard(ctx, "stop the containers"); err != nil {
			return o.finish(ctx, Release{To: StatusActive}, OpFailed, err)
		}
		if err := e.runtime.StopProject(ctx, p, cs); err != nil {
			return o.finish(ctx, Release{To: StatusActive}, OpFailed, fmt.Errorf("restore %s: stop containers: %w", p.Slug, err))
		}
		if err := o.step(ctx, "stopped"); err != nil {
			return o.p, err
		}
	} else if err := e.runtime.EnsureProject(ctx, p); err != nil {
		return o.finish(ctx, Release{To: back}, OpFailed, fmt.Errorf("restore %s: prepare environment: %w", p.Slug, err))
	}
	if o.rec.Step == "restored" || o.rec.Step == "started" {
		// Resumed after the tree was already swapped in.
		done, err := e.startAfterRestore(ctx, o)
		e.rotate(ctx, done, SnapshotSafety, e.cfg.KeepAutoSnapshots)
		return done, err
	}
	if err := o.guard(ctx, "restore "+target.ID); err != nil {
		return o.finish(ctx, Release{To: back}, OpFailed, err)
	}
	if err := e.volumes.Restore(o.withGuard(withProgressFor(ctx, p.ID, OpRestore)), p, target); err != nil {
		what := "snapshot " + target.ID
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrChecksum) {
			what += unusableArchive
		}
		err = fmt.Errorf("restore %s: %s: %w", p.Slug, what, err)
		if live && o.supersededErr() == nil {
			// The tree was not touched (restores swap in only a complete tree): bring it back up.
			if serr := e.startAll(context.WithoutCancel(ctx), p); serr != nil {
				err = errors.Join(err, serr)
			}
		}
		return o.finish(ctx, Release{To: back, Reason: err.Error()}, OpFailed, err)
	}
	if err := o.step(ctx, "restored"); err != nil {
		return o.p, err
	}
	done, err := e.startAfterRestore(ctx, o)
	e.rotate(ctx, done, SnapshotSafety, e.cfg.KeepAutoSnapshots)
	return done, err
}
