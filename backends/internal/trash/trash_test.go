package trash

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

func mkTree(t *testing.T, dir string, files int) {
	t.Helper()
	for i := range files {
		d := filepath.Join(dir, "d"+strconv.Itoa(i%5))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"+strconv.Itoa(i)), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Throw takes a tree away at once (it is gone from its place when Throw returns) and deletes
// it in the background; Wait sees the delete through; a missing tree is nothing to do.
func TestThrowMovesAndDeletes(t *testing.T) {
	parent := t.TempDir()
	b := Open(parent, Options{})
	tree := filepath.Join(parent, "proj")
	mkTree(t, tree, 300)
	if err := os.Chmod(filepath.Join(tree, "d1"), 0o500); err != nil { // read-only dirs too
		t.Fatal(err)
	}
	if err := b.Throw(tree, "proj"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Fatalf("tree still in its place after Throw: %v", err)
	}
	if err := b.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if left, err := b.Left(); err != nil || len(left) != 0 {
		t.Fatalf("left after Wait: %v %v", left, err)
	}
	if err := b.Throw(filepath.Join(parent, "never-was"), "x"); err != nil {
		t.Fatalf("throw a missing tree: %v", err)
	}
}

// What a process that ended first left in the bin is deleted by the next Open; Left says since
// when each item waits.
func TestOpenResumesAndLeftSaysSince(t *testing.T) {
	parent := t.TempDir()
	thrown := time.Now().Add(-time.Hour).Truncate(time.Second)
	left := filepath.Join(parent, DirName, "old."+strconv.FormatInt(thrown.UnixNano(), 10))
	mkTree(t, left, 20)
	items, err := (&Bin{dir: filepath.Join(parent, DirName)}).Left()
	if err != nil || len(items) != 1 || items[0].Path != left || !items[0].Since.Equal(thrown) {
		t.Fatalf("Left: %+v %v (want %s since %s)", items, err, left, thrown)
	}
	b := Open(parent, Options{})
	if err := b.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(left); !os.IsNotExist(err) {
		t.Fatalf("leftover not deleted by the next Open: %v", err)
	}
	// Empty does it now, and returns once done.
	mkTree(t, filepath.Join(parent, DirName, "again.1"), 10)
	if err := b.Empty(context.Background()); err != nil {
		t.Fatal(err)
	}
	if items, _ := b.Left(); len(items) != 0 {
		t.Fatalf("left after Empty: %+v", items)
	}
}

// A bin whose directory is a symlink is never followed: Open does not empty what it points
// at, Empty, Left and Throw refuse with what to do, and every file behind the link stays.
func TestSymlinkedBinIsRefused(t *testing.T) {
	parent, elsewhere := t.TempDir(), t.TempDir()
	mkTree(t, filepath.Join(elsewhere, "precious.1"), 10)
	if err := os.Symlink(elsewhere, filepath.Join(parent, DirName)); err != nil {
		t.Fatal(err)
	}
	b := Open(parent, Options{})
	if err := b.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantRefusal := func(what string, err error) {
		t.Helper()
		if err == nil || !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "rm "+filepath.Join(parent, DirName)) {
			t.Fatalf("%s through a symlinked bin: %v (want a refusal saying to remove the link)", what, err)
		}
	}
	err := b.Empty(t.Context())
	wantRefusal("Empty", err)
	_, err = b.Left()
	wantRefusal("Left", err)
	tree := filepath.Join(parent, "proj")
	mkTree(t, tree, 3)
	wantRefusal("Throw", b.Throw(tree, "proj"))
	if _, err := os.Stat(filepath.Join(tree, "d0", "f0")); err != nil {
		t.Fatalf("a refused Throw lost the tree: %v", err)
	}
	for i := range 10 {
		f := filepath.Join(elsewhere, "precious.1", "d"+strconv.Itoa(i%5), "f"+strconv.Itoa(i))
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("what the link points at was deleted: %v", err)
		}
	}
}

// A read-only bin deletes nothing: what a process that ended first left stays after Open,
// Empty and Throw are refused with ErrReadOnly, and Left still lists what waits.
func TestReadOnlyBinDeletesNothing(t *testing.T) {
	parent := t.TempDir()
	left := filepath.Join(parent, DirName, "old.1")
	mkTree(t, left, 5)
	b := Open(parent, Options{ReadOnly: true})
	if err := b.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.Empty(t.Context()); !errors.Is(err, engine.ErrReadOnly) {
		t.Fatalf("Empty of a read-only bin: %v (want ErrReadOnly)", err)
	}
	tree := filepath.Join(parent, "proj")
	mkTree(t, tree, 3)
	if err := b.Throw(tree, "proj"); !errors.Is(err, engine.ErrReadOnly) {
		t.Fatalf("Throw into a read-only bin: %v (want ErrReadOnly)", err)
	}
	if _, err := os.Stat(filepath.Join(left, "d0", "f0")); err != nil {
		t.Fatalf("a read-only bin deleted what was left in it: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tree, "d0", "f0")); err != nil {
		t.Fatalf("a refused Throw lost the tree: %v", err)
	}
	if items, err := b.Left(); err != nil || len(items) != 1 || items[0].Path != left {
		t.Fatalf("Left of a read-only bin: %+v %v", items, err)
	}
}
