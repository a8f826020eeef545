//go:build unix

package flock

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
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
