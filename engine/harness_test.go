package engine_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/sailtui/sailtui/backends/dirstore"
	"github.com/sailtui/sailtui/backends/local"
	"github.com/sailtui/sailtui/backends/sqlite"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// The tests of this package drive the engine in-process on the embedded default (SQLite store,
// local runtime, directory object store), each trying to break one invariant of
// docs/ARCHITECTURE.md. They live beside the engine, since these are its promises; the backends
// come in only here, in the external test package, so the engine itself still imports none.

// parts is one engine over a state directory laid out as sailtui lays out the embedded default,
// with the parts behind it for the tests that look there.
type parts struct {
	eng     *engine.Engine
	store   engine.Store
	runtime *local.Runtime
	// objects is the root of the directory object store the archives go to.
	objects string
}

// openTest opens an engine on state as the process owner names; two engines on one state
// directory are two sailtui processes sharing the store and the project trees. tweaks swap or
// wrap parts of the engine config, after the defaults sailtui would use.
func openTest(t testing.TB, state, owner string, tweaks ...func(*engine.Config)) *parts {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(state, "sailtui.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rt, err := local.New(local.Config{
		ProjectsDir: filepath.Join(state, "projects"),
		RunDir:      filepath.Join(state, "run"),
		LogDir:      filepath.Join(state, "logs"),
	})
	if err != nil {
		t.Fatal(err)
	}
	objects := filepath.Join(state, "objects")
	objs, err := dirstore.New(objects)
	if err != nil {
		t.Fatal(err)
	}
	// Timeouts and concurrency are left to the engine's defaults, which are sailtui's; the key
	// prefix is sailtui's default S3_PROJECTS_PREFIX.
	cfg := engine.Config{
		Store: store, Runtime: rt, Volumes: archive.NewSandwich(objs, rt, archive.SandwichOptions{Prefix: "projects"}),
		Logger: slog.New(slog.DiscardHandler), Owner: owner,
	}
	for _, tw := range tweaks {
		tw(&cfg)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &parts{eng: eng, store: store, runtime: rt, objects: objects}
	// Registered after the store's close, so it runs before it: no test leaves a process behind.
	t.Cleanup(func() { stopEverything(t, p) })
	return p
}

// stopEverything stops the containers of every project in the store.
func stopEverything(t testing.TB, p *parts) {
	ctx := context.Background()
	ps, err := p.store.ListProjects(ctx, engine.ProjectFilter{})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	for _, pr := range ps {
		cs, _ := p.store.ListContainers(ctx, pr.ID)
		if err := p.runtime.StopProject(ctx, pr, cs); err != nil {
			t.Logf("cleanup: stop %s: %v", pr.Slug, err)
		}
	}
}

// dirs is where the local runtime keeps each project's tree.
func (p *parts) dirs() enginetest.ProjectDirs { return enginetest.DirsOf(p.runtime) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
