package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// Every snapshot argument is an ID, a label or a unique ID prefix; one that names several
// snapshots is refused with each of them, and nothing is done.
func TestResolveSnapshot(t *testing.T) {
	pt := openTest(t, t.TempDir(), "test")
	ctx := t.Context()
	eng := pt.eng
	_, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "shop"})
	must(t, err)
	first, err := eng.CreateSnapshot(ctx, "shop", "twin")
	must(t, err)
	second, err := eng.CreateSnapshot(ctx, "shop", "twin")
	must(t, err)
	solo, err := eng.CreateSnapshot(ctx, "shop", "solo")
	must(t, err)

	for key, want := range map[string]string{
		solo.ID:                      solo.ID, // the ID itself
		"solo":                       solo.ID, // the label
		first.ID[:len(first.ID)-1]:   first.ID,
		second.ID[:len(second.ID)-1]: second.ID,
	} {
		got, err := eng.ResolveSnapshot(ctx, "shop", key)
		if err != nil || got.ID != want {
			t.Errorf("ResolveSnapshot(%q) = %s, %v; want %s", key, got.ID, err, want)
		}
	}
	for _, key := range []string{"twin", "manual-"} {
		_, err := eng.ResolveSnapshot(ctx, "shop", key)
		if !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "ambiguous") ||
			!strings.Contains(err.Error(), first.ID) || !strings.Contains(err.Error(), second.ID) {
			t.Errorf("ResolveSnapshot(%q): %v; want ambiguous, naming both twins", key, err)
		}
	}
	if _, err := eng.ResolveSnapshot(ctx, "shop", "nothing-like-it"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("unknown key: %v", err)
	}
	// The operations resolve the same way: relabel by a prefix, delete by the new label.
	s, err := eng.RelabelSnapshot(ctx, "shop", first.ID[:len(first.ID)-1], "first")
	if err != nil || s.ID != first.ID {
		t.Fatalf("relabel by prefix: %+v, %v", s, err)
	}
	must(t, eng.DeleteSnapshot(ctx, "shop", "first"))
	if s, _ := eng.Snapshot(ctx, "shop", first.ID); s.Status != engine.SnapshotDeleted {
		t.Fatalf("delete by label left %+v", s)
	}
	if err := eng.DeleteSnapshot(ctx, "shop", "twin"); err != nil {
		t.Fatalf("twin names one snapshot once the other is relabelled: %v", err)
	}
}
