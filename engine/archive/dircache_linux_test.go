package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// TestExtractDirSwappedForSymlink swaps a directory the extraction has already created for a
// symlink out of the target while the extraction runs (another process in the tree, say), and
// then sends the archive's next files for that directory: they must not land outside, whether
// the directory's descriptor is still cached (the files go to the directory that was opened,
// now under its new name inside the target) or was evicted (opening the name again refuses
// the symlink).
func TestExtractDirSwappedForSymlink(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cache int
		// wantErr is nil when the files are written to the moved directory.
		wantErr error
	}{
		{name: "cached", cache: 128},
		{name: "evicted", cache: 1, wantErr: engine.ErrBadPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withMaxOpenDirs(t, tc.cache)
			base, target := sandbox(t)
			before := outsideSnapshot(t, base, target)
			// The first part ends with a directory, which the reading goroutine makes itself:
			// once it is there, the files before it have been handed on. "a" is made for its
			// file, not named itself: a directory entry would have its mode set at the end,
			// through the name, which the symlink there now refuses.
			first := makeTar(t, []tarEntry{reg("a/one", []byte("1")), dir("b/"), dir("b/c/"), dir("marker/")})
			first = first[:len(first)-1024] // without the end-of-archive marker
			rest := makeTar(t, []tarEntry{reg("b/c/x", []byte("x")), reg("a/two", []byte("2")), dir("a/sub/"), reg("a/sub/three", []byte("3"))})
			pr, pw := io.Pipe()
			type result struct {
				st  Stats
				err error
			}
			done := make(chan result, 1)
			go func() {
				st, err := Extract(context.Background(), pr, target, Limits{})
				done <- result{st, err}
				_ = pr.CloseWithError(errors.New("extraction ended"))
			}()
			if _, err := pw.Write(compress(first)); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(target, "marker")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the first part of the archive was not extracted")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := os.Rename(filepath.Join(target, "a"), filepath.Join(target, "moved")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(target, "a")); err != nil {
				t.Fatal(err)
			}
			_, _ = pw.Write(compress(rest))
			_ = pw.Close()
			res := <-done
			if after := outsideSnapshot(t, base, target); after != before {
				t.Fatalf("something changed outside the target:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if tc.wantErr != nil {
				if !errors.Is(res.err, tc.wantErr) {
					t.Fatalf("Extract error = %v, want %v", res.err, tc.wantErr)
				}
				return
			}
			if res.err != nil {
				t.Fatalf("Extract: %v", res.err)
			}
			for _, name := range []string{"moved/one", "moved/two", "moved/sub/three", "b/c/x"} {
				if _, err := os.Stat(filepath.Join(target, name)); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}

// TestExtractRefusesSymlinkDirOnTheWay puts a symlink where the archive's next directory goes,
// between two parts of the stream: opening it is refused, never followed.
func TestExtractRefusesSymlinkDirOnTheWay(t *testing.T) {
	base, target := sandbox(t)
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(target, "late")); err != nil {
		t.Fatal(err)
	}
	before := outsideSnapshot(t, base, target)
	arc := compress(makeTar(t, []tarEntry{reg("late/deeper/evil", []byte("x"))}))
	_, err := Extract(context.Background(), bytes.NewReader(arc), target, Limits{})
	if !errors.Is(err, engine.ErrBadPath) {
		t.Fatalf("Extract error = %v, want ErrBadPath", err)
	}
	if after := outsideSnapshot(t, base, target); after != before {
		t.Fatalf("something changed outside the target:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
