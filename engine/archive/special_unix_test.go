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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

func TestWriteSkipsSpecialFiles(t *testing.T) {
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
	if st.Skipped != 2 || st.Files != 1 {
		t.Errorf("stats = %+v, want 1 file and 2 skipped", st)
	}
	dst := t.TempDir()
	if _, err := Extract(context.Background(), &arc, dst, Limits{}); err != nil {
		t.Fatal(err)
	}
	got := scanTree(t, dst)
	if len(got) != 2 || got["keep.txt"].kind != "file" {
		t.Errorf("extracted %v", got)
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
