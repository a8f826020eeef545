//go:build unix

package logfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// A kept log, its rotated file or its directory swapped for a symbolic link is neither read
// nor written through: the writer, Open and MarkLogs refuse with what to do, and the file
// the link points at is left as it was.
func TestLinkedLogIsRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("not a log\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantRefusal := func(t *testing.T, what string, err error, link string) {
		t.Helper()
		if err == nil || !errors.Is(err, engine.ErrBadPath) || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "rm "+link) {
			t.Fatalf("%s: %v (want a refusal saying to remove %s)", what, err, link)
		}
	}
	unchanged := func(t *testing.T) {
		t.Helper()
		if b, err := os.ReadFile(outside); err != nil || string(b) != "not a log\n" {
			t.Fatalf("the file behind the link changed: %q %v", b, err)
		}
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	t.Run("current file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "app.log")
		if err := os.Symlink(outside, path); err != nil {
			t.Fatal(err)
		}
		w := NewWriter(path, 0)
		defer w.Close()
		wantRefusal(t, "write", w.WriteLines(at, [][]byte{[]byte("x")}), path)
		_, err := Open(path, 0)
		wantRefusal(t, "read", err, path)
		p := engine.Project{Slug: "p"}
		err = MarkLogs(p, []engine.Container{{Name: "app"}}, func(string) string { return path }, 0, "stopped")
		wantRefusal(t, "mark", err, path)
		unchanged(t)
	})
	t.Run("rotated file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "app.log")
		if err := os.WriteFile(path, []byte("line\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, Rotated(path)); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path, 0)
		wantRefusal(t, "read the rotated file", err, Rotated(path))
	})
	t.Run("dangling link", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "app.log")
		target := filepath.Join(t.TempDir(), "made")
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		w := NewWriter(path, 0)
		defer w.Close()
		wantRefusal(t, "write", w.WriteLines(at, [][]byte{[]byte("x")}), path)
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a write through a dangling link made its target: %v", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		realDir, dir := t.TempDir(), filepath.Join(t.TempDir(), "slug")
		if err := os.Symlink(realDir, dir); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "app.log")
		w := NewWriter(path, 0)
		defer w.Close()
		wantRefusal(t, "write", w.WriteLines(at, [][]byte{[]byte("x")}), dir)
		_, err := Open(path, 0)
		wantRefusal(t, "read", err, dir)
		if entries, _ := os.ReadDir(realDir); len(entries) != 0 {
			t.Fatalf("written through the linked directory: %v", entries)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "app.log")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := Open(path, 0); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Fatalf("read a FIFO as a log: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("opening a FIFO put in a log's place blocked")
		}
	})
}
