package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/internal/trash"
	"github.com/sailtui/sailtui/engine"
)

// DestroyProject moves the tree out of its place at once (a rename) and deletes it in the
// background; WaitReaped sees the delete through. A tree left in the trash by a process that
// ended first is deleted by the next Runtime of the same directories.
func TestDestroyMovesTreeToTrash(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	ctx := context.Background()
	p := engine.Project{ID: "p-trash", Slug: "trashed"}
	if err := r.EnsureProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := r.WriteFile(ctx, p, filepath.Join("d", strings.Repeat("x", i%7+1), "f"+string(rune('a'+i%26))), strings.NewReader("data")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.DestroyProject(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.ProjectExists(ctx, p); err != nil || ok {
		t.Fatalf("storage still there after destroy: %v %v", ok, err)
	}
	if err := r.WaitReaped(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := r.TrashLeft(); err != nil || len(left) != 0 {
		t.Fatalf("trash after WaitReaped: %v %v", left, err)
	}

	// A killed process's leftover: the next Runtime deletes it.
	left := filepath.Join(cfg.ProjectsDir, trash.DirName, "old.123")
	if err := os.MkdirAll(filepath.Join(left, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(left, "a"), 0o500); err != nil { // read-only dirs too
		t.Fatal(err)
	}
	r2 := newTestRuntime(t, cfg)
	if err := r2.WaitReaped(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("leftover in the trash not deleted by the next runtime: %v", err)
	}
	// The trash is no project: the doctor's inventory does not list it.
	envs, err := r2.Environments(ctx)
	if err != nil || len(envs) != 0 {
		t.Fatalf("environments: %+v %v", envs, err)
	}
}
