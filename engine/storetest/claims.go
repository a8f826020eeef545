package storetest

import (
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var claimTests = []test{
	{"ClaimProject", testClaimProject},
	{"ClaimWrongStatus", testClaimWrongStatus},
	{"ClaimNotFound", testClaimNotFound},
	{"ClaimRespectsActivity", testClaimRespectsActivity},
	{"ClaimTakeOver", testClaimTakeOver},
	{"Heartbeat", testHeartbeat},
	{"SetProjectStatus", testSetProjectStatus},
	{"ReleaseProject", testReleaseProject},
	{"ReleaseHibernationSnapshot", testReleaseHibernationSnapshot},
	{"SupersededEpoch", testSupersededEpoch},
}

var (
	fromActive      = []engine.ProjectStatus{engine.StatusActive}
	fromHibernated  = []engine.ProjectStatus{engine.StatusHibernated}
	fromHibernating = []engine.ProjectStatus{engine.StatusHibernating}
)

func testClaimProject(t *testing.T, s engine.Store) {
	p := createActive(t, s, "claimed", t0.Add(-time.Hour))
	op := newID()
	c := engine.Claim{OpID: op, Kind: engine.OpHibernate, Owner: "host-a/123", Now: t0,
		From: []engine.ProjectStatus{engine.StatusActive, engine.StatusFailed}, To: engine.StatusHibernating}
	got, err := s.ClaimProject(t.Context(), p.ID, c)
	noErr(t, "ClaimProject", err)

	check := func(what string, got engine.Project) {
		t.Helper()
		if got.ID != p.ID || got.Status != engine.StatusHibernating || got.OpID != op ||
			got.OpKind != engine.OpHibernate || got.OpOwner != "host-a/123" {
			t.Errorf("%s: %+v, want hibernating held by %s (hibernate, host-a/123)", what, got, op)
		}
		checkTime(t, what+" heartbeat", got.OpHeartbeat, t0)
		checkTime(t, what+" last activity", got.LastActivity, p.LastActivity)
	}
	check("claim result", got)
	check("stored project", get(t, s, p.ID))

	// Held now: nobody else gets it, whatever status they expect.
	_, err = s.ClaimProject(t.Context(), p.ID, claimFor(newID(), fromHibernating, engine.StatusHibernated))
	wantErr(t, "second claim of a held project", err, engine.ErrConflict)
	check("after refused claims", get(t, s, p.ID))
}

func testClaimWrongStatus(t *testing.T, s engine.Store) {
	p := createActive(t, s, "awake", t0)
	_, err := s.ClaimProject(t.Context(), p.ID, claimFor(newID(), fromHibernated, engine.StatusRestoring))
	wantErr(t, "claim from the wrong status", err, engine.ErrConflict)
	checkProject(t, "project after a refused claim", get(t, s, p.ID), p)

	gone := createActive(t, s, "gone", t0)
	softDelete(t, s, gone)
	_, err = s.ClaimProject(t.Context(), gone.ID, claimFor(newID(), fromActive, engine.StatusHibernating))
	wantErr(t, "claim of a deleted project", err, engine.ErrConflict)
}

func testClaimNotFound(t *testing.T, s engine.Store) {
	_, err := s.ClaimProject(t.Context(), newID(), claimFor(newID(), fromActive, engine.StatusHibernating))
	wantErr(t, "claim of a missing project", err, engine.ErrNotFound)
}

// Invariant 4: a project touched after the sweep selected it is not claimed.
func testClaimRespectsActivity(t *testing.T, s engine.Store) {
	cutoff := t0.Add(-30 * time.Minute)
	p := createActive(t, s, "idle", t0.Add(-40*time.Minute))
	ps, err := s.IdleProjects(t.Context(), cutoff, t0, 0)
	noErr(t, "IdleProjects", err)
	checkIDs(t, "selected", ids(ps), []string{p.ID})

	noErr(t, "Touch", s.Touch(t.Context(), p.ID, touchAt(t0)))
	c := claimFor(newID(), fromActive, engine.StatusHibernating)
	c.IdleBefore = cutoff
	_, err = s.ClaimProject(t.Context(), p.ID, c)
	wantErr(t, "claim of a project touched after selection", err, engine.ErrConflict)
	if got := get(t, s, p.ID); got.Status != engine.StatusActive || got.OpID != "" {
		t.Errorf("touched project after refused claim: %s held by %q", got.Status, got.OpID)
	}

	// Untouched, it is claimed; last_activity equal to IdleBefore still counts as idle.
	q := createActive(t, s, "still-idle", cutoff)
	c = claimFor(newID(), fromActive, engine.StatusHibernating)
	c.IdleBefore = cutoff
	_, err = s.ClaimProject(t.Context(), q.ID, c)
	noErr(t, "claim of an idle project", err)
}

func testClaimTakeOver(t *testing.T, s engine.Store) {
	p := createActive(t, s, "stale", t0.Add(-time.Hour))
	staleOp := newID()
	stale := engine.HoldOf(hold(t, s, p, staleOp))

	_, err := s.ClaimProject(t.Context(), p.ID, claimFor(newID(), fromActive, engine.StatusHibernating))
	wantErr(t, "claim of a held project without TakeOver", err, engine.ErrConflict)

	c := claimFor(newID(), fromActive, engine.StatusHibernating)
	c.TakeOver = newID()
	_, err = s.ClaimProject(t.Context(), p.ID, c)
	wantErr(t, "TakeOver naming another holder", err, engine.ErrConflict)

	c = claimFor(newID(), fromHibernated, engine.StatusRestoring)
	c.TakeOver = staleOp
	_, err = s.ClaimProject(t.Context(), p.ID, c)
	wantErr(t, "TakeOver from the wrong status", err, engine.ErrConflict)

	sweeper := newID()
	c = claimFor(sweeper, fromActive, engine.StatusHibernating)
	c.TakeOver = staleOp
	c.Now = t0.Add(time.Minute)
	got, err := s.ClaimProject(t.Context(), p.ID, c)
	noErr(t, "TakeOver of the stale holder", err)
	if got.OpID != sweeper || got.Status != engine.StatusHibernating {
		t.Errorf("after TakeOver: %s held by %s, want hibernating held by %s", got.Status, got.OpID, sweeper)
	}
	checkTime(t, "heartbeat after TakeOver", got.OpHeartbeat, t0.Add(time.Minute))

	// The old holder has lost the project: every holder-only call refuses it.
	wantErr(t, "Heartbeat by the old holder", s.Heartbeat(t.Context(), p.ID, stale, t0.Add(2*time.Minute)), engine.ErrConflict)
	_, err = s.SetProjectStatus(t.Context(), p.ID, stale, engine.StatusFailed, "old holder", t0)
	wantErr(t, "SetProjectStatus by the old holder", err, engine.ErrConflict)
	_, err = s.ReleaseProject(t.Context(), p.ID, engine.Release{OpID: stale.OpID, Epoch: stale.Epoch, To: engine.StatusActive, Now: t0})
	wantErr(t, "ReleaseProject by the old holder", err, engine.ErrConflict)
	if got := get(t, s, p.ID); got.OpID != sweeper || got.Status != engine.StatusHibernating {
		t.Errorf("after old holder's attempts: %s held by %s", got.Status, got.OpID)
	}

	// A stale holder that released meanwhile leaves the project free: the takeover still claims it.
	q := createActive(t, s, "released", t0.Add(-time.Hour))
	c = claimFor(newID(), fromActive, engine.StatusHibernating)
	c.TakeOver = newID()
	_, err = s.ClaimProject(t.Context(), q.ID, c)
	noErr(t, "TakeOver of an unheld project", err)
}

func testHeartbeat(t *testing.T, s engine.Store) {
	p := createActive(t, s, "beating", t0)
	op := engine.HoldOf(hold(t, s, p, newID()))

	noErr(t, "Heartbeat", s.Heartbeat(t.Context(), p.ID, op, t0.Add(time.Minute)))
	checkTime(t, "heartbeat", get(t, s, p.ID).OpHeartbeat, t0.Add(time.Minute))

	wantErr(t, "Heartbeat by another op", s.Heartbeat(t.Context(), p.ID, engine.Hold{OpID: newID(), Epoch: op.Epoch}, t0), engine.ErrConflict)
	wantErr(t, "Heartbeat with an empty op", s.Heartbeat(t.Context(), p.ID, engine.Hold{}, t0), engine.ErrConflict)
	checkTime(t, "heartbeat after refused beats", get(t, s, p.ID).OpHeartbeat, t0.Add(time.Minute))

	free := createActive(t, s, "free", t0)
	wantErr(t, "Heartbeat of an unheld project", s.Heartbeat(t.Context(), free.ID, op, t0), engine.ErrConflict)
	wantErr(t, "Heartbeat of a missing project", s.Heartbeat(t.Context(), newID(), op, t0), engine.ErrNotFound)
}

func testSetProjectStatus(t *testing.T, s engine.Store) {
	p := createActive(t, s, "moving", t0)
	op := engine.HoldOf(hold(t, s, p, newID()))

	got, err := s.SetProjectStatus(t.Context(), p.ID, op, engine.StatusHibernating, "idle 40m", t0.Add(time.Minute))
	noErr(t, "SetProjectStatus", err)
	for what, pr := range map[string]engine.Project{"result": got, "stored": get(t, s, p.ID)} {
		if pr.Status != engine.StatusHibernating || pr.StatusReason != "idle 40m" || pr.OpID != op.OpID {
			t.Errorf("%s after SetProjectStatus: %s %q held by %q, want hibernating \"idle 40m\" held by %s",
				what, pr.Status, pr.StatusReason, pr.OpID, op.OpID)
		}
		checkUTC(t, what, pr.UpdatedAt, pr.LastActivity, pr.OpHeartbeat)
	}

	_, err = s.SetProjectStatus(t.Context(), p.ID, engine.Hold{OpID: newID(), Epoch: op.Epoch}, engine.StatusFailed, "intruder", t0)
	wantErr(t, "SetProjectStatus by another op", err, engine.ErrConflict)
	free := createActive(t, s, "free", t0)
	_, err = s.SetProjectStatus(t.Context(), free.ID, op, engine.StatusFailed, "not held", t0)
	wantErr(t, "SetProjectStatus of an unheld project", err, engine.ErrConflict)
	_, err = s.SetProjectStatus(t.Context(), newID(), op, engine.StatusFailed, "missing", t0)
	wantErr(t, "SetProjectStatus of a missing project", err, engine.ErrNotFound)
	if got := get(t, s, p.ID); got.Status != engine.StatusHibernating {
		t.Errorf("status after refused changes = %s, want hibernating", got.Status)
	}
}

func testReleaseProject(t *testing.T, s engine.Store) {
	p := createActive(t, s, "done", t0)
	op := newID()
	epoch := hold(t, s, p, op).OpEpoch

	got, err := s.ReleaseProject(t.Context(), p.ID, engine.Release{OpID: op, Epoch: epoch, To: engine.StatusFailed, Reason: "disk full", Now: t0.Add(time.Minute)})
	noErr(t, "ReleaseProject", err)
	for what, pr := range map[string]engine.Project{"result": got, "stored": get(t, s, p.ID)} {
		if pr.Status != engine.StatusFailed || pr.StatusReason != "disk full" ||
			pr.OpID != "" || pr.OpKind != "" || pr.OpOwner != "" || !pr.OpHeartbeat.IsZero() {
			t.Errorf("%s after release: %+v, want failed \"disk full\" held by nobody", what, pr)
		}
		checkUTC(t, what, pr.UpdatedAt, pr.LastActivity)
	}

	_, err = s.ReleaseProject(t.Context(), p.ID, engine.Release{OpID: op, Epoch: epoch, To: engine.StatusActive, Now: t0})
	wantErr(t, "second release", err, engine.ErrConflict)
	_, err = s.ReleaseProject(t.Context(), newID(), engine.Release{OpID: op, Epoch: epoch, To: engine.StatusActive, Now: t0})
	wantErr(t, "release of a missing project", err, engine.ErrNotFound)

	// Released, it can be claimed again.
	hold(t, s, get(t, s, p.ID), newID())
}

func testReleaseHibernationSnapshot(t *testing.T, s engine.Store) {
	p := createActive(t, s, "sleepy", t0)
	release := func(r engine.Release) engine.Project {
		t.Helper()
		op := newID()
		r.Epoch = hold(t, s, get(t, s, p.ID), op).OpEpoch
		r.OpID, r.Now = op, t0
		got, err := s.ReleaseProject(t.Context(), p.ID, r)
		noErr(t, "ReleaseProject", err)
		return got
	}

	got := release(engine.Release{To: engine.StatusHibernated, SetHibernationSnapshot: true, HibernationSnapshot: "snap-1"})
	if got.HibernationSnapshot != "snap-1" || get(t, s, p.ID).HibernationSnapshot != "snap-1" {
		t.Errorf("hibernation snapshot = %q, want snap-1", got.HibernationSnapshot)
	}
	got = release(engine.Release{To: engine.StatusHibernated})
	if got.HibernationSnapshot != "snap-1" {
		t.Errorf("release without SetHibernationSnapshot changed it to %q", got.HibernationSnapshot)
	}
	got = release(engine.Release{To: engine.StatusActive, SetHibernationSnapshot: true})
	if got.HibernationSnapshot != "" || get(t, s, p.ID).HibernationSnapshot != "" {
		t.Errorf("hibernation snapshot = %q, want it cleared", got.HibernationSnapshot)
	}
}

// A holder that was taken over keeps its op id but not its epoch: every write it makes (journal,
// heartbeat, status, release, snapshot rows) is refused with ErrSuperseded and changes nothing,
// while the taker's go through. Epochs only grow, so a later claim never hands an old one out.
func testSupersededEpoch(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "paused", t0.Add(-time.Hour))
	opID := newID()
	first := hold(t, s, p, opID)
	old := engine.HoldOf(first)
	if old.Epoch <= p.OpEpoch {
		t.Fatalf("claim gave epoch %d, not above the project's %d", old.Epoch, p.OpEpoch)
	}
	rec := engine.Operation{ID: opID, ProjectID: p.ID, Kind: engine.OpSnapshot, Step: "claimed", State: engine.OpRunning,
		Owner: "paused/1", StartedAt: t0, UpdatedAt: t0, Epoch: old.Epoch}
	noErr(t, "InsertOp by the holder", s.InsertOp(ctx, rec))
	pending := newSnapshot(p, engine.SnapshotManual, "pending", t0)
	pending.Status = engine.SnapshotPending
	noErr(t, "InsertSnapshot by the holder", s.InsertSnapshot(ctx, pending, engine.MaxManualSnapshots, old))

	// The take-over, as the engine makes it: the same op id, named as the stale holder.
	c := claimFor(opID, fromActive, engine.StatusActive)
	c.TakeOver, c.Now = opID, t0.Add(time.Minute)
	taken, err := s.ClaimProject(ctx, p.ID, c)
	noErr(t, "TakeOver", err)
	taker := engine.HoldOf(taken)
	if taker.OpID != opID || taker.Epoch <= old.Epoch {
		t.Fatalf("take-over holds %+v, want op %s at an epoch above %d", taker, opID, old.Epoch)
	}
	got, err := s.GetOp(ctx, opID)
	noErr(t, "GetOp", err)
	if got.Epoch != taker.Epoch {
		t.Errorf("journal entry at epoch %d after the take-over, want %d (moved in the claim)", got.Epoch, taker.Epoch)
	}

	// Everything the paused holder does now is refused.
	superseded := func(what string, err error) {
		t.Helper()
		wantErr(t, what+" by the superseded holder", err, engine.ErrSuperseded)
	}
	superseded("Heartbeat", s.Heartbeat(ctx, p.ID, old, t0.Add(2*time.Minute)))
	_, err = s.SetProjectStatus(ctx, p.ID, old, engine.StatusFailed, "paused one", t0)
	superseded("SetProjectStatus", err)
	step := rec
	step.Step, step.UpdatedAt = "snapshot-written", t0.Add(2*time.Minute)
	superseded("UpdateOp (a step)", s.UpdateOp(ctx, step))
	closing := step
	closing.State, closing.FinishedAt = engine.OpDone, t0.Add(2*time.Minute)
	superseded("UpdateOp (closing the entry)", s.UpdateOp(ctx, closing))
	ready := pending
	ready.Status = engine.SnapshotReady
	superseded("UpdateSnapshot", s.UpdateSnapshot(ctx, ready, old))
	superseded("InsertSnapshot", s.InsertSnapshot(ctx, newSnapshot(p, engine.SnapshotManual, "sixth", t0), engine.MaxManualSnapshots, old))
	_, err = s.ReleaseProject(ctx, p.ID, engine.Release{OpID: old.OpID, Epoch: old.Epoch, To: engine.StatusActive, Now: t0})
	superseded("ReleaseProject", err)

	if got := get(t, s, p.ID); got.OpID != opID || got.OpEpoch != taker.Epoch || got.Status != engine.StatusActive || got.StatusReason != "" {
		t.Errorf("after the superseded writes: %s %q held by %s at %d, want active held by the taker at %d",
			got.Status, got.StatusReason, got.OpID, got.OpEpoch, taker.Epoch)
	}
	if got, err := s.GetOp(ctx, opID); err != nil || got.Step != "claimed" || got.State != engine.OpRunning {
		t.Errorf("journal after the superseded writes: %+v, %v; want the entry as the taker found it", got, err)
	}
	if got, err := s.GetSnapshot(ctx, pending.ID); err != nil || got.Status != engine.SnapshotPending {
		t.Errorf("snapshot after the superseded write: %+v, %v; want still pending", got, err)
	}
	if snaps, err := s.ListSnapshots(ctx, engine.SnapshotFilter{ProjectID: p.ID}); err != nil || len(snaps) != 1 {
		t.Errorf("snapshots after the superseded insert: %d, %v; want only the pending one", len(snaps), err)
	}

	// The taker's writes go through, and its epoch ends with its release.
	noErr(t, "Heartbeat by the taker", s.Heartbeat(ctx, p.ID, taker, t0.Add(2*time.Minute)))
	step.Epoch = taker.Epoch
	noErr(t, "UpdateOp by the taker", s.UpdateOp(ctx, step))
	pending.Status, pending.Error, pending.DeletedAt = engine.SnapshotDeleted, "interrupted", t0.Add(2*time.Minute)
	noErr(t, "UpdateSnapshot by the taker", s.UpdateSnapshot(ctx, pending, taker))
	_, err = s.ReleaseProject(ctx, p.ID, engine.Release{OpID: taker.OpID, Epoch: taker.Epoch, To: engine.StatusActive, Now: t0})
	noErr(t, "ReleaseProject by the taker", err)
	// A running entry is no longer written once its hold is gone; closing it still is.
	superseded("UpdateOp of a running entry after the release", s.UpdateOp(ctx, step))
	closing.Epoch = taker.Epoch
	noErr(t, "UpdateOp closing the entry after the release", s.UpdateOp(ctx, closing))

	next := hold(t, s, get(t, s, p.ID), newID())
	if next.OpEpoch <= taker.Epoch {
		t.Errorf("a claim after the release got epoch %d, not above %d", next.OpEpoch, taker.Epoch)
	}
	// Writes of no operation are not fenced.
	noErr(t, "UpdateSnapshot of no operation", s.UpdateSnapshot(ctx, pending, engine.Hold{}))
}
