package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// withMaxOpenDirs lowers the directory cache for one test, so that it evicts.
func withMaxOpenDirs(t *testing.T, n int) {
	t.Helper()
	old := maxOpenDirs
	maxOpenDirs = n
	t.Cleanup(func() { maxOpenDirs = old })
}

// TestExtractRevisitsDirectories extracts an archive that goes back to directories it left
// long before (their descriptors evicted from the cache, or not), nests deeper than the cache
// holds, names a directory only after its files, with a mode that would block them, and
// names one twice: every file lands where it belongs, every directory ends with its mode and
// time.
func TestExtractRevisitsDirectories(t *testing.T) {
	deep := strings.Repeat("d/", 150) + "leaf"
	dirTime := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	entries := []tarEntry{
		reg("a/one", []byte("a1")),
		reg("b/one", []byte("b1")),
		reg(deep, []byte("deep")),
		reg("c/x/one", []byte("c1")),
		reg("a/two", []byte("a2")),
		reg("ro/sub/file", []byte("below a read-only dir")),
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "ro/sub/", Mode: 0o555, ModTime: dirTime}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "ro/", Mode: 0o500, ModTime: dirTime}},
		reg("b/two", []byte("b2")),
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "a/", Mode: 0o750, ModTime: dirTime}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "a/", Mode: 0o750, ModTime: dirTime}},
		symlink("c/x/link", "one"),
		reg(strings.Repeat("d/", 75)+"mid", []byte("mid")),
	}
	for _, cache := range []int{2, 3, 128} {
		t.Run(fmt.Sprintf("cache %d", cache), func(t *testing.T) {
			withMaxOpenDirs(t, cache)
			target := filepath.Join(t.TempDir(), "t")
			st, err := Extract(context.Background(), bytes.NewReader(compress(makeTar(t, entries))), target, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = RemoveTree(target) })
			if st.Files != 8 || st.Symlinks != 1 {
				t.Errorf("stats = %+v, want 8 files and a symlink", st)
			}
			for name, want := range map[string]string{
				"a/one": "a1", "a/two": "a2", "b/one": "b1", "b/two": "b2", "c/x/one": "c1",
				deep: "deep", strings.Repeat("d/", 75) + "mid": "mid", "ro/sub/file": "below a read-only dir",
			} {
				got, err := os.ReadFile(filepath.Join(target, filepath.FromSlash(name)))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q, %v; want %q", name, got, err, want)
				}
			}
			for name, mode := range map[string]fs.FileMode{"a": 0o750, "ro": 0o500, "ro/sub": 0o555} {
				fi, err := os.Lstat(filepath.Join(target, name))
				if err != nil {
					t.Fatal(err)
				}
				if !fi.IsDir() || fi.Mode().Perm() != mode || !fi.ModTime().Equal(dirTime) {
					t.Errorf("%s: %v %v, want a directory %v %v", name, fi.Mode(), fi.ModTime(), mode, dirTime)
				}
			}
			if link, err := os.Readlink(filepath.Join(target, "c", "x", "link")); err != nil || link != "one" {
				t.Errorf("c/x/link -> %q, %v", link, err)
			}
		})
	}
}
