package storetest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var snapshotTests = []test{
	{"SnapshotRoundTrip", testSnapshotRoundTrip},
	{"ManualSnapshotLimit", testManualSnapshotLimit},
	{"ListSnapshotsFilters", testListSnapshotsFilters},
	{"DeleteSnapshotRecord", testDeleteSnapshotRecord},
	{"UndeleteSnapshot", testUndeleteSnapshot},
}

func newSnapshot(p engine.Project, typ engine.SnapshotType, label string, created time.Time) engine.Snapshot {
	return engine.Snapshot{ID: newID(), ProjectID: p.ID, Owner: p.Owner, Type: typ, Label: label,
		Status: engine.SnapshotReady, CreatedAt: created, ReadyAt: created.Add(time.Second), SizeBytes: 1 << 20,
		Backend: "archive", Location: "snapshots/" + p.ID + "/" + label + ".tar.zst"}
}

func insert(t *testing.T, s engine.Store, snap engine.Snapshot) engine.Snapshot {
	t.Helper()
	noErr(t, "InsertSnapshot "+snap.Label, s.InsertSnapshot(t.Context(), snap, engine.MaxManualSnapshots, engine.Hold{}))
	return snap
}

// softDeleteSnapshot marks snap deleted at `at` the way the timeline does.
func softDeleteSnapshot(t *testing.T, s engine.Store, snap engine.Snapshot, at time.Time) engine.Snapshot {
	t.Helper()
	snap.Status, snap.DeletedAt = engine.SnapshotDeleted, at
	noErr(t, "UpdateSnapshot (delete) "+snap.Label, s.UpdateSnapshot(t.Context(), snap, engine.Hold{}))
	return snap
}

func testSnapshotRoundTrip(t *testing.T, s engine.Store) {
	p := createActive(t, s, "snappy", t0)
	snap := engine.Snapshot{ID: newID(), ProjectID: p.ID, Owner: "alice", Type: engine.SnapshotManual,
		Label: "before upgrade ✓", Status: engine.SnapshotPending, CreatedAt: t0.In(time.FixedZone("X", -5*3600)),
		SizeBytes: 0, Backend: "archive"}
	noErr(t, "InsertSnapshot", s.InsertSnapshot(t.Context(), snap, engine.MaxManualSnapshots, engine.Hold{}))
	got, err := s.GetSnapshot(t.Context(), snap.ID)
	noErr(t, "GetSnapshot", err)
	checkSnapshot(t, "inserted snapshot", got, snap)

	snap.Status, snap.ReadyAt, snap.SizeBytes = engine.SnapshotReady, t0.Add(3*time.Second), 5<<30
	snap.SHA256, snap.CapacityBytes = strings.Repeat("ab", 32), 10<<30
	snap.Location, snap.Label, snap.Error = "snapshots/x.tar.zst", "relabelled", "warning: slow"
	snap.Parts = []engine.SnapshotPart{{Name: "db", Location: "snapshots/x.db.tar.zst", SizeBytes: 7, UnpackedBytes: 70,
		SHA256: strings.Repeat("cd", 32)}, {Name: "cache", SizeBytes: 0, CapacityBytes: 1 << 30, UnpackedBytes: -1}}
	noErr(t, "UpdateSnapshot", s.UpdateSnapshot(t.Context(), snap, engine.Hold{}))
	got, err = s.GetSnapshot(t.Context(), snap.ID)
	noErr(t, "GetSnapshot", err)
	checkSnapshot(t, "updated snapshot", got, snap)

	wantErr(t, "InsertSnapshot with a used id", s.InsertSnapshot(t.Context(), snap, engine.MaxManualSnapshots, engine.Hold{}), engine.ErrExists)
	missing := snap
	missing.ID = newID()
	wantErr(t, "UpdateSnapshot missing", s.UpdateSnapshot(t.Context(), missing, engine.Hold{}), engine.ErrNotFound)
	_, err = s.GetSnapshot(t.Context(), missing.ID)
	wantErr(t, "GetSnapshot missing", err, engine.ErrNotFound)
	orphan := newSnapshot(engine.Project{ID: newID()}, engine.SnapshotHibernation, "orphan", t0)
	wantErr(t, "InsertSnapshot for a missing project",
		s.InsertSnapshot(t.Context(), orphan, engine.MaxManualSnapshots, engine.Hold{}), engine.ErrNotFound)
}

// Invariant 5: at most max manual snapshots that are not deleted; the engine's own never count.
func testManualSnapshotLimit(t *testing.T, s engine.Store) {
	p := createActive(t, s, "limited", t0)
	var manual []engine.Snapshot
	for i := range engine.MaxManualSnapshots {
		manual = append(manual, insert(t, s, newSnapshot(p, engine.SnapshotManual, fmt.Sprintf("m%d", i), t0.Add(time.Duration(i)*time.Minute))))
	}
	sixth := newSnapshot(p, engine.SnapshotManual, "m5", t0.Add(time.Hour))
	err := s.InsertSnapshot(t.Context(), sixth, engine.MaxManualSnapshots, engine.Hold{})
	wantErr(t, "6th manual snapshot", err, engine.ErrTimelineFull)
	if err != nil && !strings.Contains(err.Error(), strconv.Itoa(engine.MaxManualSnapshots)) {
		t.Errorf("timeline-full error %q does not name the limit %d", err, engine.MaxManualSnapshots)
	}
	_, err = s.GetSnapshot(t.Context(), sixth.ID)
	wantErr(t, "refused snapshot stored anyway", err, engine.ErrNotFound)

	// Hibernation and safety snapshots are never refused.
	for i := range 3 {
		insert(t, s, newSnapshot(p, engine.SnapshotHibernation, fmt.Sprintf("h%d", i), t0))
		insert(t, s, newSnapshot(p, engine.SnapshotSafety, fmt.Sprintf("s%d", i), t0))
	}
	// Another project has its own timeline.
	q := createActive(t, s, "unlimited", t0)
	insert(t, s, newSnapshot(q, engine.SnapshotManual, "q0", t0))

	// Pending and failed manual snapshots hold a slot too.
	errored := manual[0]
	errored.Status, errored.Error = engine.SnapshotError, "upload failed"
	noErr(t, "UpdateSnapshot (error)", s.UpdateSnapshot(t.Context(), errored, engine.Hold{}))
	wantErr(t, "manual snapshot with an errored one in the timeline",
		s.InsertSnapshot(t.Context(), sixth, engine.MaxManualSnapshots, engine.Hold{}), engine.ErrTimelineFull)

	// A deleted one frees its slot, once.
	softDeleteSnapshot(t, s, manual[1], t0)
	insert(t, s, sixth)
	wantErr(t, "manual snapshot after the freed slot was taken",
		s.InsertSnapshot(t.Context(), newSnapshot(p, engine.SnapshotManual, "m6", t0), engine.MaxManualSnapshots, engine.Hold{}),
		engine.ErrTimelineFull)

	// The limit is the caller's.
	r := createActive(t, s, "tight", t0)
	insert(t, s, newSnapshot(r, engine.SnapshotManual, "r0", t0))
	noErr(t, "2nd manual with max 2", s.InsertSnapshot(t.Context(), newSnapshot(r, engine.SnapshotManual, "r1", t0), 2, engine.Hold{}))
	wantErr(t, "3rd manual with max 2",
		s.InsertSnapshot(t.Context(), newSnapshot(r, engine.SnapshotManual, "r2", t0), 2, engine.Hold{}), engine.ErrTimelineFull)
}

func testListSnapshotsFilters(t *testing.T, s engine.Store) {
	a := createActive(t, s, "a", t0)
	b := createActive(t, s, "b", t0)
	m1 := insert(t, s, newSnapshot(a, engine.SnapshotManual, "m1", t0.Add(-50*24*time.Hour)))
	h1 := insert(t, s, newSnapshot(a, engine.SnapshotHibernation, "h1", t0.Add(-40*24*time.Hour)))
	s1 := insert(t, s, newSnapshot(a, engine.SnapshotSafety, "s1", t0.Add(-30*24*time.Hour)))
	oldDel := softDeleteSnapshot(t, s, insert(t, s, newSnapshot(a, engine.SnapshotManual, "old", t0.Add(-60*24*time.Hour))),
		t0.Add(-31*24*time.Hour))
	newDel := softDeleteSnapshot(t, s, insert(t, s, newSnapshot(a, engine.SnapshotManual, "new", t0.Add(-2*24*time.Hour))),
		t0.Add(-24*time.Hour))
	bHib := softDeleteSnapshot(t, s, insert(t, s, newSnapshot(b, engine.SnapshotHibernation, "bh", t0.Add(-90*24*time.Hour))),
		t0.Add(-45*24*time.Hour))
	bMan := insert(t, s, newSnapshot(b, engine.SnapshotManual, "bm", t0))

	purgeBefore := t0.Add(-engine.SnapshotRetention)
	manual := []engine.SnapshotType{engine.SnapshotManual}
	cases := []struct {
		name string
		f    engine.SnapshotFilter
		want []string
	}{
		{"everything live", engine.SnapshotFilter{}, sorted(m1.ID, h1.ID, s1.ID, bMan.ID)},
		{"project", engine.SnapshotFilter{ProjectID: a.ID}, sorted(m1.ID, h1.ID, s1.ID)},
		{"project with deleted", engine.SnapshotFilter{ProjectID: a.ID, IncludeDeleted: true},
			sorted(m1.ID, h1.ID, s1.ID, oldDel.ID, newDel.ID)},
		{"manual", engine.SnapshotFilter{ProjectID: a.ID, Types: manual}, sorted(m1.ID)},
		{"manual with deleted", engine.SnapshotFilter{ProjectID: a.ID, Types: manual, IncludeDeleted: true},
			sorted(m1.ID, oldDel.ID, newDel.ID)},
		{"engine's own", engine.SnapshotFilter{ProjectID: a.ID,
			Types: []engine.SnapshotType{engine.SnapshotHibernation, engine.SnapshotSafety}}, sorted(h1.ID, s1.ID)},
		{"all manual", engine.SnapshotFilter{Types: manual}, sorted(m1.ID, bMan.ID)},
		{"expired, every project", engine.SnapshotFilter{OnlyDeletedBefore: purgeBefore}, sorted(oldDel.ID, bHib.ID)},
		{"expired, one project", engine.SnapshotFilter{ProjectID: a.ID, OnlyDeletedBefore: purgeBefore}, sorted(oldDel.ID)},
		{"expired manual", engine.SnapshotFilter{Types: manual, OnlyDeletedBefore: purgeBefore}, sorted(oldDel.ID)},
		{"expired with IncludeDeleted", engine.SnapshotFilter{IncludeDeleted: true, OnlyDeletedBefore: purgeBefore},
			sorted(oldDel.ID, bHib.ID)},
		{"nothing expired yet", engine.SnapshotFilter{OnlyDeletedBefore: t0.Add(-100 * 24 * time.Hour)}, sorted()},
		{"unknown project", engine.SnapshotFilter{ProjectID: newID()}, sorted()},
	}
	for _, tc := range cases {
		got, err := s.ListSnapshots(t.Context(), tc.f)
		noErr(t, "ListSnapshots "+tc.name, err)
		checkIDs(t, "ListSnapshots "+tc.name, sortedIDs(got, snapshotID), tc.want)
		for _, snap := range got {
			checkUTC(t, "listed snapshot "+snap.Label, snap.CreatedAt, snap.ReadyAt, snap.DeletedAt)
		}
	}

	// Listed snapshots carry every field.
	got, err := s.ListSnapshots(t.Context(), engine.SnapshotFilter{ProjectID: b.ID, IncludeDeleted: true})
	noErr(t, "ListSnapshots b", err)
	for _, snap := range got {
		want := map[string]engine.Snapshot{bHib.ID: bHib, bMan.ID: bMan}[snap.ID]
		checkSnapshot(t, "listed snapshot "+snap.Label, snap, want)
	}
}

func testDeleteSnapshotRecord(t *testing.T, s engine.Store) {
	p := createActive(t, s, "purged", t0)
	keep := insert(t, s, newSnapshot(p, engine.SnapshotManual, "keep", t0))
	gone := softDeleteSnapshot(t, s, insert(t, s, newSnapshot(p, engine.SnapshotManual, "gone", t0)), t0.Add(-40*24*time.Hour))

	noErr(t, "DeleteSnapshotRecord", s.DeleteSnapshotRecord(t.Context(), gone.ID))
	_, err := s.GetSnapshot(t.Context(), gone.ID)
	wantErr(t, "GetSnapshot after DeleteSnapshotRecord", err, engine.ErrNotFound)
	wantErr(t, "DeleteSnapshotRecord again", s.DeleteSnapshotRecord(t.Context(), gone.ID), engine.ErrNotFound)

	got, err := s.ListSnapshots(t.Context(), engine.SnapshotFilter{ProjectID: p.ID, IncludeDeleted: true})
	noErr(t, "ListSnapshots", err)
	checkIDs(t, "snapshots after purge", sortedIDs(got, snapshotID), sorted(keep.ID))
}

// A soft-deleted snapshot comes back as ready within retention; a manual one only when the
// timeline has room (invariant 5, in the same transaction); a failed one, one not deleted and
// one past retention never.
func testUndeleteSnapshot(t *testing.T, s engine.Store) {
	p := createActive(t, s, "undo", t0)
	cutoff := t0.Add(-30 * 24 * time.Hour)
	var manual []engine.Snapshot
	for i := range engine.MaxManualSnapshots {
		manual = append(manual, insert(t, s, newSnapshot(p, engine.SnapshotManual, fmt.Sprintf("m%d", i), t0)))
	}
	gone := softDeleteSnapshot(t, s, manual[0], t0)
	insert(t, s, newSnapshot(p, engine.SnapshotManual, "took the slot", t0))
	_, err := s.UndeleteSnapshot(t.Context(), gone.ID, cutoff, engine.MaxManualSnapshots)
	wantErr(t, "undelete into a full timeline", err, engine.ErrTimelineFull)
	if got, _ := s.GetSnapshot(t.Context(), gone.ID); got.Status != engine.SnapshotDeleted {
		t.Errorf("a refused undelete changed the snapshot: %+v", got)
	}

	softDeleteSnapshot(t, s, manual[1], t0)
	back, err := s.UndeleteSnapshot(t.Context(), gone.ID, cutoff, engine.MaxManualSnapshots)
	noErr(t, "UndeleteSnapshot", err)
	want := manual[0]
	checkSnapshot(t, "undeleted snapshot (returned)", back, want)
	got, err := s.GetSnapshot(t.Context(), gone.ID)
	noErr(t, "GetSnapshot", err)
	checkSnapshot(t, "undeleted snapshot (stored)", got, want)

	_, err = s.UndeleteSnapshot(t.Context(), gone.ID, cutoff, engine.MaxManualSnapshots)
	wantErr(t, "undelete of a snapshot that is not deleted", err, engine.ErrConflict)
	_, err = s.UndeleteSnapshot(t.Context(), newID(), cutoff, engine.MaxManualSnapshots)
	wantErr(t, "undelete of a missing snapshot", err, engine.ErrNotFound)

	// Engine snapshots are not counted; one deleted at or before the cutoff is the purge's.
	old := softDeleteSnapshot(t, s, insert(t, s, newSnapshot(p, engine.SnapshotHibernation, "old", t0)), cutoff)
	_, err = s.UndeleteSnapshot(t.Context(), old.ID, cutoff, engine.MaxManualSnapshots)
	wantErr(t, "undelete past retention", err, engine.ErrConflict)
	hib := softDeleteSnapshot(t, s, insert(t, s, newSnapshot(p, engine.SnapshotHibernation, "hib", t0)), t0)
	_, err = s.UndeleteSnapshot(t.Context(), hib.ID, cutoff, engine.MaxManualSnapshots)
	noErr(t, "undelete a hibernation snapshot beside a full timeline", err)

	failed := newSnapshot(p, engine.SnapshotSafety, "failed", t0)
	failed.Status, failed.Error, failed.DeletedAt = engine.SnapshotDeleted, "upload failed", t0
	insert(t, s, failed)
	_, err = s.UndeleteSnapshot(t.Context(), failed.ID, cutoff, engine.MaxManualSnapshots)
	wantErr(t, "undelete of a failed snapshot", err, engine.ErrConflict)
}
