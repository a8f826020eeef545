//go:build unix

package hostfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

func ownerOf(t *testing.T, p string) Owner {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return Owner{UID: int(st.Uid), GID: int(st.Gid)}
}

// TestOwner: what a Tree creates goes to its Owner (when this process may give files away),
// a replaced file keeps its owner, and ChownAll fixes a tree without following links out.
func TestOwner(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	me := Owner{UID: os.Geteuid(), GID: os.Getegid()}
	other := Owner{UID: 4242, GID: 4343}
	if me.UID != 0 {
		other = me // only root gives files away; the rest of the checks still hold
	}
	tr := Tree{Root: root, Owner: &other}
	if err := tr.WriteFile(ctx, "a/b/c.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "a/b", "a/b/c.txt"} {
		if got := ownerOf(t, filepath.Join(root, p)); got != other {
			t.Errorf("%s owned by %+v, want %+v", p, got, other)
		}
	}
	// A file of someone else keeps its owner when replaced.
	if err := os.WriteFile(filepath.Join(root, "mine.txt"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteFile(ctx, "mine.txt", strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	if got := ownerOf(t, filepath.Join(root, "mine.txt")); got != me {
		t.Errorf("replaced file owned by %+v, want it kept at %+v", got, me)
	}
	if fi, _ := os.Stat(filepath.Join(root, "mine.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want 0600 kept", fi.Mode().Perm())
	}

	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := ChownAll(ctx, root, other); err != nil {
		t.Fatalf("ChownAll: %v", err)
	}
	if ok, err := OwnedBy(root, other); err != nil || !ok {
		t.Errorf("OwnedBy after ChownAll = %v, %v", ok, err)
	}
	if got := ownerOf(t, outside); got != me {
		t.Errorf("ChownAll followed a link out: %s owned by %+v", outside, got)
	}
}

func TestConfinement(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	tr := Tree{Root: root}
	if err := os.Symlink("/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../x", "/etc/passwd", "etc/passwd", "a\x00b", "a/../b"} {
		if err := tr.ReadFile(ctx, p, &strings.Builder{}); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("ReadFile(%q) = %v, want ErrBadPath", p, err)
		}
	}
	if _, err := tr.Dir("nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Dir of a missing directory: %v", err)
	}
	if _, err := (Tree{Root: filepath.Join(root, "gone")}).ListFiles(ctx, ""); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("ListFiles without a root: %v", err)
	}
}
