//go:build linux

package hostfs

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ChownAll under a project process that swaps a directory for a symlink to outside the tree
// (renameat2 RENAME_EXCHANGE, as fast as it can): nothing outside is ever re-owned.
func TestChownAllNeverLeavesTreeUnderSwap(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test re-owns files and must run as root (make test does)")
	}
	base := t.TempDir()
	tree, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(tree, "d"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		for _, d := range []string{filepath.Join(tree, "d"), outside} {
			if err := os.WriteFile(filepath.Join(d, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(outside, filepath.Join(tree, "l")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Go(func() {
		a, b := filepath.Join(tree, "d"), filepath.Join(tree, "l")
		for !stop.Load() {
			if unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	})
	owner := Owner{UID: 1000, GID: 1000}
	deadline := time.Now().Add(3 * time.Second)
	rounds := 0
	for ; time.Now().Before(deadline); rounds++ {
		_ = ChownAll(context.Background(), tree, owner) // a swap may make a round fail; it must never leak
	}
	stop.Store(true)
	wg.Wait()
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	leaked := 0
	for _, e := range append(entries, nil) {
		p := outside
		if e != nil {
			p = filepath.Join(outside, e.Name())
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Sys().(*syscall.Stat_t).Uid == uint32(owner.UID) {
			leaked++
		}
	}
	t.Logf("%d rounds, %d swaps", rounds, swaps.Load())
	if leaked > 0 {
		t.Fatalf("%d entries outside the tree were re-owned", leaked)
	}
}
