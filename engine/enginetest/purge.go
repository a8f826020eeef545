package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// PurgeFreesStorage is invariant 7 on eng, whose store is store: the purge removes the archive
// behind every expired snapshot, and only those. A snapshot deleted within the retention
// period, or a purge that is a dry run, removes nothing; after it, the deleted snapshot and the
// final snapshot of a deleted project go, their recorded sizes are what the purge reports
// freed, and only the other project's archive is left. objects lists the keys of the archives
// in eng's object store.
func PurgeFreesStorage(t *testing.T, eng *engine.Engine, store engine.Store, objects func() []string) {
	t.Helper()
	ctx := context.Background()
	p := NewProject(t, eng, "old")
	keep := NewProject(t, eng, "kept")
	s, err := eng.CreateSnapshot(ctx, p.Slug, "to delete")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := eng.CreateSnapshot(ctx, keep.Slug, "stays")
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.DeleteSnapshot(ctx, p.Slug, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.DeleteProject(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	if n := len(objects()); n != 3 {
		t.Fatalf("before purge: %d objects (%v), want 3: deleted, final and kept", n, objects())
	}
	expired, err := store.ListSnapshots(ctx, engine.SnapshotFilter{ProjectID: p.ID, IncludeDeleted: true})
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, e := range expired {
		size += e.TotalBytes()
	}
	rep, err := eng.SweepPurge(ctx, engine.SweepOptions{AsOf: time.Now().Add(29 * 24 * time.Hour)})
	if err != nil || len(rep.Purged) != 0 {
		t.Fatalf("purge within retention: %v %+v", err, rep)
	}
	rep, err = eng.SweepPurge(ctx, engine.SweepOptions{AsOf: time.Now().Add(31 * 24 * time.Hour), DryRun: true})
	if err != nil || len(rep.Purged) != 2 || len(objects()) != 3 {
		t.Fatalf("dry-run purge: %v %+v, objects %v", err, rep, objects())
	}
	rep, err = eng.SweepPurge(ctx, engine.SweepOptions{AsOf: time.Now().Add(31 * 24 * time.Hour)})
	if err != nil || len(rep.Purged) != 2 || rep.FreedBytes <= 0 || rep.FreedBytes != size {
		t.Fatalf("purge after retention: %v %+v, want 2 purged freeing %d bytes", err, rep, size)
	}
	if got := objects(); len(got) != 1 || got[0] != kept.Location {
		t.Fatalf("after purge the object store holds %v, want only %s", got, kept.Location)
	}
	if _, err := store.GetSnapshot(ctx, s.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("purged snapshot still recorded: %v", err)
	}
}
