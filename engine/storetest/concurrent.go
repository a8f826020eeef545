package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// The exactly-once tests. Each creates its own projects and lock names, so they can share a
// store that is not empty.
var concurrentTests = []struct {
	name string
	fn   func(t *testing.T, handles []engine.Store)
}{
	{"ClaimExactlyOnce", testConcurrentClaims},
	{"TakeOverExactlyOnce", testConcurrentTakeOver},
	{"ManualSnapshotLimit", testConcurrentManualSnapshots},
	{"TryLockOneOwner", testConcurrentTryLock},
	{"TouchKeepsMaximum", testConcurrentTouch},
	{"UseVsClaim", testConcurrentUseVsClaim},
}

const racers = 8

// deadlockTimeout fails a race that has not finished; far above any busy timeout.
const deadlockTimeout = 60 * time.Second

// race runs fn(i, store) in racers goroutines released at once, goroutine i on handles[i%len],
// and fails the test if they do not all return in time. fn must not use t: after a timeout its
// goroutines outlive the test.
func race(t *testing.T, handles []engine.Store, fn func(i int, s engine.Store)) {
	t.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			fn(i, handles[i%len(handles)])
		})
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(deadlockTimeout):
		t.Fatalf("racing goroutines still running after %v: deadlock?", deadlockTimeout)
	}
}

func uniqueSlug(prefix string) string { return prefix + "-" + newID()[:8] }

// winners counts nil errors and fails on any error that is not want.
func winners(t *testing.T, what string, errs []error, want error) int {
	t.Helper()
	n := 0
	for i, err := range errs {
		switch {
		case err == nil:
			n++
		case !errors.Is(err, want):
			t.Errorf("%s: racer %d: err = %v, want nil or %v", what, i, err, want)
		}
	}
	return n
}

func testConcurrentClaims(t *testing.T, handles []engine.Store) {
	s := handles[0]
	ctx := t.Context()
	p := createActive(t, s, uniqueSlug("race"), t0.Add(-time.Hour))
	for round := range 5 {
		ops := make([]string, racers)
		errs := make([]error, racers)
		race(t, handles, func(i int, s engine.Store) {
			ops[i] = newID()
			c := claimFor(ops[i], fromActive, engine.StatusHibernating)
			c.IdleBefore = t0
			_, errs[i] = s.ClaimProject(ctx, p.ID, c)
		})
		what := fmt.Sprintf("round %d", round)
		if n := winners(t, what, errs, engine.ErrConflict); n != 1 {
			t.Fatalf("%s: %d claims won, want exactly 1", what, n)
		}
		var winner string
		for i, err := range errs {
			if err == nil {
				winner = ops[i]
			}
		}
		got := get(t, s, p.ID)
		if got.OpID != winner || got.Status != engine.StatusHibernating {
			t.Fatalf("%s: project %s held by %s, want hibernating held by the winner %s", what, got.Status, got.OpID, winner)
		}
		_, err := s.ReleaseProject(t.Context(), p.ID, engine.Release{OpID: winner, Epoch: got.OpEpoch, To: engine.StatusActive, Now: t0})
		noErr(t, what+": release", err)
	}
}

func testConcurrentTakeOver(t *testing.T, handles []engine.Store) {
	s := handles[0]
	p := createActive(t, s, uniqueSlug("stale"), t0.Add(-time.Hour))
	staleOp := newID()
	stale := engine.HoldOf(hold(t, s, p, staleOp))

	ctx := t.Context()
	ops := make([]string, racers)
	errs := make([]error, racers)
	race(t, handles, func(i int, s engine.Store) {
		if i == 0 {
			// The stale holder wakes up and beats while the sweeps take it over.
			errs[i] = s.Heartbeat(ctx, p.ID, stale, t0.Add(time.Second))
			return
		}
		ops[i] = newID()
		c := claimFor(ops[i], fromActive, engine.StatusHibernating)
		c.TakeOver = staleOp
		_, errs[i] = s.ClaimProject(ctx, p.ID, c)
	})
	if n := winners(t, "takeover", errs[1:], engine.ErrConflict); n != 1 {
		t.Fatalf("%d takeovers won, want exactly 1", n)
	}
	if errs[0] != nil && !errors.Is(errs[0], engine.ErrConflict) {
		t.Errorf("stale holder's heartbeat: %v, want nil or ErrConflict", errs[0])
	}
	got := get(t, s, p.ID)
	if got.OpID == staleOp || got.OpID == "" {
		t.Errorf("after takeover the project is held by %q", got.OpID)
	}
	wantErr(t, "stale holder's heartbeat after takeover", s.Heartbeat(t.Context(), p.ID, stale, t0), engine.ErrConflict)
}

func testConcurrentManualSnapshots(t *testing.T, handles []engine.Store) {
	s := handles[0]
	p := createActive(t, s, uniqueSlug("snaps"), t0)
	insert(t, s, newSnapshot(p, engine.SnapshotManual, "existing", t0))

	const perRacer = 2
	ctx := t.Context()
	errs := make([]error, racers*perRacer)
	hibErrs := make([]error, racers*perRacer)
	race(t, handles, func(i int, s engine.Store) {
		for j := range perRacer {
			// Hibernation snapshots in between must neither count nor be refused.
			hib := newSnapshot(p, engine.SnapshotHibernation, fmt.Sprintf("h%d-%d", i, j), t0)
			hibErrs[i*perRacer+j] = s.InsertSnapshot(ctx, hib, engine.MaxManualSnapshots, engine.Hold{})
			snap := newSnapshot(p, engine.SnapshotManual, fmt.Sprintf("m%d-%d", i, j), t0)
			errs[i*perRacer+j] = s.InsertSnapshot(ctx, snap, engine.MaxManualSnapshots, engine.Hold{})
		}
	})
	if err := errors.Join(hibErrs...); err != nil {
		t.Errorf("hibernation snapshots refused: %v", err)
	}
	if n := winners(t, "manual snapshots", errs, engine.ErrTimelineFull); n != engine.MaxManualSnapshots-1 {
		t.Errorf("%d manual snapshots accepted next to 1 existing, want %d", n, engine.MaxManualSnapshots-1)
	}
	got, err := s.ListSnapshots(t.Context(), engine.SnapshotFilter{ProjectID: p.ID, Types: []engine.SnapshotType{engine.SnapshotManual}})
	noErr(t, "ListSnapshots", err)
	if len(got) != engine.MaxManualSnapshots {
		t.Errorf("%d manual snapshots stored, want %d", len(got), engine.MaxManualSnapshots)
	}
}

func testConcurrentTryLock(t *testing.T, handles []engine.Store) {
	ctx := t.Context()
	name := uniqueSlug("lock")
	for round := range 3 {
		oks := make([]bool, racers)
		errs := make([]error, racers)
		race(t, handles, func(i int, s engine.Store) {
			oks[i], errs[i] = s.TryLock(ctx, name, fmt.Sprintf("owner-%d", i), t0.Add(time.Duration(round)*time.Hour), time.Minute)
		})
		if err := errors.Join(errs...); err != nil {
			t.Errorf("round %d: TryLock: %v", round, err)
		}
		n := 0
		for _, ok := range oks {
			if ok {
				n++
			}
		}
		// Each round starts after the previous lock expired, so exactly one owner gets it.
		if n != 1 {
			t.Errorf("round %d: %d owners got the lock, want exactly 1", round, n)
		}
	}
}

func testConcurrentTouch(t *testing.T, handles []engine.Store) {
	s := handles[0]
	ctx := t.Context()
	p := createActive(t, s, uniqueSlug("touch"), t0)
	errs := make([]error, racers)
	race(t, handles, func(i int, s engine.Store) {
		// Later and earlier times interleaved: only the maximum may survive.
		for j := range 4 {
			at := t0.Add(time.Duration((i*7+j*3)%racers) * time.Minute)
			errs[i] = errors.Join(errs[i], s.Touch(ctx, p.ID, touchAt(at)))
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Errorf("Touch: %v", err)
	}
	checkTime(t, "last activity after racing touches", get(t, s, p.ID).LastActivity, t0.Add((racers-1)*time.Minute))
}
