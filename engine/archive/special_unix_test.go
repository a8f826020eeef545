//go:build unix

package archive

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

func TestWriteKeepsFifosSkipsSockets(t *testing.T) {
	src := t.TempDir()
	buildTree(t, src, []node{{path: "keep.txt", kind: 'f', data: []byte("k")}})
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Socket paths are limited to ~108 bytes, so listen from inside the directory.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(src, "s.sock"), Net: "unix"})
	if err != nil {
		t.Skipf("cannot make a unix socket here: %v", err)
	}
	defer l.Close()
	var arc bytes.Buffer
	st, err := Write(context.Background(), src, &arc, WriteOptions{})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	// The socket cannot be kept, and is named; the fifo is kept as a fifo.
	if st.Skipped != 1 || st.Files != 1 || st.Fifos != 1 || !slices.Equal(st.SkippedPaths, []string{"s.sock"}) {
		t.Errorf("stats = %+v, want 1 file, 1 fifo and 1 skipped (s.sock)", st)
	}
	dst := t.TempDir()
	xst, err := Extract(context.Background(), &arc, dst, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := scanTree(t, dst)
	if len(got) != 3 || got["keep.txt"].kind != "file" || xst.Fifos != 1 {
		t.Errorf("extracted %v (stats %+v)", got, xst)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 || fi.Mode().Perm() != 0o644 {
		t.Errorf("fifo restored as %v, %v; want a named pipe, mode 644", fi, err)
	}
}

// TestInteropWithTarAndZstd checks the format against the reference tools both ways: our
// archives (several zstd frames, GNU tar with raw names) unpack with `zstd -d | tar -x`, and
// theirs extract with Extract.
func TestInteropWithTarAndZstd(t *testing.T) {
	for _, tool := range []string{"sh", "tar", "zstd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found on PATH (Debian package %q): %v", tool, tool, err)
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	src := filepath.Join(t.TempDir(), "src")
	buildTree(t, src, []node{
		{path: "big.txt", kind: 'f', data: mixedContent(r, 3*frameSize+77)}, // several frames
		{path: "caf\xe9/x.sh", kind: 'f', data: []byte("#!/bin/sh\n"), mode: 0o755},
		{path: strings.Repeat("n", 150), kind: 'f', data: []byte("long name")},
		{path: "empty", kind: 'd'},
		{path: "link", kind: 'l', link: "big.txt"},
	})
	if err := os.Chtimes(src, time.Time{}, defaultMtime); err != nil {
		t.Fatal(err)
	}
	want := scanTree(t, src)
	work := t.TempDir()

	ours := filepath.Join(work, "ours.tar.zst")
	f, err := os.Create(ours)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), src, f, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	byTar := filepath.Join(work, "by-tar")
	if err := os.Mkdir(byTar, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := archivetest.Shell(work, fmt.Sprintf("zstd -d -q -c %q | tar -xpf - -C %q", ours, byTar)); err != nil {
		t.Fatal(err)
	}
	diffTrees(t, want, scanTree(t, byTar))

	theirs := filepath.Join(work, "theirs.tar.zst")
	if err := archivetest.Shell(src, fmt.Sprintf("tar -cf - . | zstd -1 -T0 -q -f -o %q", theirs)); err != nil {
		t.Fatal(err)
	}
	tf, err := os.Open(theirs)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	byUs := filepath.Join(work, "by-us")
	if _, err := Extract(context.Background(), tf, byUs, Limits{}); err != nil {
		t.Fatalf("Extract of a tar|zstd archive: %v", err)
	}
	diffTrees(t, want, scanTree(t, byUs))
}
