package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// trashRuntime is the local runtime whose trash holds what the test puts there (on this
// machine, as root, every real leftover is deleted by the next run before a doctor could see it:
// what stays is what cannot be deleted).
type trashRuntime struct {
	engine.Runtime
	items   []engine.TrashItem
	emptied *int
}

func (r trashRuntime) WaitReaped(context.Context) error       { return nil }
func (r trashRuntime) TrashLeft() ([]engine.TrashItem, error) { return r.items, nil }
func (r trashRuntime) EmptyTrash(context.Context) error {
	*r.emptied++
	return nil
}

// The doctor reports torn-down trees that wait in the trash longer than a delete takes, and
// --fix deletes them; a tree thrown away a moment ago is no finding.
func TestDoctorReportsTrashLeft(t *testing.T) {
	emptied := 0
	items := []engine.TrashItem{
		{Path: "/state/projects/.sailtui-trash/old.1", Since: time.Now().Add(-time.Hour)},
		{Path: "/state/projects/.sailtui-trash/new.2", Since: time.Now()},
	}
	p := openTest(t, t.TempDir(), "test", func(c *engine.Config) {
		c.Runtime = trashRuntime{Runtime: c.Runtime, items: items, emptied: &emptied}
	})
	ctx := context.Background()
	rep, err := p.eng.Doctor(ctx, false)
	must(t, err)
	var found *engine.Finding
	for i, f := range rep.Findings {
		if f.Check == "trash" {
			found = &rep.Findings[i]
		}
	}
	if found == nil || !strings.Contains(found.Detail, "old.1") || strings.Contains(found.Detail, "new.2") ||
		!found.Fixable || !strings.Contains(found.Fix, "doctor --fix") || rep.OK() {
		t.Fatalf("doctor: %+v", rep)
	}
	if emptied != 0 {
		t.Fatal("doctor without --fix emptied the trash")
	}
	rep, err = p.eng.Doctor(ctx, true)
	must(t, err)
	if emptied != 1 || !rep.OK() {
		t.Fatalf("doctor --fix: emptied %d times, report %+v", emptied, rep)
	}
}
