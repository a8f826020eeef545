package archive

import (
	"archive/tar"
	"bytes"
	"encoding/hex"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// node describes one entry of a test tree.
type node struct {
	path  string // slash-separated, relative
	kind  byte   // 'f' file, 'd' dir, 'l' symlink
	data  []byte
	link  string
	mode  fs.FileMode // permission bits; 0 means 0644 (files) or 0755 (dirs)
	mtime time.Time   // zero means a fixed default
}

var defaultMtime = time.Date(2024, 5, 17, 10, 30, 0, 0, time.UTC)

// buildTree creates nodes under root. Directories get their mode and mtime last, as extraction
// does, so they are not disturbed by their children.
func buildTree(t testing.TB, root string, nodes []node) {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	var dirs []node
	for _, n := range nodes {
		p := filepath.Join(root, filepath.FromSlash(n.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch n.kind {
		case 'd':
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, n)
		case 'f':
			mode := n.mode
			if mode == 0 {
				mode = 0o644
			}
			if err := os.WriteFile(p, n.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, time.Time{}, mtimeOf(n)); err != nil {
				t.Fatal(err)
			}
		case 'l':
			if err := os.Symlink(n.link, p); err != nil {
				t.Fatal(err)
			}
			if err := lchtimes(p, mtimeOf(n), true); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("bad node kind %q", n.kind)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		n := dirs[i]
		p := filepath.Join(root, filepath.FromSlash(n.path))
		mode := n.mode
		if mode == 0 {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, time.Time{}, mtimeOf(n)); err != nil {
			t.Fatal(err)
		}
	}
}

func mtimeOf(n node) time.Time {
	if n.mtime.IsZero() {
		return defaultMtime
	}
	return n.mtime
}

// entryInfo is what a round trip must preserve of one entry.
type entryInfo struct {
	kind  string
	perm  fs.FileMode
	mtime int64 // seconds: the archive keeps whole seconds
	sum   string
	link  string
}

// scanTree records every entry below root (root itself as ".").
func scanTree(t testing.TB, root string) map[string]entryInfo {
	t.Helper()
	out := map[string]entryInfo{}
	for rel, se := range archivetest.Scan(t, root) {
		fi := se.Info
		e := entryInfo{perm: fi.Mode().Perm(), mtime: fi.ModTime().Unix()}
		switch {
		case fi.IsDir():
			e.kind = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			e.kind = "symlink"
			e.perm = 0 // symlink permissions mean nothing on Linux
			e.link = se.Link
		case fi.Mode().IsRegular():
			e.kind = "file"
			e.sum = hex.EncodeToString(se.Sum[:])
		default:
			e.kind = "special"
		}
		out[rel] = e
	}
	return out
}

func diffTrees(t testing.TB, want, got map[string]entryInfo) {
	t.Helper()
	var names []string
	for k := range want {
		names = append(names, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		w, wok := want[k]
		g, gok := got[k]
		switch {
		case !gok:
			t.Errorf("%q: missing after round trip (%+v)", k, w)
		case !wok:
			t.Errorf("%q: unexpected after round trip (%+v)", k, g)
		case w != g:
			t.Errorf("%q: got %+v, want %+v", k, g, w)
		}
	}
}

// mixedContent is deterministic data that compresses about like source code.
func mixedContent(r *rand.Rand, size int) []byte {
	words := []string{"func", "return", "if", "err", "nil", "{", "}", "(", ")", "const", "var", "import",
		"package", "string", "int", "for", "range", ":=", "=", "\n", "\t", "//", "x", "y", "value", "self", "def", "class"}
	var b bytes.Buffer
	b.Grow(size)
	for b.Len() < size {
		if r.IntN(50) == 0 {
			chunk := make([]byte, 64+r.IntN(512))
			for i := range chunk {
				chunk[i] = byte(r.Uint32())
			}
			b.Write(chunk)
			continue
		}
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.Bytes()[:size]
}

// tarEntry is one entry of a hand-made (possibly hostile) archive.
type tarEntry struct {
	hdr  tar.Header
	data []byte
}

// makeTar builds an uncompressed tar; the tests use it to say things Write never would.
func makeTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.data))
		}
		if h.ModTime.IsZero() {
			h.ModTime = defaultMtime
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("tar header %q: %v", h.Name, err)
		}
		if len(e.data) > 0 {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatalf("tar data %q: %v", h.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var testEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))

func compress(b []byte) []byte {
	return testEncoder.EncodeAll(b, nil)
}

// outsideSnapshot lists everything under base except target, with contents, so a test can
// prove an extraction wrote nothing outside its target.
func outsideSnapshot(t testing.TB, base, target string) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == target {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		sb.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sb.WriteString(" " + string(b))
		}
		sb.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// sandbox makes base/outside (with a sentinel file) and returns base and base/target.
func sandbox(t testing.TB) (base, target string) {
	t.Helper()
	base = t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "outside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "outside", "sentinel"), []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	return base, filepath.Join(base, "target")
}
