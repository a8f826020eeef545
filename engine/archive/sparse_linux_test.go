package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// piece is data written at off into a sparse test file.
type piece struct {
	off  int64
	data []byte
}

// makeSparse makes path a file of length size holding pieces, holes everywhere else.
func makeSparse(t testing.TB, path string, size int64, pieces []piece) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, p := range pieces {
		if _, err := f.WriteAt(p.data, p.off); err != nil {
			t.Fatal(err)
		}
	}
}

// allocated is the disk space path takes (st_blocks * 512).
func allocated(t testing.TB, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// checkSparse checks that path is size long, holds every piece, and reads zeros everywhere
// else: all of it when small, else around each piece and in the middle of each gap.
func checkSparse(t testing.TB, path string, size int64, pieces []piece) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, _ := f.Stat(); fi.Size() != size {
		t.Fatalf("%s: length %d, want %d", path, fi.Size(), size)
	}
	want := func(off, n int64) []byte {
		b := make([]byte, n)
		for _, p := range pieces {
			for i, c := range p.data {
				if at := p.off + int64(i) - off; at >= 0 && at < n {
					b[at] = c
				}
			}
		}
		return b
	}
	check := func(off, n int64) {
		off, n = max(off, 0), min(n, size-max(off, 0))
		if n <= 0 {
			return
		}
		got := make([]byte, n)
		if _, err := f.ReadAt(got, off); err != nil {
			t.Fatalf("%s: read %d at %d: %v", path, n, off, err)
		}
		if !bytes.Equal(got, want(off, n)) {
			t.Errorf("%s: bytes %d..%d differ from the original", path, off, off+n)
		}
	}
	if size <= 8<<20 {
		check(0, size)
		return
	}
	prev := int64(0)
	for _, p := range pieces {
		check((prev+p.off)/2-4096, 8192) // the middle of the gap before
		check(p.off-8192, int64(len(p.data))+16384)
		prev = p.off + int64(len(p.data))
	}
	check((prev+size)/2, 8192)
	check(size-8192, 8192)
}

func filler(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i%251) + 1
	}
	return b
}

// TestSparseFileRoundTrip: a multi-GiB sparse file takes the room of its data in the archive
// and on disk after a restore, and reads back the same, holes as zeros.
func TestSparseFileRoundTrip(t *testing.T) {
	const size = 6 << 30
	src := filepath.Join(t.TempDir(), "src")
	buildTree(t, src, []node{{path: "small.txt", kind: 'f', data: []byte("hello")}})
	pieces := []piece{
		{0, filler(4096, 1)},
		{1<<30 + 123, filler(10000, 2)}, // not aligned
		{3 << 30, filler(1<<20, 3)},
		{size - 10, filler(10, 4)}, // the last bytes
	}
	img := filepath.Join(src, "disk.img")
	makeSparse(t, img, size, pieces)
	var arc bytes.Buffer
	wst, err := Write(context.Background(), src, &arc, WriteOptions{})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if arc.Len() > 2<<20 {
		t.Errorf("archive of a %d-byte sparse file with ~1 MiB of data is %d bytes", size, arc.Len())
	}
	if wst.Sparse != 1 || wst.Files != 2 || wst.Bytes > 2<<20 {
		t.Errorf("Write stats %+v: want 2 files, 1 sparse, the data's bytes only", wst)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	// The recorded payload bounds the restore, as a snapshot's UnpackedBytes does.
	xst, err := Extract(context.Background(), bytes.NewReader(arc.Bytes()), dst, Limits{MaxBytes: wst.Bytes})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	out := filepath.Join(dst, "disk.img")
	checkSparse(t, out, size, pieces)
	if a := allocated(t, out); a > 4<<20 {
		t.Errorf("restored sparse file takes %d bytes on disk, want about its data (~1 MiB)", a)
	}
	if xst.Sparse != 1 || xst.Bytes > wst.Bytes {
		t.Errorf("Extract stats %+v: want 1 sparse file, at most the %d bytes recorded written", xst, wst.Bytes)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "small.txt")); string(b) != "hello" {
		t.Errorf("small.txt = %q", b)
	}
}

// TestSparseEdges: holes at either end or everywhere, data at both ends, a map past
// maxFragments; every case reads back the same and stays sparse, and GNU tar reads the
// archive the same.
func TestSparseEdges(t *testing.T) {
	for _, tool := range []string{"sh", "tar", "zstd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found on PATH (Debian package %q): %v", tool, tool, err)
		}
	}
	const mb = 1 << 20
	cases := []struct {
		name   string
		size   int64
		pieces []piece
		frags  int // maxFragments for the case, 0 for the default
	}{
		{name: "all hole", size: 4 * mb},
		{name: "ends in a hole", size: 4 * mb, pieces: []piece{{0, filler(5000, 1)}}},
		{name: "starts with a hole", size: 4 * mb, pieces: []piece{{4*mb - 4096, filler(4096, 2)}}},
		{name: "data at both ends", size: 4 * mb, pieces: []piece{{0, filler(4096, 3)}, {4*mb - 1, []byte{9}}}},
		{name: "zeros written in data", size: 4 * mb, pieces: []piece{{mb, make([]byte, 256<<10)}, {2 * mb, filler(100, 4)}}},
		{name: "many fragments", size: 16 * mb, frags: 3, pieces: []piece{
			{0, filler(10, 5)}, {2 * mb, filler(10, 6)}, {4 * mb, filler(10, 7)}, {8 * mb, filler(10, 8)}, {16*mb - 5, filler(5, 9)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.frags > 0 {
				old := maxFragments
				maxFragments = tc.frags
				t.Cleanup(func() { maxFragments = old })
			}
			work := t.TempDir()
			src := filepath.Join(work, "src")
			if err := os.Mkdir(src, 0o755); err != nil {
				t.Fatal(err)
			}
			makeSparse(t, filepath.Join(src, "f"), tc.size, tc.pieces)
			srcAlloc := allocated(t, filepath.Join(src, "f"))
			ours := filepath.Join(work, "a.tar.zst")
			f, err := os.Create(ours)
			if err != nil {
				t.Fatal(err)
			}
			wst, err := Write(context.Background(), src, f, WriteOptions{})
			f.Close()
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if wst.Sparse != 1 {
				t.Errorf("Write stats %+v: want the file kept sparse", wst)
			}
			arc, err := os.ReadFile(ours)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(work, "dst")
			if _, err := Extract(context.Background(), bytes.NewReader(arc), dst, Limits{MaxBytes: max(wst.Bytes, 1)}); err != nil {
				t.Fatalf("Extract: %v", err)
			}
			checkSparse(t, filepath.Join(dst, "f"), tc.size, tc.pieces)
			if a := allocated(t, filepath.Join(dst, "f")); a > srcAlloc+8192 {
				t.Errorf("restored file takes %d bytes on disk, the original %d", a, srcAlloc)
			}
			byTar := filepath.Join(work, "by-tar")
			if err := os.Mkdir(byTar, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := archivetest.Shell(work, fmt.Sprintf("zstd -d -q -c %q | tar -xpf - -C %q", ours, byTar)); err != nil {
				t.Fatal(err)
			}
			checkSparse(t, filepath.Join(byTar, "f"), tc.size, tc.pieces)
		})
	}
}

// TestSparseLimits: what a sparse file writes counts against MaxBytes, its holes do not, and
// its length is bounded by MaxSparseSize, on both sides.
func TestSparseLimits(t *testing.T) {
	src := t.TempDir()
	makeSparse(t, filepath.Join(src, "f"), 64<<20, []piece{{0, filler(3*4096, 1)}, {32 << 20, filler(4096, 2)}})
	var arc bytes.Buffer
	wst, err := Write(context.Background(), src, &arc, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wst.Bytes != 4*4096 {
		t.Errorf("Write counted %d bytes of data, want %d", wst.Bytes, 4*4096)
	}
	for _, tc := range []struct {
		name string
		lim  Limits
		want string
	}{
		{"data over MaxBytes", Limits{MaxBytes: 3 * 4096}, "expands past the limit"},
		{"length over MaxSparseSize", Limits{MaxSparseSize: 64<<20 - 1}, "sparse file of length"},
	} {
		_, err := Extract(context.Background(), bytes.NewReader(arc.Bytes()), filepath.Join(t.TempDir(), "x"), tc.lim)
		if !errors.Is(err, engine.ErrBadInput) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s: Extract = %v, want ErrBadInput saying %q", tc.name, err, tc.want)
		}
	}
	_, err = Write(context.Background(), src, &bytes.Buffer{}, WriteOptions{MaxSparseSize: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "truncate or remove it") {
		t.Errorf("Write of a sparse file over MaxSparseSize: %v, want a refusal saying what to do", err)
	}
}

// TestHardLinksRoundTrip: names of one file stay one file.
func TestHardLinksRoundTrip(t *testing.T) {
	src := t.TempDir()
	buildTree(t, src, []node{{path: "a", kind: 'f', data: []byte("shared")}, {path: "d/keep", kind: 'f', data: []byte("k")}})
	for _, n := range []string{"d/b", "z"} {
		if err := os.Link(filepath.Join(src, "a"), filepath.Join(src, n)); err != nil {
			t.Fatal(err)
		}
	}
	var arc bytes.Buffer
	wst, err := Write(context.Background(), src, &arc, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wst.HardLinks != 2 || wst.Files != 2 {
		t.Errorf("Write stats %+v: want 2 files and 2 hard links", wst)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	xst, err := Extract(context.Background(), &arc, dst, Limits{})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	var first syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dst, "a"), &first); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"d/b", "z"} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dst, n), &st); err != nil || st.Ino != first.Ino {
			t.Errorf("%s: not a hard link to a after the restore (%v)", n, err)
		}
	}
	if first.Nlink != 3 || xst.HardLinks != 2 {
		t.Errorf("a has %d links, stats %+v; want 3 and 2 hard links", first.Nlink, xst)
	}
}

// TestWriteLongRootPrefix: the path limit is counted below the root, so a project whose
// directory has a long path archives and restores a tree that is within it.
func TestWriteLongRootPrefix(t *testing.T) {
	root := t.TempDir()
	for range 16 { // ~3200 bytes of prefix
		root = filepath.Join(root, strings.Repeat("p", 200))
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deep := strings.Repeat("d", 200) + "/" + strings.Repeat("e", 200) + "/" + strings.Repeat("f", 200) + "/" + strings.Repeat("g", 200) + "/" + strings.Repeat("h", 200)
	if err := r.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	rel := deep + "/file"
	if err := r.WriteFile(rel, []byte("deep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(root)+1+len(rel) <= maxPathLen {
		t.Fatalf("test tree too shallow: %d bytes with the root", len(root)+1+len(rel))
	}
	var arc bytes.Buffer
	if _, err := Write(context.Background(), root, &arc, WriteOptions{}); err != nil {
		t.Fatalf("Write of a tree within the limit below a long root: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if _, err := Extract(context.Background(), &arc, dst, Limits{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, rel)); err != nil || string(b) != "deep" {
		t.Errorf("restored %s = %q, %v", rel, b, err)
	}
}
