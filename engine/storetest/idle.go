package storetest

import (
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// The idle sweep's inputs beyond last_activity (issue 35): keep-alives.
var idleTests = []test{
	{"KeepAlive", testKeepAlive},
	{"KeepAliveHoldsSelection", testKeepAliveHoldsSelection},
	{"KeepAliveHoldsClaim", testKeepAliveHoldsClaim},
	{"IdleWarning", testIdleWarning},
}

// An idle warning is stored, read back everywhere a project is read, and stands only until
// the next activity.
func testIdleWarning(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "warned", t0.Add(-time.Hour))
	if get(t, s, p.ID).IdleWarned() {
		t.Fatal("a project never warned stands warned")
	}
	noErr(t, "MarkIdleWarned", s.MarkIdleWarned(ctx, p.ID, t0))
	got := get(t, s, p.ID)
	checkTime(t, "warned at", got.IdleWarnedAt, t0)
	checkUTC(t, "warned at", got.IdleWarnedAt)
	if !got.IdleWarned() {
		t.Errorf("warned at %s after activity at %s does not stand", got.IdleWarnedAt, got.LastActivity)
	}
	ps, err := s.IdleProjects(ctx, t0, t0, 0)
	noErr(t, "IdleProjects", err)
	if len(ps) != 1 {
		t.Fatalf("IdleProjects: %+v", ps)
	}
	checkTime(t, "warned at, as the sweep's selection reads it", ps[0].IdleWarnedAt, t0)
	changes, err := s.ListProjectsChangedSince(ctx, 0)
	noErr(t, "ListProjectsChangedSince", err)
	if len(changes.Projects) != 1 {
		t.Fatalf("ListProjectsChangedSince: %+v", changes.Projects)
	}
	checkTime(t, "warned at, as the incremental read reads it", changes.Projects[0].IdleWarnedAt, t0)

	noErr(t, "Touch", s.Touch(ctx, p.ID, touchAt(t0.Add(time.Second))))
	if got := get(t, s, p.ID); got.IdleWarned() {
		t.Errorf("a warning at %s stands after activity at %s", got.IdleWarnedAt, got.LastActivity)
	}
	wantErr(t, "MarkIdleWarned of a missing project", s.MarkIdleWarned(ctx, newID(), t0), engine.ErrNotFound)
}

// A keep-alive is stored with the activity it records, in one write; clearing it records none.
func testKeepAlive(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "kept", t0.Add(-time.Hour))
	until := t0.Add(2 * time.Hour)
	got, err := s.SetKeepAlive(ctx, p.ID, until, engine.Activity{At: t0, Source: engine.SourceKeepAlive, Actor: "cli"})
	noErr(t, "SetKeepAlive", err)
	checkTime(t, "keep-alive in the answer", got.KeepAliveUntil, until)
	stored := get(t, s, p.ID)
	checkTime(t, "keep-alive stored", stored.KeepAliveUntil, until)
	checkTime(t, "keep-alive is activity", stored.LastActivity, t0)
	checkSource(t, "keep-alive", stored, engine.SourceKeepAlive, "cli")
	checkUTC(t, "keep-alive", stored.KeepAliveUntil)

	got, err = s.SetKeepAlive(ctx, p.ID, time.Time{}, engine.Activity{})
	noErr(t, "SetKeepAlive cleared", err)
	if !got.KeepAliveUntil.IsZero() || !get(t, s, p.ID).KeepAliveUntil.IsZero() {
		t.Errorf("keep-alive after clearing it: %s", get(t, s, p.ID).KeepAliveUntil)
	}
	checkTime(t, "clearing records no activity", get(t, s, p.ID).LastActivity, t0)

	changes, err := s.ListProjectsChangedSince(ctx, 0)
	noErr(t, "ListProjectsChangedSince", err)
	if len(changes.Projects) != 1 || !changes.Projects[0].KeepAliveUntil.IsZero() {
		t.Errorf("the incremental read lost the keep-alive: %+v", changes.Projects)
	}
	_, err = s.SetKeepAlive(ctx, newID(), until, touchAt(t0))
	wantErr(t, "SetKeepAlive of a missing project", err, engine.ErrNotFound)
}

// The sweep's selection leaves out a project kept alive at its time, and takes it once the
// keep-alive is over.
func testKeepAliveHoldsSelection(t *testing.T, s engine.Store) {
	ctx := t.Context()
	cutoff := t0.Add(-30 * time.Minute)
	idle := createActive(t, s, "idle", t0.Add(-2*time.Hour))
	kept := createActive(t, s, "kept", t0.Add(-time.Hour))
	// No activity with it: what is under test is the keep-alive alone.
	_, err := s.SetKeepAlive(ctx, kept.ID, t0.Add(time.Hour), engine.Activity{})
	noErr(t, "SetKeepAlive", err)

	ps, err := s.IdleProjects(ctx, cutoff, t0, 0)
	noErr(t, "IdleProjects", err)
	checkIDs(t, "idle while kept alive", ids(ps), []string{idle.ID})

	// The end of a keep-alive is not "kept alive" any more.
	ps, err = s.IdleProjects(ctx, cutoff, t0.Add(time.Hour), 0)
	noErr(t, "IdleProjects at the end of the keep-alive", err)
	checkIDs(t, "idle once the keep-alive is over", ids(ps), []string{idle.ID, kept.ID})
}

// A keep-alive set after the sweep selected a project wins over the claim.
func testKeepAliveHoldsClaim(t *testing.T, s engine.Store) {
	ctx := t.Context()
	cutoff := t0.Add(-30 * time.Minute)
	p := createActive(t, s, "kept", t0.Add(-time.Hour))
	_, err := s.SetKeepAlive(ctx, p.ID, t0.Add(time.Hour), engine.Activity{})
	noErr(t, "SetKeepAlive", err)
	c := claimFor(newID(), fromActive, engine.StatusHibernating)
	c.IdleBefore, c.KeptAliveAt = cutoff, t0
	_, err = s.ClaimProject(ctx, p.ID, c)
	wantErr(t, "claim of a kept-alive project", err, engine.ErrConflict)
	if got := get(t, s, p.ID); got.Status != engine.StatusActive || got.OpID != "" {
		t.Errorf("kept-alive project after the refused claim: %s held by %q", got.Status, got.OpID)
	}

	c = claimFor(newID(), fromActive, engine.StatusHibernating)
	c.IdleBefore, c.KeptAliveAt = cutoff, t0.Add(2*time.Hour)
	_, err = s.ClaimProject(ctx, p.ID, c)
	noErr(t, "claim once the keep-alive is over", err)
}
