package engine_test

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// TestSnapshotReportsSkippedEntries: a socket in a project cannot be kept by a snapshot; the
// snapshot is made all the same, and its operation says so in the log, naming it.
func TestSnapshotReportsSkippedEntries(t *testing.T) {
	ctx := t.Context()
	var logs bytes.Buffer
	p := openTest(t, t.TempDir(), "skip", func(c *engine.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "sock"})
	must(t, err)
	dir := p.dirs()(pr)
	must(t, os.MkdirAll(filepath.Join(dir, "run"), 0o755))
	// Socket paths are limited to ~108 bytes: listen from inside the directory.
	t.Chdir(filepath.Join(dir, "run"))
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: "app.sock", Net: "unix"})
	must(t, err)
	defer l.Close()
	if _, err := p.eng.CreateSnapshot(ctx, "sock", "with a socket"); err != nil {
		t.Fatalf("snapshot of a project holding a socket: %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "snapshot left out entries") || !strings.Contains(out, "count=1") || !strings.Contains(out, "run/app.sock") {
		t.Errorf("log does not report the skipped socket:\n%s", out)
	}
}
