package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// Issue 31: a create that fails half-way leaves nothing: no project in the list, no storage,
// and the name free for the next try.
func TestFailedCreateLeavesNothing(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test")
	missing := "file://" + filepath.Join(t.TempDir(), "no-such-repo")
	_, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "half",
		Containers: []engine.ContainerSpec{{Name: "web", Directory: "web", GitURL: missing}}})
	if err == nil || !strings.Contains(err.Error(), "nothing was kept") {
		t.Fatalf("create with a template that cannot be cloned: %v; want a failure that says nothing was kept", err)
	}
	ps, err := p.eng.ListProjects(ctx, engine.ProjectFilter{})
	must(t, err)
	for _, pr := range ps {
		if pr.Slug == "half" {
			t.Errorf("the failed create left %s %s in the list", pr.Slug, pr.Status)
		}
	}
	gone, err := p.store.GetProject(ctx, "half")
	must(t, err)
	if _, err := os.Stat(p.dirs()(gone)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed create left its storage %s: %v", p.dirs()(gone), err)
	}
	again, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "half"})
	if err != nil || again.Status != engine.StatusActive {
		t.Fatalf("create again under the same name: %+v, %v", again, err)
	}
}

// onlyRuntime hides every capability of a runtime but the contract (as a runtime that cannot
// import a directory).
type onlyRuntime struct{ engine.Runtime }

// A runtime that cannot import a directory refuses `create --from` before anything is made.
func TestCreateFromRefusedUpFront(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test", func(c *engine.Config) { c.Runtime = onlyRuntime{c.Runtime} })
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "index.html"), []byte("hi\n"), 0o644))
	_, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "imported", FromDir: src})
	if !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "files put") {
		t.Fatalf("create --from on a runtime that cannot import: %v; want a refusal saying what to do", err)
	}
	if pr, err := p.store.GetProject(ctx, "imported"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the refused create recorded %+v (%v)", pr, err)
	}
}
