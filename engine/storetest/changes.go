package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var changeTests = []test{
	{"ChangedSinceFirstReadIsLiveList", testChangedSinceFirstRead},
	{"ChangedSinceSeesEveryWrite", testChangedSinceSeesEveryWrite},
	{"ChangedSinceConvergesUnderWrites", testChangedSinceConverges},
	{"ChangedSinceFirstReadUnderWrites", testChangedSinceFirstReadUnderWrites},
}

// changes reads what changed since cursor, by id.
func changes(t *testing.T, s engine.Store, cursor int64) (map[string]engine.Project, int64) {
	t.Helper()
	ch, err := s.ListProjectsChangedSince(t.Context(), cursor)
	if err != nil {
		t.Fatalf("ListProjectsChangedSince(%d): %v", cursor, err)
	}
	out := make(map[string]engine.Project, len(ch.Projects))
	for _, p := range ch.Projects {
		out[p.ID] = p
	}
	return out, ch.Cursor
}

// createFleet makes n live projects, p00, p01, ..., last active at t0.
func createFleet(t *testing.T, s engine.Store, n int) []engine.Project {
	t.Helper()
	ps := make([]engine.Project, n)
	for i := range ps {
		ps[i] = createActive(t, s, fmt.Sprintf("p%02d", i), t0)
	}
	return ps
}

// readWhileWriting reads what changed from cursor again and again until writers are done,
// handing each read to merge, and returns the cursor after the last read.
func readWhileWriting(t *testing.T, s engine.Store, writers *sync.WaitGroup, cursor int64, merge func(map[string]engine.Project)) int64 {
	t.Helper()
	done := make(chan struct{})
	go func() { writers.Wait(); close(done) }()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		var got map[string]engine.Project
		got, cursor = changes(t, s, cursor)
		merge(got)
	}
	return cursor
}

// Cursor 0 is the list the console starts from: every live project, no deleted one.
func testChangedSinceFirstRead(t *testing.T, s engine.Store) {
	a := createActive(t, s, "a", t0)
	b := createActive(t, s, "b", t0.Add(time.Minute))
	gone := createActive(t, s, "gone", t0)
	softDelete(t, s, gone)
	// The fields most projects leave empty, set, as a failed hibernation leaves a project
	// (failed) and a claim after it (held): the lists read those columns in a way of their own.
	ctx := t.Context()
	failHibernation := func(slug, op, snapshot string) engine.Project {
		p := createActive(t, s, slug, t0)
		claimed, err := s.ClaimProject(ctx, p.ID, claimFor(op, []engine.ProjectStatus{engine.StatusActive}, engine.StatusHibernating))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReleaseProject(ctx, p.ID, engine.Release{OpID: op, Epoch: claimed.OpEpoch, To: engine.StatusFailed, Reason: "snapshot failed: disk full",
			Now: t0, SetHibernationSnapshot: snapshot != "", HibernationSnapshot: snapshot}); err != nil {
			t.Fatal(err)
		}
		return get(t, s, p.ID)
	}
	held := hold(t, s, failHibernation("held", "op-1", "snap-1"), "op-2")
	failed := failHibernation("failed", "op-3", "")

	got, cursor := changes(t, s, 0)
	if len(got) != 4 {
		t.Fatalf("first read lists %d projects, want a, b, failed and held: %v", len(got), got)
	}
	checkProject(t, "a in the first read", got[a.ID], a)
	checkProject(t, "b in the first read", got[b.ID], b)
	checkProject(t, "a failed project in the first read", got[failed.ID], failed)
	checkProject(t, "a held project in the first read", got[held.ID], held)
	if f, h := got[failed.ID], got[held.ID]; f.StatusReason == "" || h.HibernationSnapshot == "" || h.OpID == "" || h.OpKind == "" || h.OpOwner == "" {
		t.Errorf("the first read lost a field: failed %+v, held %+v", f, h)
	}
	if cursor == 0 {
		t.Error("the first read's cursor is 0: the next read would list everything again")
	}
}

// Every kind of write shows in the next read: a new project, a status change, activity, a
// delete (as a deleted project, so a reader can drop it) and an undelete-like revival.
func testChangedSinceSeesEveryWrite(t *testing.T, s engine.Store) {
	ctx := t.Context()
	a := createActive(t, s, "a", t0)
	b := createActive(t, s, "b", t0)
	_, cursor := changes(t, s, 0)

	c := createActive(t, s, "c", t0)
	got, cursor := changes(t, s, cursor)
	if _, ok := got[c.ID]; !ok {
		t.Errorf("a project created after the cursor is not in the read: %v", got)
	}

	noErr(t, "Touch", s.Touch(ctx, b.ID, touchAt(t0.Add(time.Hour))))
	got, cursor = changes(t, s, cursor)
	if p, ok := got[b.ID]; !ok {
		t.Errorf("activity after the cursor is not in the read: %v", got)
	} else {
		checkTime(t, "b's activity in the read", p.LastActivity, t0.Add(time.Hour))
		checkSource(t, "b in the read", p, "test", "storetest")
	}

	op := newID()
	claimed, err := s.ClaimProject(ctx, a.ID, claimFor(op, []engine.ProjectStatus{engine.StatusActive}, engine.StatusHibernating))
	if err != nil {
		t.Fatal(err)
	}
	got, cursor = changes(t, s, cursor)
	if p := got[a.ID]; p.Status != engine.StatusHibernating || p.OpID != op {
		t.Errorf("a claim after the cursor reads as %+v, want hibernating held by %s", p, op)
	}
	if _, err := s.ReleaseProject(ctx, a.ID, engine.Release{OpID: op, Epoch: claimed.OpEpoch, To: engine.StatusDeleted, Now: t0}); err != nil {
		t.Fatal(err)
	}
	got, _ = changes(t, s, cursor)
	if p, ok := got[a.ID]; !ok || p.Status != engine.StatusDeleted {
		t.Errorf("a project deleted after the cursor reads as %+v (listed: %v), want it listed as deleted", p, ok)
	}
	// Whatever a read lists again without a change must be the project as it is now.
	for id, p := range got {
		checkProject(t, "a project read again", p, get(t, s, id))
	}
}

// Writers race a reader that only ever reads what changed: once they stop, one more read
// leaves the reader with exactly the store's list. A store whose change marks are not in
// commit order loses writes here.
func testChangedSinceConverges(t *testing.T, s engine.Store) {
	ctx := t.Context()
	const projects, writers, writes = 20, 6, 25
	ps := createFleet(t, s, projects)
	view := map[string]engine.Project{}
	merge := func(got map[string]engine.Project) {
		for id, p := range got {
			if p.Status == engine.StatusDeleted {
				delete(view, id)
			} else {
				view[id] = p
			}
		}
	}
	got, cursor := changes(t, s, 0)
	merge(got)

	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range writes {
				p := ps[(w*writes+j)%projects]
				errs[w] = errors.Join(errs[w], s.Touch(ctx, p.ID, touchAt(t0.Add(time.Duration(w*writes+j+1)*time.Second))))
			}
		}()
	}
	cursor = readWhileWriting(t, s, &wg, cursor, merge)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Touch: %v", err)
	}
	got, _ = changes(t, s, cursor)
	merge(got)
	want, err := s.ListProjects(ctx, engine.ProjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(view) != len(want) {
		t.Fatalf("the reader holds %d projects, the store lists %d", len(view), len(want))
	}
	for _, p := range want {
		if !sameTime(view[p.ID].LastActivity, p.LastActivity) {
			t.Errorf("%s: the reader has activity %s, the store %s: a write was missed", p.Slug, view[p.ID].LastActivity, p.LastActivity)
		}
	}
}

// The first read itself races writers (a console starting while a sweep runs): whatever it
// missed, the incremental reads from its cursor bring in. A store that reads its list in
// parts, each from a snapshot of its own, must hand out a cursor every part has seen.
func testChangedSinceFirstReadUnderWrites(t *testing.T, s engine.Store) {
	ctx := t.Context()
	const projects, writers, writes = 40, 4, 30
	ps := createFleet(t, s, projects)
	at := time.Duration(0)
	for round := range 4 {
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			base := at + time.Duration(w*writes)*time.Second
			wg.Go(func() {
				for j := range writes {
					p := ps[(w*7+j*3)%projects]
					errs[w] = errors.Join(errs[w], s.Touch(ctx, p.ID, touchAt(t0.Add(base+time.Duration(j+1)*time.Second))))
				}
			})
		}
		at += time.Duration(writers*writes+1) * time.Second
		view, cursor := changes(t, s, 0)
		cursor = readWhileWriting(t, s, &wg, cursor, func(got map[string]engine.Project) {
			for id, p := range got {
				view[id] = p
			}
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		got, _ := changes(t, s, cursor)
		for id, p := range got {
			view[id] = p
		}
		for _, p := range ps {
			want := get(t, s, p.ID)
			if !sameTime(view[p.ID].LastActivity, want.LastActivity) {
				t.Fatalf("round %d, %s: the reader has activity %s, the store %s: a write the first read missed was never read",
					round, p.Slug, view[p.ID].LastActivity, want.LastActivity)
			}
		}
	}
}
