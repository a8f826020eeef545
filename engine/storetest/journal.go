package storetest

import (
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var journalTests = []test{
	{"OperationRoundTrip", testOperationRoundTrip},
	{"ListOps", testListOps},
	{"TryLock", testTryLock},
	{"TakeOverLock", testTakeOverLock},
}

func newOp(p engine.Project, kind engine.OpKind, started time.Time) engine.Operation {
	return engine.Operation{ID: newID(), ProjectID: p.ID, Kind: kind, Step: "claimed", State: engine.OpRunning,
		Owner: "host-a/42", StartedAt: started, UpdatedAt: started}
}

func testOperationRoundTrip(t *testing.T, s engine.Store) {
	p := createActive(t, s, "journaled", t0)
	op := newOp(p, engine.OpHibernate, t0.In(time.FixedZone("Y", 9*3600)))
	noErr(t, "InsertOp", s.InsertOp(t.Context(), op))
	got, err := s.GetOp(t.Context(), op.ID)
	noErr(t, "GetOp", err)
	checkOp(t, "inserted op", got, op)

	op.Step, op.State, op.SnapshotID = "snapshot-ready", engine.OpFailed, newID()
	op.UpdatedAt, op.FinishedAt, op.Error = t0.Add(time.Minute), t0.Add(2*time.Minute), "destroy: permission denied"
	noErr(t, "UpdateOp", s.UpdateOp(t.Context(), op))
	got, err = s.GetOp(t.Context(), op.ID)
	noErr(t, "GetOp", err)
	checkOp(t, "updated op", got, op)

	wantErr(t, "InsertOp with a used id", s.InsertOp(t.Context(), op), engine.ErrExists)
	missing := op
	missing.ID = newID()
	wantErr(t, "UpdateOp missing", s.UpdateOp(t.Context(), missing), engine.ErrNotFound)
	_, err = s.GetOp(t.Context(), missing.ID)
	wantErr(t, "GetOp missing", err, engine.ErrNotFound)
}

func testListOps(t *testing.T, s engine.Store) {
	p := createActive(t, s, "busy", t0)
	q := createActive(t, s, "other", t0)
	var ops [4]engine.Operation
	for i := range ops {
		ops[i] = newOp(p, engine.OpStart, t0.Add(time.Duration(i)*time.Minute))
	}
	// Inserted out of order: the listing goes by start time, not by insertion.
	for _, i := range []int{2, 0, 3, 1} {
		noErr(t, "InsertOp", s.InsertOp(t.Context(), ops[i]))
	}
	noErr(t, "InsertOp other", s.InsertOp(t.Context(), newOp(q, engine.OpStop, t0.Add(time.Hour))))

	got, err := s.ListOps(t.Context(), p.ID, 0)
	noErr(t, "ListOps", err)
	checkIDs(t, "ListOps newest first", opIDs(got), []string{ops[3].ID, ops[2].ID, ops[1].ID, ops[0].ID})
	for i, op := range got {
		checkOp(t, "listed op", op, ops[3-i])
	}

	got, err = s.ListOps(t.Context(), p.ID, 2)
	noErr(t, "ListOps limit 2", err)
	checkIDs(t, "ListOps limit 2", opIDs(got), []string{ops[3].ID, ops[2].ID})

	got, err = s.ListOps(t.Context(), newID(), 0)
	noErr(t, "ListOps unknown project", err)
	checkIDs(t, "ListOps unknown project", opIDs(got), nil)
}

func opIDs(ops []engine.Operation) []string {
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		out = append(out, op.ID)
	}
	return out
}

func testTryLock(t *testing.T, s engine.Store) {
	ctx := t.Context()
	const ttl = time.Minute
	try := func(what, owner string, now time.Time, want bool) {
		t.Helper()
		ok, err := s.TryLock(ctx, "sweep", owner, now, ttl)
		noErr(t, what, err)
		if ok != want {
			t.Errorf("%s: TryLock(%s) = %v, want %v", what, owner, ok, want)
		}
	}
	try("first take", "a", t0, true)
	try("other owner while held", "b", t0.Add(30*time.Second), false)
	try("same owner again", "a", t0.Add(30*time.Second), true)
	// Re-taking extended the lock to t0+30s+ttl.
	try("other owner after the first expiry", "b", t0.Add(ttl+10*time.Second), false)
	try("other owner after expiry", "b", t0.Add(30*time.Second+ttl+time.Second), true)
	try("old owner after losing it", "a", t0.Add(30*time.Second+ttl+2*time.Second), false)

	// Other lock names are independent.
	ok, err := s.TryLock(ctx, "purge", "a", t0, ttl)
	noErr(t, "TryLock purge", err)
	if !ok {
		t.Error("TryLock of another name refused")
	}

	// Unlock by someone else leaves the lock alone.
	later := t0.Add(30*time.Second + ttl + 3*time.Second)
	_ = s.Unlock(ctx, "sweep", "a")
	try("after a stranger's Unlock", "c", later, false)

	noErr(t, "Unlock", s.Unlock(ctx, "sweep", "b"))
	try("after Unlock", "c", later, true)
}

func testTakeOverLock(t *testing.T, s engine.Store) {
	ctx := t.Context()
	const ttl = time.Minute
	holder := func(what string, now time.Time, want string) {
		t.Helper()
		got, err := s.LockHolder(ctx, "sweep", now)
		noErr(t, what, err)
		if got != want {
			t.Errorf("%s: LockHolder = %q, want %q", what, got, want)
		}
	}
	holder("never taken", t0, "")
	ok, err := s.TryLock(ctx, "sweep", "dead", t0, ttl)
	noErr(t, "TryLock", err)
	if !ok {
		t.Fatal("TryLock of a free lock refused")
	}
	holder("held", t0.Add(time.Second), "dead")
	holder("expired", t0.Add(ttl+time.Second), "")

	ok, err = s.TakeOverLock(ctx, "sweep", "someone-else", "next", t0.Add(time.Second), ttl)
	noErr(t, "TakeOverLock from the wrong holder", err)
	if ok {
		t.Error("TakeOverLock from a holder that does not hold it succeeded")
	}
	ok, err = s.TakeOverLock(ctx, "sweep", "dead", "next", t0.Add(2*time.Second), ttl)
	noErr(t, "TakeOverLock", err)
	if !ok {
		t.Fatal("TakeOverLock from the holder refused")
	}
	holder("taken over", t0.Add(ttl), "next")
	ok, err = s.TakeOverLock(ctx, "sweep", "dead", "third", t0.Add(3*time.Second), ttl)
	noErr(t, "second TakeOverLock", err)
	if ok {
		t.Error("a second take-over from the same dead holder succeeded: two sweeps would run")
	}
	ok, err = s.TryLock(ctx, "sweep", "third", t0.Add(3*time.Second), ttl)
	noErr(t, "TryLock after take-over", err)
	if ok {
		t.Error("the taken-over lock was given to another owner")
	}
}
