//go:build unix

package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// pgNodes is a tree shaped like a PostgreSQL data directory: private directories, a file over
// smallFile (streamed by the reading goroutine rather than the writers), a symlink, a file of
// another owner and a setuid one.
func pgNodes() []node {
	r := rand.New(rand.NewPCG(7, 8))
	return []node{
		{path: "PG_VERSION", kind: 'f', data: []byte("16\n"), mode: 0o600},
		{path: "base", kind: 'd', mode: 0o700},
		{path: "base/1", kind: 'd', mode: 0o700},
		{path: "base/1/112", kind: 'f', data: mixedContent(r, smallFile+4096), mode: 0o600},
		{path: "base/1/113", kind: 'f', data: []byte("small relation"), mode: 0o600},
		{path: "current", kind: 'l', link: "base/1/113"},
		{path: "other", kind: 'f', data: []byte("someone else's"), mode: 0o640},
		{path: "postgresql.conf", kind: 'f', data: []byte("listen_addresses = '*'\n")},
		{path: "setuid", kind: 'f', data: []byte("#!/bin/sh\n"), mode: 0o755 | fs.ModeSetuid},
	}
}

// pgGoldenTar is the SHA-256 of the uncompressed tar Write made of pgNodes (root 0700) before
// WriteOptions.Owners existed: archives written without it must stay exactly that.
const pgGoldenTar = "6c39d0445d6d2e8bbf8f0e76947020f1e66dead5c5ff974cbf280f4bb7347750"

type ids struct{ uid, gid int }

// pgOwners is who owns what in the pgNodes tree (root itself as "."): the postgres image's 999
// everywhere but for "other".
func pgOwners() map[string]ids {
	own := map[string]ids{".": {999, 999}}
	for _, n := range pgNodes() {
		own[n.path] = ids{999, 999}
	}
	own["other"] = ids{1234, 4321} // uid and gid differ, so a swap shows
	return own
}

// buildPgTree builds pgNodes at a fresh root (mode 0700, fixed mtime) and, when own is not nil,
// gives every entry its owner from own.
func buildPgTree(t *testing.T, own map[string]ids) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "src")
	buildTree(t, root, pgNodes())
	if own != nil {
		chownTree(t, root, own)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(root, defaultMtime, defaultMtime); err != nil {
		t.Fatal(err)
	}
	return root
}

// chownTree gives the entries of root the owners own names (links themselves, not their
// targets), then puts back the setuid bit the kernel clears on a chown.
func chownTree(t *testing.T, root string, own map[string]ids) {
	t.Helper()
	for rel, o := range own {
		if err := os.Lchown(filepath.Join(root, filepath.FromSlash(rel)), o.uid, o.gid); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range pgNodes() {
		if n.mode&fs.ModeSetuid != 0 {
			if err := os.Chmod(filepath.Join(root, n.path), n.mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ownersOnDisk is the owner of every entry below root (root itself as ".").
func ownersOnDisk(t *testing.T, root string) map[string]ids {
	t.Helper()
	out := map[string]ids{}
	for rel, e := range archivetest.Scan(t, root) {
		s := e.Info.Sys().(*syscall.Stat_t)
		out[rel] = ids{int(s.Uid), int(s.Gid)}
	}
	return out
}

// everyone is own with every entry mapped to o.
func everyone(own map[string]ids, o ids) map[string]ids {
	out := map[string]ids{}
	for k := range own {
		out[k] = o
	}
	return out
}

func diffOwners(t *testing.T, want, got map[string]ids) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%q: missing", k)
		} else if g != w {
			t.Errorf("%q: owned by %d:%d, want %d:%d", k, g.uid, g.gid, w.uid, w.gid)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%q: unexpected", k)
		}
	}
}

// writeArchive archives root with opts.
func writeArchive(t *testing.T, root string, opts WriteOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Write(context.Background(), root, &buf, opts); err != nil {
		t.Fatalf("write: %v", err)
	}
	return buf.Bytes()
}

// untar is the uncompressed tar of a Write archive.
func untar(t *testing.T, archive []byte) []byte {
	t.Helper()
	dec, err := zstd.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	b, err := io.ReadAll(dec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeNonRoot makes Extract believe it does not run as root for the rest of the test.
func fakeNonRoot(t *testing.T) {
	t.Helper()
	prev := geteuid
	geteuid = func() int { return 1000 }
	t.Cleanup(func() { geteuid = prev })
}

func TestWriteOwners(t *testing.T) {
	// As root the tree gets pgOwners, so the headers carry ids that are not the writer's own;
	// otherwise they carry the writer's, which still shows they come from the entries.
	var own map[string]ids
	if os.Geteuid() == 0 {
		own = pgOwners()
	}
	root := buildPgTree(t, own)
	onDisk := ownersOnDisk(t, root)
	for _, tc := range []struct {
		name   string
		owners bool
	}{
		{"without Owners", false},
		{"with Owners", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := tar.NewReader(bytes.NewReader(untar(t, writeArchive(t, root, WriteOptions{Owners: tc.owners}))))
			seen := 0
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				seen++
				rel, err := cleanName(h.Name)
				if err != nil {
					t.Fatal(err)
				}
				if rel == "" {
					rel = "."
				}
				want := ids{}
				if tc.owners {
					want = onDisk[rel]
				}
				if got := (ids{h.Uid, h.Gid}); got != want {
					t.Errorf("%q: header says %d:%d, want %d:%d", h.Name, got.uid, got.gid, want.uid, want.gid)
				}
				if h.Uname != "" || h.Gname != "" {
					t.Errorf("%q: names %q:%q recorded, want none", h.Name, h.Uname, h.Gname)
				}
			}
			if seen != len(onDisk) {
				t.Errorf("%d entries archived, want %d", seen, len(onDisk))
			}
		})
	}
}

func TestWriteWithoutOwnersUnchanged(t *testing.T) {
	root := buildPgTree(t, nil)
	before := writeArchive(t, root, WriteOptions{})
	sum := sha256.Sum256(untar(t, before))
	if got := hex.EncodeToString(sum[:]); got != pgGoldenTar {
		t.Errorf("tar without Owners has SHA-256 %s, want %s (the archive format changed)", got, pgGoldenTar)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the same tree under other owners is not checked")
		return
	}
	// Owners the archive is not asked to keep must leave no trace in it.
	chownTree(t, root, pgOwners())
	if after := writeArchive(t, root, WriteOptions{}); !bytes.Equal(before, after) {
		t.Error("the archive without Owners changed when the tree changed owners")
	}
}

func TestExtractOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestExtractOwners must run as root (the CI does): only root can give files away; run `sudo go test`")
	}
	own := pgOwners()
	root := buildPgTree(t, own)
	wantTree := scanTree(t, root)
	extractor := ids{os.Geteuid(), os.Getegid()}
	for _, tc := range []struct {
		name            string
		record, restore bool
		want            map[string]ids
	}{
		{"recorded and restored", true, true, own},
		{"recorded, not restored", true, false, everyone(own, extractor)},
		// An archive without owners records 0:0, which Owners then applies.
		{"not recorded, restored", false, true, everyone(own, ids{0, 0})},
		{"neither", false, false, everyone(own, extractor)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			archive := writeArchive(t, root, WriteOptions{Owners: tc.record})
			dst := filepath.Join(t.TempDir(), "pgdata")
			if _, err := Extract(context.Background(), bytes.NewReader(archive), dst, Limits{Owners: tc.restore}); err != nil {
				t.Fatalf("extract: %v", err)
			}
			diffOwners(t, tc.want, ownersOnDisk(t, dst))
			// Modes (the 0700 directories, root included) and times come out as without
			// owners: the chown comes before the mode is set.
			diffTrees(t, wantTree, scanTree(t, dst))
			fi, err := os.Lstat(filepath.Join(dst, "setuid"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
				t.Errorf("setuid: mode %v, want the special bits dropped", fi.Mode())
			}
		})
	}
}

// ownedTar is a hand-made archive recording owners that are not the extracting user's, so
// what Extract does with them is seen whoever runs the test.
func ownedTar(t *testing.T) []byte {
	t.Helper()
	return compress(makeTar(t, []tarEntry{
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o700, Uid: 999, Gid: 999}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "base/", Mode: 0o700, Uid: 999, Gid: 999}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "base/1", Mode: 0o600, Uid: 999, Gid: 999}, data: []byte("relation")},
		{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "current", Linkname: "base/1", Mode: 0o777, Uid: 999, Gid: 999}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "other", Mode: 0o640, Uid: 1234, Gid: 4321}, data: []byte("x")},
	}))
}

func TestExtractOwnersIgnoredWithoutRoot(t *testing.T) {
	fakeNonRoot(t)
	extractor := ids{os.Geteuid(), os.Getegid()}
	for _, tc := range []struct {
		name   string
		owners bool
	}{
		{"without Owners", false},
		{"with Owners, not root", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "pgdata")
			if _, err := Extract(context.Background(), bytes.NewReader(ownedTar(t)), dst, Limits{Owners: tc.owners}); err != nil {
				t.Fatalf("extract: %v", err)
			}
			want := map[string]ids{".": extractor, "base": extractor, "base/1": extractor, "current": extractor, "other": extractor}
			diffOwners(t, want, ownersOnDisk(t, dst))
			for rel, perm := range map[string]fs.FileMode{".": 0o700, "base": 0o700, "base/1": 0o600, "other": 0o640} {
				fi, err := os.Lstat(filepath.Join(dst, rel))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != perm {
					t.Errorf("%q: mode %v, want %v", rel, fi.Mode().Perm(), perm)
				}
			}
		})
	}
}

func TestExtractOwnersBadIDs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		uid, gid int
	}{
		{"negative uid", -1, 0},
		{"negative gid", 999, -5},
		{"uid meaning unchanged to chown", 1<<32 - 1, 999},
		{"gid past 32 bits", 999, 1 << 32},
		{"uid far past 32 bits", 1 << 40, 999},
	} {
		archive := compress(makeTar(t, []tarEntry{
			{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "f", Uid: tc.uid, Gid: tc.gid, Format: tar.FormatGNU}, data: []byte("x")},
		}))
		t.Run(tc.name, func(t *testing.T) {
			// Refused with Owners whoever restores it; the ids are read only with Owners.
			for _, lim := range []struct {
				name    string
				lim     Limits
				nonRoot bool
				wantErr bool
			}{
				{"Owners", Limits{Owners: true}, false, true},
				{"Owners, not root", Limits{Owners: true}, true, true},
				{"without Owners", Limits{}, false, false},
			} {
				t.Run(lim.name, func(t *testing.T) {
					if lim.nonRoot {
						fakeNonRoot(t)
					}
					_, err := Extract(context.Background(), bytes.NewReader(archive), filepath.Join(t.TempDir(), "x"), lim.lim)
					switch {
					case lim.wantErr && !errors.Is(err, engine.ErrBadInput):
						t.Fatalf("extract: %v, want an error wrapping ErrBadInput", err)
					case !lim.wantErr && err != nil:
						t.Fatalf("extract: %v", err)
					}
				})
			}
		})
	}
}
