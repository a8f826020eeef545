package engine_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// shiftClock is the wall clock moved by an offset the test sets (retention without waiting).
type shiftClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *shiftClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().UTC().Add(c.off)
}

func (c *shiftClock) add(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// A deleted snapshot comes back into the timeline, ready to restore; a manual one only into a
// free slot; never once its retention is (nearly) over; a live one has nothing to undelete.
func TestUndeleteSnapshot(t *testing.T) {
	clock := &shiftClock{}
	pt := openTest(t, t.TempDir(), "test", func(c *engine.Config) { c.Clock = clock })
	ctx, eng := t.Context(), pt.eng
	_, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "shop"})
	must(t, err)
	var manual []engine.Snapshot
	for range engine.MaxManualSnapshots {
		s, err := eng.CreateSnapshot(ctx, "shop", "keep")
		must(t, err)
		manual = append(manual, s)
	}
	must(t, eng.DeleteSnapshot(ctx, "shop", manual[0].ID))
	if _, err := eng.UndeleteSnapshot(ctx, "shop", manual[1].ID); !errors.Is(err, engine.ErrBadState) || !strings.Contains(err.Error(), "not deleted") {
		t.Errorf("undelete of a ready snapshot: %v", err)
	}
	_, err = eng.CreateSnapshot(ctx, "shop", "took the slot")
	must(t, err)
	if _, err := eng.UndeleteSnapshot(ctx, "shop", manual[0].ID); !errors.Is(err, engine.ErrTimelineFull) || !strings.Contains(err.Error(), "snapshot rm shop") {
		t.Errorf("undelete into a full timeline: %v", err)
	}
	must(t, eng.DeleteSnapshot(ctx, "shop", "took the slot"))
	// "keep" names four live snapshots and one deleted: undelete looks among the deleted.
	back, err := eng.UndeleteSnapshot(ctx, "shop", "keep")
	if err != nil || back.ID != manual[0].ID || back.Status != engine.SnapshotReady || !back.DeletedAt.IsZero() {
		t.Fatalf("undelete by label: %+v, %v", back, err)
	}
	if _, err := eng.RestoreSnapshot(ctx, "shop", back.ID); err != nil {
		t.Fatalf("restore of an undeleted snapshot: %v", err)
	}

	s, err := eng.Snapshot(ctx, "shop", manual[1].ID)
	must(t, err)
	must(t, eng.DeleteSnapshot(ctx, "shop", s.ID))
	clock.add(engine.SnapshotRetention - 30*time.Minute)
	if _, err := eng.UndeleteSnapshot(ctx, "shop", s.ID); !errors.Is(err, engine.ErrBadState) || !strings.Contains(err.Error(), "retention") {
		t.Errorf("undelete at the end of retention: %v", err)
	}
}

// A removed project comes back from its final snapshot while that is kept: hibernated on it,
// and a wake restores its files. Not while another project has its name, not past retention.
func TestUndeleteProject(t *testing.T) {
	clock := &shiftClock{}
	pt := openTest(t, t.TempDir(), "test", func(c *engine.Config) { c.Clock = clock })
	ctx, eng := t.Context(), pt.eng
	for _, name := range []string{"shop", "blog"} {
		_, err := eng.CreateProject(ctx, engine.CreateRequest{Name: name})
		must(t, err)
		must(t, eng.WriteFile(ctx, name, "index.html", strings.NewReader("<h1>"+name+"</h1>")))
	}
	// blog is hibernated when it is removed: its hibernation snapshot is the final one.
	_, err := eng.Hibernate(ctx, "blog")
	must(t, err)
	for _, name := range []string{"shop", "blog"} {
		_, err := eng.DeleteProject(ctx, name)
		must(t, err)
	}
	if _, err := eng.UndeleteProject(ctx, "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("undelete of an unknown project: %v", err)
	}

	// A new project took the name: the old one stays deleted.
	taker, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "shop"})
	must(t, err)
	if _, err := eng.UndeleteProject(ctx, "shop"); !errors.Is(err, engine.ErrBadState) {
		t.Errorf("undelete by a slug a live project has: %v", err)
	}
	all, err := eng.ListProjects(ctx, engine.ProjectFilter{IncludeDeleted: true})
	must(t, err)
	var old engine.Project
	for _, p := range all {
		if p.Slug == "shop" && p.ID != taker.ID {
			old = p
		}
	}
	if _, err := eng.UndeleteProject(ctx, old.ID); !errors.Is(err, engine.ErrExists) || !strings.Contains(err.Error(), "has that name") {
		t.Errorf("undelete while the name is taken: %v", err)
	}
	_, err = eng.DeleteProject(ctx, "shop")
	must(t, err)

	for _, ref := range []string{old.ID, "blog"} {
		p, err := eng.UndeleteProject(ctx, ref)
		if err != nil || p.Status != engine.StatusHibernated || p.HibernationSnapshot == "" {
			t.Fatalf("undelete %s: %+v, %v", ref, p, err)
		}
		s, err := eng.Snapshot(ctx, p.ID, p.HibernationSnapshot)
		if err != nil || s.Status != engine.SnapshotReady {
			t.Fatalf("final snapshot of %s: %+v, %v", ref, s, err)
		}
		_, err = eng.Wake(ctx, p.ID)
		must(t, err)
		var b bytes.Buffer
		must(t, eng.ReadFile(ctx, p.ID, "index.html", &b))
		if want := "<h1>" + p.Slug + "</h1>"; b.String() != want {
			t.Fatalf("%s after undelete and wake: index.html is %q, want %q", ref, b.String(), want)
		}
	}

	// Past retention there is nothing to come back from.
	_, err = eng.DeleteProject(ctx, "blog")
	must(t, err)
	clock.add(engine.SnapshotRetention)
	if _, err := eng.UndeleteProject(ctx, "blog"); !errors.Is(err, engine.ErrBadState) || !strings.Contains(err.Error(), "retention") {
		t.Errorf("undelete past retention: %v", err)
	}
}
