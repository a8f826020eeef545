package volumestest

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// Hostile archives, with a correct checksum, are refused before anything changes: nothing is
// written outside, the tree is untouched and no restore directory is left (invariant 8).
func testHostileObjects(t *testing.T, s *suite) {
	ctx := t.Context()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, s.env.Dir, "keep.txt", "keep")
	before := s.state(t)
	escaped := filepath.Join(filepath.Dir(s.env.Dir), "escaped")
	plain := MakeTar(t, []TarEntry{Reg("a", "x")})
	trunc := Compress(t, plain[:1024])
	for i, tc := range []struct {
		name string
		obj  []byte
		want error
		// inMsg, when set, must be in the error.
		inMsg string
	}{
		{name: "dot-dot", obj: ZstdTar(t, []TarEntry{Reg("ok.txt", "x"), Reg("../evil.txt", "x")}), want: engine.ErrBadPath},
		{name: "dot-dot beside the storage", obj: ZstdTar(t, []TarEntry{Reg("fine", "x"), Reg("../escaped", "evil")}), want: engine.ErrBadPath},
		{name: "dot-dot inside", obj: ZstdTar(t, []TarEntry{Reg("a/../../evil.txt", "x")}), want: engine.ErrBadPath},
		{name: "absolute", obj: ZstdTar(t, []TarEntry{Reg(filepath.Join(outside, "abs.txt"), "x")}), want: engine.ErrBadPath},
		{name: "symlink then write through", obj: ZstdTar(t, []TarEntry{Symlink("l", outside), Reg("l/through.txt", "x")}), want: engine.ErrBadPath},
		{name: "symlink then overwrite through", obj: ZstdTar(t, []TarEntry{Symlink("s", secret), Reg("s", "pwned")}), want: engine.ErrExists},
		{name: "symlink dir then deeper", obj: ZstdTar(t, []TarEntry{Symlink("d", outside), Dir("d/sub/")}), want: engine.ErrBadPath},
		{name: "dir replaced by symlink", obj: ZstdTar(t, []TarEntry{Dir("d/"), Symlink("d", outside), Reg("d/x", "x")}), want: engine.ErrExists},
		{name: "hard link out", obj: ZstdTar(t, []TarEntry{HardLink("h", secret)}), want: engine.ErrBadPath},
		{name: "hard link up", obj: ZstdTar(t, []TarEntry{HardLink("h", "../secret")}), want: engine.ErrBadPath},
		{name: "hard link to a symlink", obj: ZstdTar(t, []TarEntry{Symlink("l", secret), HardLink("h", "l")}), want: engine.ErrBadPath},
		{name: "hard link to a later file", obj: ZstdTar(t, []TarEntry{HardLink("h", "later"), Reg("later", "x")}), want: engine.ErrBadPath},
		{name: "char device", obj: ZstdTar(t, []TarEntry{{Hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}}), want: engine.ErrBadPath},
		{name: "block device", obj: ZstdTar(t, []TarEntry{{Hdr: tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}}}), want: engine.ErrBadPath},
		{name: "duplicate", obj: ZstdTar(t, []TarEntry{Reg("a", "1"), Reg("a", "2")}), want: engine.ErrExists},
		{name: "file under a file", obj: ZstdTar(t, []TarEntry{Reg("a", "1"), Reg("a/b", "2")}), want: engine.ErrExists},
		{name: "empty symlink", obj: ZstdTar(t, []TarEntry{Symlink("l", "")}), want: engine.ErrBadPath},
		// A truncated archive (no end marker) is refused even with a matching checksum.
		{name: "truncated archive", obj: trunc, want: io.ErrUnexpectedEOF},
		// A stream whose header asks for a 64 MiB window is refused before anything is
		// decoded: sailtui's archives use 1 MiB.
		{name: "64 MiB window", obj: archivetest.WideWindow(t, plain, 26), want: engine.ErrBadInput, inMsg: "window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := s.stored(t, fmt.Sprintf("h-%d", i), tc.obj)
			err := s.env.Volumes.Restore(ctx, s.env.Project, snap)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.inMsg) {
				t.Errorf("Restore = %v, want %v naming %q", err, tc.want, tc.inMsg)
			}
			if errors.Is(err, engine.ErrChecksum) {
				t.Errorf("Restore = %v: the object is intact, not a checksum error", err)
			}
			s.unchanged(t, "the project", before)
			if b, _ := os.ReadFile(secret); string(b) != "s3cr3t" {
				t.Errorf("the file outside changed: %q", b)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("something was written outside: %v", ents)
			}
			if _, err := os.Lstat(escaped); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file escaped beside the storage: %v", err)
			}
		})
	}
}

var bomb struct {
	once sync.Once
	data []byte
}

// A decompression bomb in place of a snapshot's object: refused before a byte is decompressed
// when its size is not the recorded one, and stopped at the recorded unpacked size otherwise,
// with the project's storage untouched either way (issue: a 135 KB object made a wake write
// 4 GB before the checksum mismatch).
func testZstdBomb(t *testing.T, s *suite) {
	ctx := t.Context()
	payload := 0
	for _, f := range []struct{ rel, data string }{{"small.txt", "small\n"}, {"src/a.go", "package a\n"}, {"README", "read me\n"}} {
		WriteFile(t, s.env.Dir, f.rel, f.data)
		payload += len(f.data)
	}
	snap := s.create(t, ctx, s.snap("s-bomb"))
	if snap.UnpackedBytes != int64(payload) {
		t.Fatalf("Create recorded %d unpacked bytes, the tree holds %d", snap.UnpackedBytes, payload)
	}
	before := s.state(t)
	bomb.once.Do(func() { bomb.data = ZstdBomb(t, 1<<30) })
	s.putObject(t, snap.Location, bomb.data)

	err := s.env.Volumes.Restore(ctx, s.env.Project, snap)
	if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("has %d bytes, recorded %d", len(bomb.data), snap.SizeBytes)) {
		t.Errorf("restore of a bomb of another size: %v, want a size mismatch before reading", err)
	}
	s.unchanged(t, "after a bomb of another size", before)

	// The same bomb where the recorded object size matches: extraction stops at the recorded
	// unpacked size, long before the gigabyte.
	forged := snap
	forged.SizeBytes = int64(len(bomb.data))
	start := time.Now()
	err = s.env.Volumes.Restore(ctx, s.env.Project, forged)
	if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("limit of %d bytes", payload)) {
		t.Errorf("restore of a bomb of the recorded size: %v, want it stopped at the recorded %d unpacked bytes", err, payload)
	}
	t.Logf("bomb of %d bytes (1 GiB unpacked) refused in %s", len(bomb.data), time.Since(start))
	s.unchanged(t, "after a bomb of the recorded size", before)
}
