package main

import (
	"path/filepath"
	"testing"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// Invariant 10 (snapshots are point in time) in docker mode: docker pause instead of SIGSTOP,
// the tree in a host directory. The engine's own test runs the same body on the local runtime.
func TestDockerSnapshotPointInTime(t *testing.T) {
	t.Parallel()
	dcli := dockertest.Client(t)
	img := dockertest.Image(t, dcli)
	tok := dockertest.Token(t, dcli)
	state := t.TempDir()
	de := openDockerEngine(t, state, img, "sailtui-"+tok, nil)
	slug := "busy-" + randSuffix(t)
	t.Cleanup(func() { dockertest.RemoveLabelled(t, dcli, "sailtui.project="+slug) })
	dirs := enginetest.DirsOf(de.runtime)
	enginetest.SnapshotsPointInTime(t, de.eng, dirs, filepath.Join(state, "objects"), enginetest.PointInTimeProject(t, de.eng, dirs, slug), 4, 1)
}
