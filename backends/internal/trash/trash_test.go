package trash

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
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
	b := Open(parent)
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
	b := Open(parent)
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
