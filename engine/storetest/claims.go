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
	ps, err := s.IdleProjects(t.Context(), cutoff, 0)
	noErr(t, "IdleProjects", err)
	checkIDs(t, "selected", ids(ps), []string{p.ID})

	noErr(t, "Touch", s.Touch(t.Context(), p.ID, t0))
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
	stale := newID()
	hold(t, s, p, stale)

	_, err := s.ClaimProject(t.Context(), p.ID, claimFor(newID(), fromActive, engine.StatusHibernating))
	wantErr(t, "claim of a held project without TakeOver", err, engine.ErrConflict)

	c := claimFor(newID(), fromActive, engine.StatusHibernating)
	c.TakeOver = newID()
	_, err = s.ClaimProject(t.Context(), p.ID, c)
	wantErr(t, "TakeOver naming another holder", err, engine.ErrConflict)

	c = claimFor(newID(), fromHibernated, engine.StatusRestoring)
	c.TakeOver = stale
	_, err = s.ClaimProject(t.Context(), p.ID, c)
	wantErr(t, "TakeOver from the wrong status", err, engine.ErrConflict)

	sweeper := newID()
	c = claimFor(sweeper, fromActive, engine.StatusHibernating)
	c.TakeOver = stale
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
	_, err = s.ReleaseProject(t.Context(), p.ID, engine.Release{OpID: stale, To: engine.StatusActive, Now: t0})
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
	op := newID()
	hold(t, s, p, op)

	noErr(t, "Heartbeat", s.Heartbeat(t.Context(), p.ID, op, t0.Add(time.Minute)))
	checkTime(t, "heartbeat", get(t, s, p.ID).OpHeartbeat, t0.Add(time.Minute))

	wantErr(t, "Heartbeat by another op", s.Heartbeat(t.Context(), p.ID, newID(), t0), engine.ErrConflict)
	wantErr(t, "Heartbeat with an empty op", s.Heartbeat(t.Context(), p.ID, "", t0), engine.ErrConflict)
	checkTime(t, "heartbeat after refused beats", get(t, s, p.ID).OpHeartbeat, t0.Add(time.Minute))

	free := createActive(t, s, "free", t0)
	wantErr(t, "Heartbeat of an unheld project", s.Heartbeat(t.Context(), free.ID, op, t0), engine.ErrConflict)
	wantErr(t, "Heartbeat of a missing project", s.Heartbeat(t.Context(), newID(), op, t0), engine.ErrNotFound)
}

func testSetProjectStatus(t *testing.T, s engine.Store) {
	p := createActive(t, s, "moving", t0)
	op := newID()
	hold(t, s, p, op)

	got, err := s.SetProjectStatus(t.Context(), p.ID, op, engine.StatusHibernating, "idle 40m", t0.Add(time.Minute))
	noErr(t, "SetProjectStatus", err)
	for what, pr := range map[string]engine.Project{"result": got, "stored": get(t, s, p.ID)} {
		if pr.Status != engine.StatusHibernating || pr.StatusReason != "idle 40m" || pr.OpID != op {
			t.Errorf("%s after SetProjectStatus: %s %q held by %q, want hibernating \"idle 40m\" held by %s",
				what, pr.Status, pr.StatusReason, pr.OpID, op)
		}
		checkUTC(t, what, pr.UpdatedAt, pr.LastActivity, pr.OpHeartbeat)
	}

	_, err = s.SetProjectStatus(t.Context(), p.ID, newID(), engine.StatusFailed, "intruder", t0)
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
	hold(t, s, p, op)

	got, err := s.ReleaseProject(t.Context(), p.ID, engine.Release{OpID: op, To: engine.StatusFailed, Reason: "disk full", Now: t0.Add(time.Minute)})
	noErr(t, "ReleaseProject", err)
	for what, pr := range map[string]engine.Project{"result": got, "stored": get(t, s, p.ID)} {
		if pr.Status != engine.StatusFailed || pr.StatusReason != "disk full" ||
			pr.OpID != "" || pr.OpKind != "" || pr.OpOwner != "" || !pr.OpHeartbeat.IsZero() {
			t.Errorf("%s after release: %+v, want failed \"disk full\" held by nobody", what, pr)
		}
		checkUTC(t, what, pr.UpdatedAt, pr.LastActivity)
	}

	_, err = s.ReleaseProject(t.Context(), p.ID, engine.Release{OpID: op, To: engine.StatusActive, Now: t0})
	wantErr(t, "second release", err, engine.ErrConflict)
	_, err = s.ReleaseProject(t.Context(), newID(), engine.Release{OpID: op, To: engine.StatusActive, Now: t0})
	wantErr(t, "release of a missing project", err, engine.ErrNotFound)

	// Released, it can be claimed again.
	hold(t, s, get(t, s, p.ID), newID())
}

func testReleaseHibernationSnapshot(t *testing.T, s engine.Store) {
	p := createActive(t, s, "sleepy", t0)
	release := func(r engine.Release) engine.Project {
		t.Helper()
		op := newID()
		hold(t, s, get(t, s, p.ID), op)
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
