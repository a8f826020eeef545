package sqlite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sailtui/sailtui/engine"
)

// writeFromChild is where TestWatchWritesHelperProcess writes, when it runs as a child.
const writeFromChild = "SAILTUI_WATCH_TEST_DB"

// TestWatchWrites: another process's write is told of, a quiet store tells of nothing, a
// checkpoint that empties the WAL does not blind the watch, and the channel closes with ctx.
func TestWatchWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sailtui.db")
	s := openAt(t, path)
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	writes, err := s.WatchWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case <-writes:
			t.Fatalf("%s: a notice with nothing written", what)
		case <-time.After(300 * time.Millisecond):
		}
	}
	told := func(what string) {
		t.Helper()
		select {
		case _, ok := <-writes:
			if !ok {
				t.Fatalf("%s: the channel closed", what)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no notice within 5 s", what)
		}
	}
	drain := func() {
		for {
			select {
			case <-writes:
			case <-time.After(100 * time.Millisecond):
				return
			}
		}
	}
	// Reads write nothing a watch sees.
	if _, err := s.ListProjectsChangedSince(ctx, 0); err != nil {
		t.Fatal(err)
	}
	drain()
	quiet("a read")

	child := exec.Command(os.Args[0], "-test.run=^TestWatchWritesHelperProcess$")
	child.Env = append(os.Environ(), writeFromChild+"="+path)
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("the writing process: %v\n%s", err, out)
	}
	told("another process created a project")
	drain()
	quiet("after the other process ended")

	// A checkpoint that truncates the WAL; the next write starts it again.
	if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	drain()
	if err := s.CreateProject(ctx, testProject("after-checkpoint"), nil, nil); err != nil {
		t.Fatal(err)
	}
	told("a write after the WAL was emptied")

	cancel()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-writes:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the channel stayed open after ctx ended")
		}
	}
}

// TestWatchWritesHelperProcess is TestWatchWrites' other process: it creates one project.
func TestWatchWritesHelperProcess(t *testing.T) {
	path := os.Getenv(writeFromChild)
	if path == "" {
		t.Skip("helper process for TestWatchWrites")
	}
	s := openAt(t, path)
	defer s.Close()
	if err := s.CreateProject(t.Context(), testProject("from-child"), nil, nil); err != nil {
		t.Fatal(err)
	}
}

func testProject(slug string) engine.Project {
	now := time.Now().UTC()
	return engine.Project{ID: uuid.NewString(), Slug: slug, Name: slug, Owner: "alice",
		Status: engine.StatusActive, LastActivity: now, CreatedAt: now, UpdatedAt: now}
}
