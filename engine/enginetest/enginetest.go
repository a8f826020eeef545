// Package enginetest holds the bodies of the engine's invariant tests that run over more than one
// set of parts: the engine's own tests run them on the embedded default (SQLite, local runtime,
// directory object store), and cmd/sailtui runs the same bodies on PostgreSQL and docker. It uses
// only the engine's Go API and interfaces, so it imports no backend; the callers wire the parts.
package enginetest

import (
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// ProjectDirs is where the engine's runtime keeps a project's tree on this machine.
type ProjectDirs func(engine.Project) string

// DirsOf is the project directories of a runtime whose storage is one host directory per
// project (local, docker), which is what the tests read behind the engine's back.
func DirsOf(rt engine.Runtime) ProjectDirs {
	return rt.(archive.StorageDirs).StorageDir
}

// NewProject creates a project with one source file, so that its tree is never empty.
func NewProject(t *testing.T, eng *engine.Engine, name string) engine.Project {
	t.Helper()
	p, err := eng.CreateProject(context.Background(), engine.CreateRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.WriteFile(context.Background(), p.Slug, "src/main.go", strings.NewReader("package main // "+name+"\n")); err != nil {
		t.Fatal(err)
	}
	return p
}

// Lockless lets every sweep take the global lock, so overlapping sweeps really overlap and only
// the per-project claims stand between them.
type Lockless struct{ engine.Store }

// TryLock always succeeds.
func (Lockless) TryLock(context.Context, string, string, time.Time, time.Duration) (bool, error) {
	return true, nil
}

// Unlock has nothing to release.
func (Lockless) Unlock(context.Context, string, string) error { return nil }

// TreeDigest describes a tree exactly: every path with its type, mode, symlink target and
// content hash. Two trees are byte-identical when their digests are equal.
func TreeDigest(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rel, e := range archivetest.Scan(t, root) {
		info := e.Info
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			out[rel] = "link " + e.Link
		case info.IsDir():
			out[rel] = fmt.Sprintf("dir %v", info.Mode().Perm())
		case info.Mode().IsRegular():
			out[rel] = fmt.Sprintf("file %v %s", info.Mode().Perm(), hex.EncodeToString(e.Sum[:8]))
		default:
			out[rel] = fmt.Sprintf("special %v", info.Mode())
		}
	}
	return out
}

// DiffDigests lists, one per line, the paths whose entries differ between two digests.
func DiffDigests(a, b map[string]string) string {
	var keys []string
	seen := map[string]bool{}
	for k := range a {
		keys, seen[k] = append(keys, k), true
	}
	for k := range b {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var d []string
	for _, k := range keys {
		if a[k] != b[k] {
			d = append(d, fmt.Sprintf("%s: %q != %q", k, a[k], b[k]))
		}
	}
	return strings.Join(d, "\n")
}
