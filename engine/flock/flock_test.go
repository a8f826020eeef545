//go:build unix

package flock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A held lock makes the next Lock wait until it is released, or until its ctx ends; without
// create a missing lock file is refused, not made.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if _, err := Lock(t.Context(), path, false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lock of a missing file without create: %v, want ErrNotExist", err)
	}
	unlock, err := Lock(t.Context(), path, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock: %v, want the ctx's deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := Lock(t.Context(), path, false)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock returned (%v) while the lock was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Lock after the release: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lock still waits after the release")
	}
}

// A lock file that is a symbolic link is refused, and a dangling one's target is not made.
func TestLockRefusesLink(t *testing.T) {
	dir := t.TempDir()
	path, target := filepath.Join(dir, "x.lock"), filepath.Join(dir, "elsewhere")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(t.Context(), path, true); err == nil || !strings.Contains(err.Error(), "rm "+path) {
		t.Fatalf("Lock through a link: %v, want a refusal saying to remove it", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lock through a dangling link made its target: %v", err)
	}
}
