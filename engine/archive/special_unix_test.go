//go:build unix

package archive

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"syscall"
	"testing"
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
