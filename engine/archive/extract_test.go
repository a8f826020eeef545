package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

func reg(name string, data []byte) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name}, data: data}
}

func dir(name string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}}
}

func symlink(name, target string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

// hostileCase is an archive Extract must refuse. The corpus doubles as the fuzz seed.
type hostileCase struct {
	name    string
	entries func(base string) []tarEntry
	// pre prepares the target before extraction (it may already hold a symlink out).
	pre     func(t testing.TB, base, target string)
	lim     Limits
	wantErr error
	// inMsg must appear in the error: the entry that was refused.
	inMsg string
}

func hostileCorpus() []hostileCase {
	zeros := func(n int) []byte { return make([]byte, n) }
	return []hostileCase{
		{name: "dotdot", entries: func(string) []tarEntry { return []tarEntry{reg("../evil", []byte("x"))} },
			wantErr: engine.ErrBadPath, inMsg: `"../evil"`},
		{name: "dotdot inside name", entries: func(string) []tarEntry { return []tarEntry{reg("a/../../outside/evil", []byte("x"))} },
			wantErr: engine.ErrBadPath, inMsg: "a/../../outside/evil"},
		{name: "dotdot after valid entries", entries: func(string) []tarEntry {
			return []tarEntry{dir("ok/"), reg("ok/file", []byte("fine")), reg("ok/../../outside/evil", []byte("x"))}
		}, wantErr: engine.ErrBadPath, inMsg: "ok/../../outside/evil"},
		{name: "absolute path", entries: func(base string) []tarEntry {
			return []tarEntry{reg(filepath.Join(base, "outside", "abs-evil"), []byte("x"))}
		}, wantErr: engine.ErrBadPath, inMsg: "absolute path"},
		{name: "symlink then file through it", entries: func(string) []tarEntry {
			return []tarEntry{dir("real/"), symlink("link", "real"), reg("link/file", []byte("x"))}
		}, wantErr: engine.ErrBadPath, inMsg: `"link/file"`},
		{name: "symlink then dir through it", entries: func(string) []tarEntry {
			return []tarEntry{dir("real/"), symlink("link", "real"), dir("link/sub/")}
		}, wantErr: engine.ErrBadPath, inMsg: `"link/sub/"`},
		{name: "symlink outside then file through it", entries: func(string) []tarEntry {
			return []tarEntry{symlink("link", "../outside"), reg("link/evil", []byte("x"))}
		}, wantErr: engine.ErrBadPath, inMsg: `"link"`},
		{name: "absolute symlink then file through it", entries: func(base string) []tarEntry {
			return []tarEntry{symlink("link", filepath.Join(base, "outside")), reg("link/evil", []byte("x"))}
		}, wantErr: engine.ErrBadPath, inMsg: "absolute"},
		{name: "symlink to /etc/passwd", entries: func(string) []tarEntry {
			return []tarEntry{symlink("passwd", "/etc/passwd")}
		}, wantErr: engine.ErrBadPath, inMsg: `"passwd"`},
		{name: "symlink chain escape", entries: func(string) []tarEntry {
			return []tarEntry{dir("d/"), symlink("d/l", ".."), symlink("m", "d/l/../outside"), reg("m/evil", []byte("x"))}
		}, wantErr: engine.ErrBadPath, inMsg: `"m"`},
		{name: "pre-existing symlink out of target", entries: func(string) []tarEntry {
			return []tarEntry{reg("pre/evil", []byte("x"))}
		}, pre: func(t testing.TB, base, target string) {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(target, "pre")); err != nil {
				t.Fatal(err)
			}
		}, wantErr: engine.ErrBadPath, inMsg: `"pre/evil"`},
		{name: "file over symlink", entries: func(string) []tarEntry {
			return []tarEntry{symlink("f", "other"), reg("f", []byte("x"))}
		}, wantErr: engine.ErrExists, inMsg: `"f"`},
		{name: "hard link to /etc/passwd", entries: func(string) []tarEntry {
			return []tarEntry{{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "passwd", Linkname: "/etc/passwd"}}}
		}, wantErr: engine.ErrBadPath, inMsg: "hard link"},
		// Hard links are kept (Write makes them), but only to a regular file extracted before,
		// reached without a symlink.
		{name: "hard link to a later file", entries: func(string) []tarEntry {
			return []tarEntry{{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "b", Linkname: "a"}}, reg("a", []byte("a"))}
		}, wantErr: engine.ErrBadPath, inMsg: "hard link"},
		{name: "hard link to a directory", entries: func(string) []tarEntry {
			return []tarEntry{dir("d"), {hdr: tar.Header{Typeflag: tar.TypeLink, Name: "b", Linkname: "d"}}}
		}, wantErr: engine.ErrBadPath, inMsg: "hard link"},
		{name: "hard link to a symlink", entries: func(string) []tarEntry {
			return []tarEntry{reg("a", []byte("a")), symlink("s", "a"), {hdr: tar.Header{Typeflag: tar.TypeLink, Name: "b", Linkname: "s"}}}
		}, wantErr: engine.ErrBadPath, inMsg: "hard link"},
		{name: "hard link through a symlink", entries: func(string) []tarEntry {
			return []tarEntry{reg("a", []byte("a")), symlink("s", "."), {hdr: tar.Header{Typeflag: tar.TypeLink, Name: "b", Linkname: "s/a"}}}
		}, wantErr: engine.ErrBadPath, inMsg: "hard link"},
		{name: "char device", entries: func(string) []tarEntry {
			return []tarEntry{{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}}
		}, wantErr: engine.ErrBadPath, inMsg: "device"},
		{name: "block device", entries: func(string) []tarEntry {
			return []tarEntry{{hdr: tar.Header{Typeflag: tar.TypeBlock, Name: "sda", Devmajor: 8}}}
		}, wantErr: engine.ErrBadPath, inMsg: "device"},
		{name: "unsupported type", entries: func(string) []tarEntry {
			return []tarEntry{{hdr: tar.Header{Typeflag: tar.TypeCont, Name: "cont"}}}
		}, wantErr: engine.ErrBadPath, inMsg: "unsupported"},
		{name: "file as target itself", entries: func(string) []tarEntry { return []tarEntry{reg(".", []byte("x"))} },
			wantErr: engine.ErrBadPath, inMsg: "target itself"},
		{name: "duplicate file", entries: func(string) []tarEntry {
			return []tarEntry{reg("a", []byte("1")), reg("a", []byte("2"))}
		}, wantErr: engine.ErrExists, inMsg: `"a"`},
		{name: "file over dir", entries: func(string) []tarEntry {
			return []tarEntry{dir("a/"), reg("a", []byte("x"))}
		}, wantErr: engine.ErrExists, inMsg: `"a"`},
		// The file may still be queued for writing when the directory is made, so the error
		// names whichever of the two lost.
		{name: "dir over file", entries: func(string) []tarEntry {
			return []tarEntry{reg("a", []byte("x")), dir("a/")}
		}, wantErr: engine.ErrExists, inMsg: `"a`},
		{name: "expansion bomb single entry", entries: func(string) []tarEntry {
			return []tarEntry{reg("bomb", zeros(4<<20))}
		}, lim: Limits{MaxBytes: 1 << 20}, wantErr: engine.ErrBadInput, inMsg: `"bomb"`},
		{name: "expansion bomb total", entries: func(string) []tarEntry {
			return []tarEntry{reg("a", zeros(400<<10)), reg("b", zeros(400<<10)), reg("c", zeros(400<<10))}
		}, lim: Limits{MaxBytes: 1 << 20}, wantErr: engine.ErrBadInput, inMsg: `"c"`},
		{name: "entry size cap", entries: func(string) []tarEntry {
			return []tarEntry{reg("a", zeros(100)), reg("big", zeros(2000))}
		}, lim: Limits{MaxEntrySize: 1000}, wantErr: engine.ErrBadInput, inMsg: `"big"`},
		{name: "too many entries", entries: func(string) []tarEntry {
			var es []tarEntry
			for i := range 150 {
				es = append(es, reg(strings.Repeat("f", 1+i%40)+string(rune('a'+i/40)), nil))
			}
			return es
		}, lim: Limits{MaxFiles: 100}, wantErr: engine.ErrBadInput, inMsg: "more than 100 entries"},
	}
}

func TestExtractRefusesHostileArchives(t *testing.T) {
	for _, tc := range hostileCorpus() {
		t.Run(tc.name, func(t *testing.T) {
			base, target := sandbox(t)
			if tc.pre != nil {
				tc.pre(t, base, target)
			}
			before := outsideSnapshot(t, base, target)
			arc := compress(makeTar(t, tc.entries(base)))
			_, err := Extract(context.Background(), bytes.NewReader(arc), target, tc.lim)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Extract error = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("error %q does not mention %q", err, tc.inMsg)
			}
			if after := outsideSnapshot(t, base, target); after != before {
				t.Errorf("something changed outside the target:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if tc.lim != (Limits{}) {
				checkWithinLimits(t, target, tc.lim.WithDefaults())
			}
			checkInside(t, target)
		})
	}
}

// checkWithinLimits proves a refused bomb was refused before its data was written.
func checkWithinLimits(t testing.TB, target string, lim Limits) {
	t.Helper()
	var total int64
	_ = filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	if total > lim.MaxBytes {
		t.Errorf("%d bytes written, over the %d limit", total, lim.MaxBytes)
	}
}

// checkInside asserts that target holds only files, directories and symlinks that resolve inside.
func checkInside(t testing.TB, target string) {
	t.Helper()
	_ = filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(target, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				t.Errorf("readlink %s: %v", rel, err)
				return nil
			}
			if filepath.Base(rel) == "pre" {
				return nil // planted by the test itself
			}
			if err := checkLinkTarget(filepath.ToSlash(rel), link); err != nil {
				t.Errorf("symlink %s -> %s left in target: %v", rel, link, err)
			}
		case d.Type().IsRegular(), d.IsDir(), d.Type()&fs.ModeNamedPipe != 0: // a new, empty pipe is harmless
		default:
			t.Errorf("special file %s (%v) left in target", rel, d.Type())
		}
		return nil
	})
}

func TestExtractCorruptStreams(t *testing.T) {
	good := compress(makeTar(t, []tarEntry{reg("a", bytes.Repeat([]byte("abc"), 10000))}))
	truncated := good[:len(good)/2]
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	trailing := compress(append(makeTar(t, []tarEntry{reg("a", []byte("x"))}), make([]byte, 2<<20)...))
	for name, data := range map[string][]byte{
		"not zstd":          []byte("this is not a zstd stream at all"),
		"truncated":         truncated,
		"flipped byte":      flipped,
		"trailing data":     trailing,
		"plain tar":         makeTar(t, []tarEntry{reg("a", []byte("x"))}),
		"empty":             nil,
		"zstd of non-tar":   compress(bytes.Repeat([]byte("garbage!"), 200)),
		"garbage after end": append(bytes.Clone(good), "junk after the frame"...),
		"no end marker":     compress(makeTar(t, []tarEntry{reg("a", []byte("x"))})[:1024]),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Extract(context.Background(), bytes.NewReader(data), t.TempDir(), Limits{})
			if err == nil {
				t.Fatal("Extract accepted a corrupt stream")
			}
		})
	}
}

func TestExtractCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	arc := compress(makeTar(t, []tarEntry{reg("a", []byte("x"))}))
	if _, err := Extract(ctx, bytes.NewReader(arc), t.TempDir(), Limits{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Extract error = %v, want context.Canceled", err)
	}
}

func TestExtractDropsSpecialModeBits(t *testing.T) {
	arc := compress(makeTar(t, []tarEntry{
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "suid", Mode: 0o4755}, data: []byte("x")},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "sticky/", Mode: 0o1777}},
	}))
	target := t.TempDir()
	if _, err := Extract(context.Background(), bytes.NewReader(arc), target, Limits{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{"suid": 0o755, "sticky": fs.ModeDir | 0o777} {
		fi, err := os.Lstat(filepath.Join(target, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s mode = %v, want %v", name, fi.Mode(), want)
		}
	}
}

func TestCleanName(t *testing.T) {
	cases := map[string]string{
		"a":       "a",
		"./a/b/":  "a/b",
		"a//b/./": "a/b",
		"./":      "",
		".":       "",
	}
	for in, want := range cases {
		got, err := cleanName(in)
		if err != nil || got != want {
			t.Errorf("cleanName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "/a", "..", "a/..", "a/../b", "a\x00b", "//a"} {
		if _, err := cleanName(bad); err == nil {
			t.Errorf("cleanName(%q) accepted", bad)
		}
	}
}

func TestCheckLinkTarget(t *testing.T) {
	ok := map[string]string{
		"l":       "x",
		"a/l":     "../x",
		"a/b/l":   "../../x/y",
		"a/b/c/l": "../../..",
		"l3":      ".",
	}
	for entry, link := range ok {
		if err := checkLinkTarget(entry, link); err != nil {
			t.Errorf("checkLinkTarget(%q, %q) = %v", entry, link, err)
		}
	}
	bad := [][2]string{
		{"l", ".."},
		{"l", "/etc"},
		{"a/l", "../.."},
		{"a/l", "b/../../.."},
		{"a/l", "b/../x"},
		{"l", ""},
		{"l", "a\x00"},
	}
	for _, c := range bad {
		if err := checkLinkTarget(c[0], c[1]); err == nil {
			t.Errorf("checkLinkTarget(%q, %q) accepted", c[0], c[1])
		}
	}
}
