package docker

import (
	"os"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
)

// A torn-down host directory leaves its place in one rename (the project is hibernated at
// once) and is deleted in the background, beside the project directories and never listed as
// one of them.
func TestDestroyMovesHostDirToTrash(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	r := newTestRuntime(t, testConfig(t, cli))
	ctx := t.Context()
	p := engine.Project{ID: "p-trash", Slug: "trashed", Owner: "alice@example.com"}
	if err := r.EnsureProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := r.WriteFile(ctx, p, "src/"+strings.Repeat("x", i%9+1)+"/f", strings.NewReader("data")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.DestroyProject(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(r.hostDir(p)); !os.IsNotExist(err) {
		t.Fatalf("host directory still there after destroy: %v", err)
	}
	if envs, err := r.Environments(ctx); err != nil || len(envs) != 0 {
		t.Fatalf("environments after destroy: %+v %v", envs, err)
	}
	if err := r.WaitReaped(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := r.TrashLeft(); err != nil || len(left) != 0 {
		t.Fatalf("trash after WaitReaped: %+v %v", left, err)
	}
}
