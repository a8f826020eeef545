package engine_test

import (
	"context"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// sharedNotifier stands for a notifier that reaches other processes (Postgres LISTEN/NOTIFY).
type sharedNotifier struct{ *engine.Bus }

// The console watches the store fast only when its events cannot hear other processes.
func TestEventsShared(t *testing.T) {
	if openTest(t, t.TempDir(), "a").eng.EventsShared() {
		t.Error("an engine on the in-process bus says its events reach other processes")
	}
	p := openTest(t, t.TempDir(), "b", func(c *engine.Config) { c.Notifier = sharedNotifier{engine.NewBus()} })
	if !p.eng.EventsShared() {
		t.Error("an engine on a shared notifier says its events stay in the process")
	}
}

// The engine's incremental read is the store's: a first read lists the live projects, a
// change after it shows in the next.
func TestProjectsChangedSince(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "a")
	for _, slug := range []string{"one", "two"} {
		if _, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: slug}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := p.eng.ProjectsChangedSince(ctx, 0)
	if err != nil || len(first.Projects) != 2 {
		t.Fatalf("first read: %d projects, %v", len(first.Projects), err)
	}
	if _, err := p.eng.Hibernate(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	next, err := p.eng.ProjectsChangedSince(ctx, first.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Projects) != 1 || next.Projects[0].Slug != "two" || next.Projects[0].Status != engine.StatusHibernated {
		t.Errorf("after hibernating two the read gives %+v, want two hibernated only", next.Projects)
	}
}
