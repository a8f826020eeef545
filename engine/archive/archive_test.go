package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	longName := strings.Repeat("long-name-", 12) + ".txt"  // > 100 bytes: GNU long name
	deepDir := strings.Repeat("deep-directory-level/", 14) // path > 256 bytes
	cases := []struct {
		name    string
		nodes   []node
		exclude []string
		// gone lists paths of nodes the archive must leave out.
		gone []string
	}{
		{
			name: "files modes and dirs",
			nodes: []node{
				{path: "README.md", kind: 'f', data: []byte("# project\n")},
				{path: "run.sh", kind: 'f', data: []byte("#!/bin/sh\necho hi\n"), mode: 0o755},
				{path: "secret.env", kind: 'f', data: []byte("TOKEN=x\n"), mode: 0o600},
				{path: "readonly.txt", kind: 'f', data: []byte("ro"), mode: 0o444},
				{path: "shared.txt", kind: 'f', data: []byte("group and world writable"), mode: 0o666},
				{path: "all.sh", kind: 'f', data: []byte("#!/bin/sh\n"), mode: 0o777},
				{path: "empty.txt", kind: 'f'},
				{path: "src", kind: 'd', mode: 0o750, mtime: defaultMtime.Add(-time.Hour)},
				{path: "src/main.go", kind: 'f', data: mixedContent(r, 5000), mtime: defaultMtime.Add(time.Minute)},
				{path: "src/pkg/util.go", kind: 'f', data: mixedContent(r, 300)},
				{path: "emptydir", kind: 'd'},
				{path: "nested/empty/dirs", kind: 'd', mode: 0o700},
				{path: "bin", kind: 'd', mode: 0o555},
				{path: "bin/tool", kind: 'f', data: []byte("\x7fELF"), mode: 0o755},
			},
		},
		{
			name: "symlinks",
			nodes: []node{
				{path: "target.txt", kind: 'f', data: []byte("t")},
				{path: "link-to-file", kind: 'l', link: "target.txt"},
				{path: "dir/sub/file", kind: 'f', data: []byte("f")},
				{path: "link-to-dir", kind: 'l', link: "dir/sub"},
				{path: "dir/sub/up", kind: 'l', link: "../../target.txt"},
				{path: "dangling", kind: 'l', link: "does/not/exist"},
				{path: "dir/dangling-up", kind: 'l', link: "../missing"},
				{path: "chain", kind: 'l', link: "link-to-file"},
				{path: "dot", kind: 'l', link: "./target.txt"},
				{path: "self-dir", kind: 'l', link: "."},
			},
		},
		{
			name: "raw names",
			nodes: []node{
				{path: "caf\xe9.txt", kind: 'f', data: []byte("latin-1 name")},
				{path: "\xff\xfe-dir/inner \x01 file", kind: 'f', data: []byte("binary names")},
				{path: "unicode-ü-名前.txt", kind: 'f', data: []byte("utf-8 name")},
				{path: "spaces and\ttabs\nnewline", kind: 'f', data: []byte("ws")},
				{path: longName, kind: 'f', data: []byte("long")},
				{path: deepDir + longName, kind: 'f', data: []byte("deep")},
				{path: "link-\xe9", kind: 'l', link: "caf\xe9.txt"},
				{path: "link-long", kind: 'l', link: deepDir + longName},
			},
		},
		{
			name: "large file",
			nodes: []node{
				{path: "big.bin", kind: 'f', data: mixedContent(r, 3*copyBufSize+12345)},
				{path: "exact.bin", kind: 'f', data: mixedContent(r, copyBufSize)},
				{path: "after", kind: 'f', data: []byte("after the big ones")},
			},
		},
		{
			name: "empty tree",
		},
		{
			name: "default excludes",
			nodes: []node{
				{path: "node_modules/react/index.js", kind: 'f', data: []byte("module.exports = {}")},
				{path: "node_modules/.cache/babel/x.json", kind: 'f', data: []byte("{}")},
				{path: "web/node_modules/.cache/y", kind: 'f', data: []byte("y")},
				{path: "web/.next/cache/webpack/z", kind: 'f', data: []byte("z")},
				{path: "web/.next/server/page.js", kind: 'f', data: []byte("page")},
				{path: "app/__pycache__/m.cpython-312.pyc", kind: 'f', data: []byte("pyc")},
				{path: "app/m.py", kind: 'f', data: []byte("print(1)")},
				{path: ".cache/pip/wheel", kind: 'f', data: []byte("w")},
				{path: "src/.cache", kind: 'f', data: []byte("a file named .cache is not a cache directory")},
			},
			gone: []string{"node_modules/.cache", "web/node_modules/.cache", "web/.next/cache", "app/__pycache__", ".cache"},
		},
		{
			name: "custom excludes",
			nodes: []node{
				{path: "app.log", kind: 'f', data: []byte("log")},
				{path: "sub/debug.log", kind: 'f', data: []byte("log")},
				{path: "build/out.js", kind: 'f', data: []byte("out")},
				{path: "sub/build/kept.js", kind: 'f', data: []byte("kept: /build/ is anchored")},
				{path: ".cache/kept", kind: 'f', data: []byte("kept: custom list replaces the defaults")},
				{path: "main.go", kind: 'f', data: []byte("package main")},
			},
			exclude: []string{"*.log", "/build/"},
			gone:    []string{"app.log", "sub/debug.log", "build"},
		},
		{
			name: "nothing excluded",
			nodes: []node{
				{path: "node_modules/.cache/x", kind: 'f', data: []byte("x")},
				{path: "__pycache__/y.pyc", kind: 'f', data: []byte("y")},
			},
			exclude: []string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			src := filepath.Join(t.TempDir(), "src")
			buildTree(t, src, tc.nodes)
			if err := os.Chtimes(src, time.Time{}, defaultMtime); err != nil {
				t.Fatal(err)
			}
			want := scanTree(t, src)
			for _, g := range tc.gone {
				for k := range want {
					if k == g || strings.HasPrefix(k, g+"/") {
						delete(want, k)
					}
				}
			}

			var arc bytes.Buffer
			var lastDone, lastTotal int64
			wst, err := Write(ctx, src, &arc, WriteOptions{Exclude: tc.exclude, Progress: func(done, total int64) {
				if done < lastDone {
					t.Errorf("progress went backwards: %d after %d", done, lastDone)
				}
				lastDone, lastTotal = done, total
			}})
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if lastDone != wst.Bytes || lastTotal != wst.Bytes {
				t.Errorf("final progress %d/%d, want %d/%d", lastDone, lastTotal, wst.Bytes, wst.Bytes)
			}
			if int(wst.Excluded) != len(tc.gone) {
				t.Errorf("Excluded = %d, want %d", wst.Excluded, len(tc.gone))
			}

			dst := filepath.Join(t.TempDir(), "dst")
			xst, err := Extract(ctx, bytes.NewReader(arc.Bytes()), dst, Limits{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			diffTrees(t, want, scanTree(t, dst))

			// Write counts the root directory's entry too.
			wst.Excluded, wst.Skipped, wst.SkippedPaths = 0, 0, nil
			xst.Dirs--
			if !reflect.DeepEqual(wst, xst) {
				t.Errorf("Write stats %+v, Extract stats %+v", wst, xst)
			}
		})
	}
}

func TestWriteDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := t.TempDir()
	var nodes []node
	for i := range 200 {
		nodes = append(nodes, node{path: filepathFor(i), kind: 'f', data: mixedContent(r, r.IntN(20000))})
	}
	buildTree(t, src, nodes)
	var a, b bytes.Buffer
	if _, err := Write(context.Background(), src, &a, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), src, &b, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of the same tree differ")
	}
}

func filepathFor(i int) string {
	return filepath.ToSlash(filepath.Join("d"+string(rune('a'+i%7)), "e"+string(rune('a'+i%3)), "f"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+".txt"))
}

func TestWriteRefusesEscapingSymlink(t *testing.T) {
	for _, link := range []string{"/etc/passwd", "../outside", "a/../../x", "sub/../.."} {
		t.Run(link, func(t *testing.T) {
			src := t.TempDir()
			buildTree(t, src, []node{{path: "ok.txt", kind: 'f'}, {path: "bad", kind: 'l', link: link}})
			_, err := Write(context.Background(), src, &bytes.Buffer{}, WriteOptions{})
			if err == nil || !strings.Contains(err.Error(), `"bad"`) {
				t.Fatalf("Write error = %v, want a refusal naming the link", err)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Write(ctx, filepath.Join(t.TempDir(), "missing"), &bytes.Buffer{}, WriteOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
	if _, err := Write(ctx, t.TempDir(), &bytes.Buffer{}, WriteOptions{Exclude: []string{"[bad"}}); err == nil {
		t.Error("bad pattern accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Write(cctx, t.TempDir(), &bytes.Buffer{}, WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// failWriter accepts n bytes and then fails, like a store that went away.
type failWriter struct{ n int }

func (w *failWriter) Write(b []byte) (int, error) {
	if len(b) > w.n {
		return 0, errors.New("sink failed")
	}
	w.n -= len(b)
	return len(b), nil
}

func TestWriteSinkFailure(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	src := t.TempDir()
	buildTree(t, src, []node{{path: "a", kind: 'f', data: mixedContent(r, 4<<20)}})
	if _, err := Write(context.Background(), src, &failWriter{n: 1000}, WriteOptions{}); err == nil {
		t.Error("Write succeeded into a failing sink")
	}
}

// TestParallelEncoderLifecycle checks the encoder's stream and that its frame buffers, which
// live outside the heap and are freed by Close, cannot be written to afterwards.
func TestParallelEncoderLifecycle(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	data := mixedContent(r, 5*frameSize+12345)
	var out bytes.Buffer
	pe, err := newParallelEncoder(&out)
	if err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		k := min(len(rest), 100_000)
		if _, err := pe.Write(rest[:k]); err != nil {
			t.Fatal(err)
		}
		rest = rest[k:]
	}
	if err := pe.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pe.Write([]byte("late")); !errors.Is(err, errClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if err := pe.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	dec, err := zstd.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	got, err := io.ReadAll(dec)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("round trip: %d bytes, %v", len(got), err)
	}

	aborted, err := newParallelEncoder(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aborted.Write(data[:frameSize+1]); err != nil {
		t.Fatal(err)
	}
	aborted.Abort()
	if _, err := aborted.Write([]byte("late")); err == nil {
		t.Error("Write after Abort succeeded")
	}
}

func TestExcludeMatching(t *testing.T) {
	m, err := compileExcludes([]string{".cache/", "node_modules/.cache", "/top/", "*.pyc", "a/*/c"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{".cache", true, true},
		{"x/y/.cache", true, true},
		{".cache", false, false},
		{"node_modules/.cache", true, true},
		{"web/node_modules/.cache", false, true},
		{"node_modules", true, false},
		{"node_modules/.cachex", true, false},
		{"top", true, true},
		{"sub/top", true, false},
		{"m.pyc", false, true},
		{"p/q/m.pyc", false, true},
		{"a/b/c", false, true},
		{"z/a/b/c", true, true},
		{"a/b/d", false, false},
	}
	for _, c := range cases {
		if got := m.excluded(c.rel, c.isDir); got != c.want {
			t.Errorf("excluded(%q, dir=%v) = %v, want %v", c.rel, c.isDir, got, c.want)
		}
	}
}

func TestExtractIntoExistingDirKeepsOthers(t *testing.T) {
	src := t.TempDir()
	buildTree(t, src, []node{{path: "new/file", kind: 'f', data: []byte("new")}})
	var arc bytes.Buffer
	if _, err := Write(context.Background(), src, &arc, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	buildTree(t, dst, []node{{path: "other", kind: 'f', data: []byte("kept")}})
	if _, err := Extract(context.Background(), &arc, dst, Limits{}); err != nil {
		t.Fatal(err)
	}
	got := scanTree(t, dst)
	if got["other"].kind != "file" || got["new/file"].kind != "file" {
		t.Errorf("tree after extract = %v", got)
	}
}
