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
	"github.com/sailtui/sailtui/engine/hostfs/hostfstest"
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

// TestResolve: links that are absolute, loop or climb out are refused with errors that say
// so; a dangling link inside is written through; atomic writes keep the mode and leave no temp
// files; a file in the way of the parent directories is ENOTDIR.
func TestResolve(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	tr := Tree{Root: root}
	hostfstest.Resolve(t, root, tr)
	for _, p := range []string{"inside.txt/x", "inside.txt/y/z"} {
		err := tr.WriteFile(ctx, p, strings.NewReader(""))
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("WriteFile(%q) under a file: %v, want ENOTDIR", p, err)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, s := range []string{"", ".", "..", "a/b", `a\b`, "a\x00b", ".hidden"} {
		if err := CheckName("name", s); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("CheckName(%q) = %v, want ErrBadInput", s, err)
		}
	}
	for _, s := range []string{"web", "my-app_2", "a.b"} {
		if err := CheckName("name", s); err != nil {
			t.Errorf("CheckName(%q) = %v", s, err)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rec.json")
	for _, c := range []string{"one", "two"} {
		if err := WriteFileAtomic(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != c {
			t.Errorf("read %q, want %q", got, c)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".*tmp")); len(m) > 0 {
		t.Errorf("temp files left: %v", m)
	}
}

func TestProjectDirExists(t *testing.T) {
	dir := t.TempDir()
	if ok, err := ProjectDirExists("p", dir); !ok || err != nil {
		t.Errorf("existing dir: %v, %v", ok, err)
	}
	if ok, err := ProjectDirExists("p", filepath.Join(dir, "gone")); ok || err != nil {
		t.Errorf("missing dir: %v, %v", ok, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := ProjectDirExists("p", file); ok || err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file in its place: %v, %v", ok, err)
	}
}
