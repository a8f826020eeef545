package dirstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/objectstoretest"
)

func TestContract(t *testing.T) {
	objectstoretest.Run(t, func(t *testing.T) engine.ObjectStore {
		s, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestKeysStayInside(t *testing.T) {
	root := t.TempDir()
	s, err := New(filepath.Join(root, "store"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, key := range []string{"", "/abs", "a//b", "a/", "../x", "a/../../x", "./a", "a/.", "a\x00b", `a\..\b`, "a/.dirstore-tmp-1"} {
		if _, err := s.Put(ctx, key, strings.NewReader("x")); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Put(%q) error = %v, want ErrBadPath", key, err)
		}
		if _, err := s.Head(ctx, key); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Head(%q) error = %v, want ErrBadPath", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Delete(%q) error = %v, want ErrBadPath", key, err)
		}
	}
	for _, prefix := range []string{"/", "../", "a/../../"} {
		if _, err := s.List(ctx, prefix); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("List(%q) error = %v, want ErrBadPath", prefix, err)
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("something was written next to the store: %v", entries)
	}
}

func TestDeletePrunesEmptyDirs(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Put(ctx, "projects/u/p/s1.tar.zst", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "projects/v/q/s2.tar.zst", strings.NewReader("y")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "projects/u/p/s1.tar.zst"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "projects", "u")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty directories left after Delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "projects", "v", "q", "s2.tar.zst")); err != nil {
		t.Errorf("neighbour removed: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("root removed: %v", err)
	}
	if got := s.Describe(); got != "dir "+root {
		t.Errorf("Describe() = %q", got)
	}
}

func TestNewRemovesStaleTempFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "projects", "u")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(dir, tmpPrefix+"1"), filepath.Join(dir, tmpPrefix+"2")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTempAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := New(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("temporary file of a Put that may still run removed: %v", err)
	}
}

func TestListSkipsTempFiles(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "p", tmpPrefix+"123"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	infos, err := s.List(context.Background(), "")
	if err != nil || len(infos) != 0 {
		t.Errorf("List = %v, %v; want nothing", infos, err)
	}
}
