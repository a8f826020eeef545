// Package hostfstest holds the tests every file API over a host directory tree (hostfs.Tree,
// and the runtimes that serve a project's files from one) passes alike.
package hostfstest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// Files is the file API under test, over the tree at the root given to Resolve.
type Files interface {
	ReadFile(ctx context.Context, name string, w io.Writer) error
	WriteFile(ctx context.Context, name string, r io.Reader) error
}

// Resolve plants links in root that are absolute, loop or climb out, and checks that files
// refuses them with errors that say so (engine.ErrBadPath); that a dangling link inside is
// written through; that a bad path is refused naming the problem; and that an atomic rewrite
// keeps the file's mode and leaves no temp file. It leaves root/inside.txt a regular file.
func Resolve(t *testing.T, root string, files Files) {
	t.Helper()
	ctx := t.Context()
	for _, l := range [][2]string{
		{root + "/inside.txt", "abs-inside"}, // absolute, even though it points inside
		{"loop-b", "loop-a"},
		{"loop-a", "loop-b"},
		{"nowhere/x", "dangling"},
		{"d/../../..", "sneaky"},
	} {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "inside.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"abs-inside", "loop-a", "sneaky"} {
		if err := files.ReadFile(ctx, p, &strings.Builder{}); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("ReadFile(%q): %v, want ErrBadPath", p, err)
		}
	}
	if err := files.ReadFile(ctx, "abs-inside", &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("error for an absolute link does not say so: %v", err)
	}
	// A dangling link inside is written through: its target is created inside.
	if err := files.WriteFile(ctx, "dangling", strings.NewReader("made")); err != nil {
		t.Fatalf("write through a dangling link: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "nowhere/x")); string(got) != "made" {
		t.Errorf("dangling link target reads %q", got)
	}
	// The error names the problem.
	for p, want := range map[string]string{"../x": "..", "/etc/passwd": "absolute", "a\x00b": "NUL", "sneaky/x": "outside"} {
		err := files.WriteFile(ctx, p, strings.NewReader(""))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WriteFile(%q): %v, want it to mention %q", p, err, want)
		}
	}
	// Temp files of atomic writes are not left behind, and a mode is kept.
	if err := os.Chmod(filepath.Join(root, "inside.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := files.WriteFile(ctx, "inside.txt", strings.NewReader("y")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "inside.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after rewrite %v", fi.Mode())
	}
	if m, _ := filepath.Glob(filepath.Join(root, ".*tmp")); len(m) > 0 {
		t.Errorf("temp files left: %v", m)
	}
}
