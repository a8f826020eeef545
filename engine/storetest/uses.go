package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var useTests = []test{
	{"UseLifecycle", testUseLifecycle},
	{"UseRefusedUnderExclusiveOp", testUseRefusedUnderExclusiveOp},
	{"UseRefusedWhenNotActive", testUseRefusedWhenNotActive},
	{"EndUseGone", testEndUseGone},
}

// exclusiveKinds stands for the engine's list; the store only matches kinds.
var exclusiveKinds = []engine.OpKind{engine.OpHibernate, engine.OpSnapshot}

func newUse(p engine.Project, at time.Time) engine.Use {
	return engine.Use{ID: newID(), ProjectID: p.ID, Kind: "files put", Owner: "host-a/1/2", StartedAt: at, Heartbeat: at, Source: "files"}
}

func testUseLifecycle(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "used", t0.Add(-time.Hour))
	u := newUse(p, t0)
	noErr(t, "BeginUse", s.BeginUse(ctx, u, exclusiveKinds))
	checkTime(t, "last activity after BeginUse", get(t, s, p.ID).LastActivity, t0)
	checkSource(t, "after BeginUse", get(t, s, p.ID), "files", "host-a/1/2")

	got, err := s.GetUse(ctx, u.ID)
	noErr(t, "GetUse", err)
	if got.ID != u.ID || got.ProjectID != p.ID || got.Kind != u.Kind || got.Owner != u.Owner || got.Revoked != "" {
		t.Errorf("GetUse = %+v, want %+v", got, u)
	}
	checkTime(t, "use started", got.StartedAt, t0)
	checkUTC(t, "use times", got.StartedAt, got.Heartbeat)

	noErr(t, "HeartbeatUse", s.HeartbeatUse(ctx, u.ID, t0.Add(time.Minute)))
	noErr(t, "RevokeUse", s.RevokeUse(ctx, u.ID, "hibernate needs it"))
	got, err = s.GetUse(ctx, u.ID)
	noErr(t, "GetUse after revoke", err)
	checkTime(t, "use heartbeat", got.Heartbeat, t0.Add(time.Minute))
	if got.Revoked != "hibernate needs it" {
		t.Errorf("revoked = %q, want the reason", got.Revoked)
	}

	second := newUse(p, t0.Add(time.Second))
	noErr(t, "second BeginUse", s.BeginUse(ctx, second, exclusiveKinds))
	other := createActive(t, s, "other", t0)
	noErr(t, "BeginUse of another project", s.BeginUse(ctx, newUse(other, t0), exclusiveKinds))
	uses, err := s.ListUses(ctx, p.ID)
	noErr(t, "ListUses", err)
	checkIDs(t, "uses of the project, oldest first", sortedIDs(uses, func(u engine.Use) string { return u.ID }), sorted(u.ID, second.ID))
	if len(uses) == 2 && uses[0].ID != u.ID {
		t.Errorf("ListUses order: %s first, want the oldest %s", uses[0].ID, u.ID)
	}

	// Ending a use is activity too; a zero time records none.
	noErr(t, "EndUse", s.EndUse(ctx, p.ID, u.ID, touchAt(t0.Add(2*time.Minute))))
	checkTime(t, "last activity after EndUse", get(t, s, p.ID).LastActivity, t0.Add(2*time.Minute))
	checkSource(t, "after EndUse", get(t, s, p.ID), "test", "storetest")
	noErr(t, "EndUse without touch", s.EndUse(ctx, p.ID, second.ID, engine.Activity{}))
	checkTime(t, "last activity after EndUse without touch", get(t, s, p.ID).LastActivity, t0.Add(2*time.Minute))
	uses, err = s.ListUses(ctx, p.ID)
	noErr(t, "ListUses after EndUse", err)
	if len(uses) != 0 {
		t.Errorf("uses after both ended: %+v", uses)
	}
	_, err = s.GetUse(ctx, u.ID)
	wantErr(t, "GetUse of an ended use", err, engine.ErrNotFound)
	wantErr(t, "HeartbeatUse of an ended use", s.HeartbeatUse(ctx, u.ID, t0), engine.ErrNotFound)
	wantErr(t, "RevokeUse of an ended use", s.RevokeUse(ctx, u.ID, "x"), engine.ErrNotFound)
}

func testUseRefusedUnderExclusiveOp(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "held", t0.Add(-time.Hour))
	op := newID()
	claimed, err := s.ClaimProject(ctx, p.ID, engine.Claim{OpID: op, Kind: engine.OpSnapshot, Owner: "x", Now: t0,
		From: fromActive, To: engine.StatusActive})
	noErr(t, "claim for a snapshot", err)
	wantErr(t, "BeginUse under a snapshot", s.BeginUse(ctx, newUse(p, t0), exclusiveKinds), engine.ErrConflict)
	checkTime(t, "last activity after a refused use", get(t, s, p.ID).LastActivity, p.LastActivity)
	uses, err := s.ListUses(ctx, p.ID)
	noErr(t, "ListUses", err)
	if len(uses) != 0 {
		t.Errorf("a refused use was recorded: %+v", uses)
	}
	_, err = s.ReleaseProject(ctx, p.ID, engine.Release{OpID: op, Epoch: claimed.OpEpoch, To: engine.StatusActive, Now: t0})
	noErr(t, "release", err)

	// An operation that is not exclusive (start) leaves uses alone.
	_, err = s.ClaimProject(ctx, p.ID, engine.Claim{OpID: newID(), Kind: engine.OpStart, Owner: "x", Now: t0,
		From: fromActive, To: engine.StatusActive})
	noErr(t, "claim for a start", err)
	noErr(t, "BeginUse under a start", s.BeginUse(ctx, newUse(p, t0), exclusiveKinds))
}

func testUseRefusedWhenNotActive(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "sleeping", t0.Add(-time.Hour))
	op := newID()
	claimed, err := s.ClaimProject(ctx, p.ID, claimFor(op, fromActive, engine.StatusHibernating))
	noErr(t, "claim", err)
	_, err = s.ReleaseProject(ctx, p.ID, engine.Release{OpID: op, Epoch: claimed.OpEpoch, To: engine.StatusHibernated, Now: t0})
	noErr(t, "release hibernated", err)
	wantErr(t, "BeginUse of a hibernated project", s.BeginUse(ctx, newUse(p, t0), nil), engine.ErrConflict)
	err = s.BeginUse(ctx, engine.Use{ID: newID(), ProjectID: newID(), Kind: "files put", StartedAt: t0, Heartbeat: t0}, nil)
	wantErr(t, "BeginUse of a missing project", err, engine.ErrNotFound)
}

func testEndUseGone(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "dropped", t0.Add(-time.Hour))
	u := newUse(p, t0)
	noErr(t, "BeginUse", s.BeginUse(ctx, u, exclusiveKinds))
	// An operation drops the use (its holder looked dead); the holder's own EndUse must then
	// learn that, so it does not report success.
	noErr(t, "drop", s.EndUse(ctx, p.ID, u.ID, engine.Activity{}))
	wantErr(t, "EndUse of a dropped use", s.EndUse(ctx, p.ID, u.ID, touchAt(t0.Add(time.Hour))), engine.ErrNotFound)
	checkTime(t, "last activity after the refused EndUse", get(t, s, p.ID).LastActivity, t0)
}

// testConcurrentUseVsClaim races uses against an exclusive claim on one project, over every
// handle: after the claim, every use that was not refused is seen by the claimer's ListUses
// (the fence waits for it), and no use begins once the claim is in (invariant 9).
func testConcurrentUseVsClaim(t *testing.T, handles []engine.Store) {
	ctx := t.Context()
	for round := range 20 {
		p := newProject(uniqueSlug("fence"), t0.Add(-time.Hour))
		if err := handles[0].CreateProject(ctx, p, nil, nil); err != nil {
			t.Fatalf("round %d: CreateProject: %v", round, err)
		}
		op := newID()
		useIDs := make([]string, racers)
		errs := make([]error, racers)
		var seen []engine.Use
		var claimErr, listErr error
		race(t, handles, func(i int, s engine.Store) {
			if i == 0 {
				_, claimErr = s.ClaimProject(ctx, p.ID, engine.Claim{OpID: op, Kind: engine.OpHibernate, Owner: "sweep",
					Now: t0, From: fromActive, To: engine.StatusHibernating})
				if claimErr == nil {
					seen, listErr = s.ListUses(ctx, p.ID)
				}
				return
			}
			u := newUse(p, t0)
			useIDs[i] = u.ID
			errs[i] = s.BeginUse(ctx, u, exclusiveKinds)
		})
		if claimErr != nil || listErr != nil {
			t.Fatalf("round %d: claim %v, list %v", round, claimErr, listErr)
		}
		seenIDs := map[string]bool{}
		for _, u := range seen {
			seenIDs[u.ID] = true
		}
		for i := 1; i < racers; i++ {
			switch {
			case errs[i] == nil && !seenIDs[useIDs[i]]:
				t.Errorf("round %d: use %d began but the claimer did not see it: a write could slip past the fence", round, i)
			case errs[i] != nil && !errors.Is(errs[i], engine.ErrConflict):
				t.Errorf("round %d: use %d: %v, want success or ErrConflict", round, i, errs[i])
			}
		}
		// After the claim, every use is refused.
		if err := handles[len(handles)-1].BeginUse(ctx, newUse(p, t0), exclusiveKinds); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("round %d: use after the claim: %v, want ErrConflict", round, err)
		}
		if t.Failed() {
			t.Fatalf("round %d failed", round)
		}
	}
}
