package volumestest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// WriteFile writes data at rel under root, making its directories.
func WriteFile(t testing.TB, root, rel, data string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteTree makes a project tree with what a snapshot must keep: nested and empty
// directories, executables, a read-only directory, symlinks inside and out, a non-UTF-8 name,
// a hard link, a large file, and caches that the default exclusions leave out
// (ExcludedByDefault).
func WriteTree(t testing.TB, root string) {
	t.Helper()
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	file := func(rel, data string, mode fs.FileMode) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	file("src/main.go", "package main\n", 0o644)
	file("src/deep/er/x.txt", "deep\n", 0o600)
	file("bin/run.sh", "#!/bin/sh\necho hi\n", 0o755)
	file("caf\xe9 \xff.txt", "latin-1 name\n", 0o644)
	file(".env", "A=1\n", 0o640)
	file("big.bin", strings.Repeat("0123456789abcdef", 1<<16)+"tail", 0o644)
	file(".cache/junk", "regenerable\n", 0o644)
	file("web/node_modules/.cache/j", "regenerable\n", 0o644)
	file("web/node_modules/pkg/index.js", "module.exports = 1\n", 0o644)
	file("ro/inside.txt", "read-only dir\n", 0o644)
	for _, d := range []string{"empty", "src/empty2"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"src/link.go":     "main.go",
		"bin/up":          "../src/deep",
		"venv-python":     "/usr/bin/python3",
		"src/deep/er/rel": "../../main.go",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, "src/main.go"), filepath.Join(root, "src/hard.go")); err != nil {
		t.Fatal(err)
	}
	// Directories last, so their times are what was set.
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != root {
			_ = os.Chtimes(p, mtime, mtime)
		}
		return nil
	})
}

// ChangeTree changes a WriteTree tree everywhere: edits, deletions, additions, a directory
// where a file was. Make it Writable first.
func ChangeTree(t testing.TB, root string) {
	t.Helper()
	for _, rel := range []string{"src", "big.bin", "caf\xe9 \xff.txt"} {
		if err := os.RemoveAll(filepath.Join(root, rel)); err != nil {
			t.Fatal(err)
		}
	}
	WriteFile(t, root, "bin/run.sh", "changed")
	WriteFile(t, root, "big.bin/x/y", "a directory now")
	WriteFile(t, root, "new.txt", "new")
}

// BigTree writes n files of size bytes of mixed content under root, for operations that must
// be caught in the middle.
func BigTree(t testing.TB, root string, n, size int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	for i := range n {
		b := make([]byte, size)
		// Half random, half text: compresses like source code does.
		for j := range b {
			if j%2 == 0 {
				b[j] = byte(r.IntN(256))
			} else {
				b[j] = 'a' + byte(j%26)
			}
		}
		WriteFile(t, root, fmt.Sprintf("d%02d/file-%03d.bin", i%4, i), string(b))
	}
}

// ExcludedByDefault are the cache directories of WriteTree that archives leave out.
func ExcludedByDefault(rel string) bool {
	return rel == ".cache" || rel == "web/node_modules/.cache"
}

// Writable makes every directory under root writable (and so removable).
func Writable(root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

// TreeState describes every entry under root except the root itself: type, permissions,
// mtime (seconds), size and content hash or link target. Entries for which skip is true are
// left out (with everything under them).
func TreeState(t testing.TB, root string, skip func(rel string) bool) []string {
	t.Helper()
	return TreeStateOpt(t, root, skip, true)
}

// TreeStateOpt is TreeState, with directory times left out unless dirTimes.
func TreeStateOpt(t testing.TB, root string, skip func(rel string) bool, dirTimes bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if skip != nil && skip(filepath.ToSlash(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, fmt.Sprintf("%q link %s", rel, target))
		case fi.Mode()&fs.ModeNamedPipe != 0:
			// Read, it would wait for a writer.
			out = append(out, fmt.Sprintf("%q fifo %o", rel, fi.Mode().Perm()))
		case fi.IsDir():
			if dirTimes {
				out = append(out, fmt.Sprintf("%q dir %o %d", rel, fi.Mode().Perm(), fi.ModTime().Unix()))
			} else {
				out = append(out, fmt.Sprintf("%q dir %o", rel, fi.Mode().Perm()))
			}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out = append(out, fmt.Sprintf("%q file %o %d %d %x", rel, fi.Mode().Perm(), fi.ModTime().Unix(), fi.Size(), sum[:8]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// DiffStates reports, as errors, the entries of want missing from got and those of got not
// in want.
func DiffStates(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	g := map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	w := map[string]bool{}
	for _, s := range want {
		w[s] = true
		if !g[s] {
			t.Errorf("%s: missing %s", what, s)
		}
	}
	for _, s := range got {
		if !w[s] {
			t.Errorf("%s: unexpected %s", what, s)
		}
	}
}

// TarEntry is one entry of a hand-made archive; Size is set from Data.
type TarEntry struct {
	Hdr  tar.Header
	Data string
}

// Reg is a regular file entry.
func Reg(name, data string) TarEntry { return TarEntry{Hdr: tar.Header{Name: name}, Data: data} }

// Symlink is a symlink entry.
func Symlink(name, target string) TarEntry {
	return TarEntry{Hdr: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}}
}

// HardLink is a hard link entry.
func HardLink(name, target string) TarEntry {
	return TarEntry{Hdr: tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target}}
}

// Dir is a directory entry.
func Dir(name string) TarEntry {
	return TarEntry{Hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

// MakeTar writes entries as a GNU tar stream, regular files (the default type) with mode 0644
// unless given.
func MakeTar(t testing.TB, entries []TarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, en := range entries {
		h := en.Hdr
		h.Size = int64(len(en.Data))
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		h.Format = tar.FormatGNU
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, en.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Compress is b in one zstd stream.
func Compress(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ZstdTar is the compressed tar of entries.
func ZstdTar(t testing.TB, entries []TarEntry) []byte {
	t.Helper()
	return Compress(t, MakeTar(t, entries))
}

// ZstdBomb is a tar of one file of size zero bytes, compressed: a small object that expands
// to size bytes.
func ZstdBomb(t testing.TB, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(enc)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bomb", Size: size, Mode: 0o644, Format: tar.FormatGNU}); err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zero)) {
		if _, err := tw.Write(zero[:min(left, int64(len(zero)))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
