package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Issue 31: the README promises the 2 newest ready hibernation snapshots per project, and
// every mode kept 3 (the wake point was left out of the count). After each of several
// hibernate/wake cycles exactly DefaultKeepAuto are live, the wake point among them.
func TestHibernationKeepsTwoSnapshots(t *testing.T) {
	clock := &shiftClock{}
	pt := openTest(t, t.TempDir(), "test", func(c *engine.Config) { c.Clock = clock })
	ctx, eng := t.Context(), pt.eng
	_, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "shop"})
	must(t, err)
	live := func() []string {
		t.Helper()
		snaps, err := eng.Snapshots(ctx, "shop", false)
		must(t, err)
		var ids []string
		for _, s := range snaps {
			if s.Type == engine.SnapshotHibernation && s.Status == engine.SnapshotReady {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
	for cycle := 1; cycle <= 5; cycle++ {
		clock.add(time.Minute) // a new snapshot is newer than the last, as in life
		p, err := eng.Hibernate(ctx, "shop")
		must(t, err)
		ids := live()
		if want := min(cycle, engine.DefaultKeepAuto); len(ids) != want {
			t.Fatalf("after hibernation %d: %d ready hibernation snapshots %v, want %d", cycle, len(ids), ids, want)
		}
		if !slices.Contains(ids, p.HibernationSnapshot) {
			t.Fatalf("after hibernation %d the wake point %s is not among the live snapshots %v", cycle, p.HibernationSnapshot, ids)
		}
		clock.add(time.Minute)
		_, err = eng.Wake(ctx, "shop")
		must(t, err)
		if again := live(); !slices.Equal(again, ids) {
			t.Fatalf("wake %d changed the live hibernation snapshots: %v, was %v", cycle, again, ids)
		}
	}
}
