//go:build linux

package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// TestWriteNeverLeavesRootUnderSwap races Write against a process inside the tree that keeps
// exchanging a directory with a symlink to a directory outside it (and a file with a symlink to
// a file outside), the attack a project's own code can mount during a manual snapshot. A write
// may fail because the tree changed under it, but an archive that Write returns must hold
// nothing but what was inside (DESIGN.md invariant 10).
func TestWriteNeverLeavesRootUnderSwap(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	const insideFiles, outsideFiles = 4, 300
	for _, d := range []string{filepath.Join(root, "d"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range insideFiles {
		if err := os.WriteFile(filepath.Join(root, "d", fmt.Sprintf("in-%d", i)), []byte(fmt.Sprintf("INSIDE--DATA-%d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The outside directory also holds files named like the inside ones and of the same sizes,
	// as an attacker who made the inside files would arrange: a walk that lists d before a swap
	// and opens its files after it then reads outside files under inside names, and finds
	// nothing amiss.
	for i := range outsideFiles {
		name := fmt.Sprintf("secret-%d", i)
		if i < insideFiles {
			name = fmt.Sprintf("in-%d", i)
		}
		if err := os.WriteFile(filepath.Join(outside, name), []byte(fmt.Sprintf("OUTSIDE-DATA-%d", i)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("INSIDE--DATA-f"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One relative and one absolute target: both are kept as inert links by the Sandwich
	// (AnyLinkTarget), so only following them could leak.
	if err := os.Symlink("../outside", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "in-0"), filepath.Join(root, "lf")); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	swapErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		pairs := [][2]string{
			{filepath.Join(root, "d"), filepath.Join(root, "l")},
			{filepath.Join(root, "f"), filepath.Join(root, "lf")},
		}
		// Swapping in a tight loop and at slower paces: a fast swapper wins the race between
		// a check and the next path lookup, a slower one leaves whole stretches of the walk on
		// the far side of a swap.
		paces := []time.Duration{0, 10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond}
		start := time.Now()
		for !stop.Load() {
			if pace := paces[int(time.Since(start)/(25*time.Millisecond))%len(paces)]; pace > 0 {
				time.Sleep(pace)
			}
			for _, p := range pairs {
				if err := unix.Renameat2(unix.AT_FDCWD, p[0], unix.AT_FDCWD, p[1], unix.RENAME_EXCHANGE); err != nil {
					swapErr <- fmt.Errorf("renameat2 %s %s: %w", p[0], p[1], err)
					return
				}
				swaps.Add(1)
			}
		}
	}()

	const maxRounds = 1000
	deadline := time.Now().Add(15 * time.Second)
	var rounds, ok, changed, otherErrs, leaked int
	var firstLeak string
	var firstOther error
	for rounds < maxRounds && time.Now().Before(deadline) {
		select {
		case err := <-swapErr:
			stop.Store(true)
			wg.Wait()
			t.Fatal(err)
		default:
		}
		rounds++
		opts := WriteOptions{Exclude: []string{}, AnyLinkTarget: true}
		if rounds%2 == 0 {
			opts.Progress = func(int64, int64) {}
		}
		var buf bytes.Buffer
		if _, err := Write(context.Background(), root, &buf, opts); err != nil {
			if !strings.Contains(err.Error(), "changed while being archived") {
				otherErrs++
				if firstOther == nil {
					firstOther = err
				}
				continue
			}
			changed++
			continue
		}
		ok++
		if bad := foreignEntries(t, buf.Bytes()); len(bad) > 0 {
			leaked++
			if firstLeak == "" {
				firstLeak = strings.Join(bad[:min(len(bad), 5)], "; ")
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d rounds: %d archives, %d refused as changed, %d other errors; %d swaps; %d archives with outside data",
		rounds, ok, changed, otherErrs, swaps.Load(), leaked)
	if leaked > 0 {
		t.Errorf("%d of %d archives held data from outside the root, first: %s", leaked, ok, firstLeak)
	}
	if otherErrs > 0 {
		t.Errorf("%d writes failed with an error that does not say the tree changed, first: %v", otherErrs, firstOther)
	}
	if ok == 0 {
		t.Fatalf("no round produced an archive, so nothing was checked")
	}
}

// foreignEntries decodes an archive of the swap tree and returns a description of every entry
// that is not one of the tree's own: only d and l (each a directory holding the inside files or
// a symlink), f and lf (each the inside file or a symlink) and the inside files may appear.
func foreignEntries(t *testing.T, archive []byte) []string {
	t.Helper()
	var bad []string
	archivetest.Entries(t, archive, func(h *tar.Header, data []byte) {
		if bytes.Contains(data, []byte("OUTSIDE")) {
			bad = append(bad, fmt.Sprintf("%s holds %q", h.Name, data))
			return
		}
		name := strings.TrimSuffix(h.Name, "/")
		dir, file := filepath.Split(name)
		switch {
		case h.Name == "./" && h.Typeflag == tar.TypeDir:
		case (name == "d" || name == "l") && (h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeSymlink):
		case (name == "f" || name == "lf") && (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeSymlink):
		case (dir == "d/" || dir == "l/") && strings.HasPrefix(file, "in-") && h.Typeflag == tar.TypeReg:
		default:
			bad = append(bad, fmt.Sprintf("unexpected entry %q (type %c)", h.Name, h.Typeflag))
		}
	})
	return bad
}

// TestWriteRefusesPathTooLong: the descriptor walk could go on below PATH_MAX, but extraction
// creates entries by path, so a tree that deep is refused with the limit rather than archived
// into a snapshot that cannot be restored.
func TestWriteRefusesPathTooLong(t *testing.T) {
	root := t.TempDir()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("n", 200)
	for range 4096/len(name) + 1 { // longer than PATH_MAX whatever the root
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = sub
	}
	unix.Close(fd)
	_, err = Write(context.Background(), root, io.Discard, WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "path too long to archive") || !strings.Contains(err.Error(), fmt.Sprint(maxPathLen)) {
		t.Fatalf("Write of a tree deeper than PATH_MAX: %v, want a refusal that names the limit", err)
	}
}
