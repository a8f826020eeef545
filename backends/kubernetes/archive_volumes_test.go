package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/sailtui/sailtui/backends/dirstore"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// busyboxExecutor runs every command with busybox's applets first in PATH: the tools a
// minimal file-manager image has.
type busyboxExecutor struct {
	h   *hostExecutor
	bin string
}

func newBusyboxExecutor(t *testing.T, h *hostExecutor) busyboxExecutor {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox is needed for this test: ", err)
	}
	bin := t.TempDir()
	for _, applet := range []string{"sh", "tar", "mv", "rm", "rmdir", "mkdir", "chmod", "readlink", "stat", "cat", "head", "env"} {
		if err := os.Symlink(bb, filepath.Join(bin, applet)); err != nil {
			t.Fatal(err)
		}
	}
	return busyboxExecutor{h: h, bin: bin}
}

func (b busyboxExecutor) run(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	argv = append([]string{filepath.Join(b.bin, "env"), "PATH=" + b.bin + ":" + os.Getenv("PATH")}, argv...)
	return b.h.run(ctx, ns, pod, container, argv, stdin, stdout, stderr)
}

// rewriteExecutor replaces the argv of tar -c, to make it fail.
type rewriteExecutor struct {
	h      *hostExecutor
	create []string
}

func (r rewriteExecutor) run(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(argv) > 1 && argv[0] == "tar" && argv[1] == "-c" {
		argv = append(append([]string{}, r.create...), MountPath)
	}
	return r.h.run(ctx, ns, pod, container, argv, stdin, stdout, stderr)
}

type archiveEnv struct {
	root   string // the project's mount
	h      *hostExecutor
	rt     *Runtime
	p      engine.Project
	store  *dirstore.Store
	objDir string
	av     *ArchiveVolumes
}

func newArchiveEnv(t *testing.T, wrap func(*hostExecutor) executor) *archiveEnv {
	t.Helper()
	e := &archiveEnv{root: t.TempDir(), objDir: t.TempDir()}
	e.h = &hostExecutor{root: e.root}
	var x executor = e.h
	if wrap != nil {
		x = wrap(e.h)
	}
	e.rt, e.p, _ = fakeRuntime(t, x)
	var err error
	if e.store, err = dirstore.New(e.objDir); err != nil {
		t.Fatal(err)
	}
	e.av = NewArchiveVolumes(e.rt, e.store, archive.SandwichOptions{})
	return e
}

func (e *archiveEnv) snap(id string) engine.Snapshot {
	return engine.Snapshot{ID: id, ProjectID: e.p.ID, Owner: e.p.Owner, Type: engine.SnapshotManual}
}

// put stores data as the object of snapshot id, with its checksum recorded.
func (e *archiveEnv) put(t *testing.T, id string, data []byte) engine.Snapshot {
	t.Helper()
	s := e.snap(id)
	key, err := e.av.Key(s.Owner, s.ProjectID, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Put(t.Context(), key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	s.Location, s.SHA256, s.SizeBytes, s.Backend = key, hex.EncodeToString(sum[:]), int64(len(data)), archive.BackendName
	return s
}

// writeTree makes a project tree with what a snapshot must keep: nested and empty
// directories, executables, a read-only directory, symlinks inside and out, a non-UTF-8 name,
// a hard link, a large file, and a cache that the default exclusions leave out.
func writeTree(t *testing.T, root string) {
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

// treeState describes every entry under root except the root itself: type, permissions,
// mtime (seconds), size and content hash or link target. Entries for which skip is true are
// left out (with everything under them).
func treeState(t *testing.T, root string, skip func(rel string) bool) []string {
	t.Helper()
	return treeStateOpt(t, root, skip, true)
}

// treeStateOpt is treeState, with directory times left out unless dirTimes.
func treeStateOpt(t *testing.T, root string, skip func(rel string) bool, dirTimes bool) []string {
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

// excludedByDefault are the cache directories of writeTree that archives leave out.
func excludedByDefault(rel string) bool {
	return rel == ".cache" || rel == "web/node_modules/.cache"
}

func diffStates(t *testing.T, what string, got, want []string) {
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

// noLeftovers fails when a sailtui restore directory is left in the mount.
func noLeftovers(t *testing.T, root string) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if reservedTopName(e.Name()) {
			t.Errorf("left over in the mount: %s", e.Name())
		}
	}
}

func writable(root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

// Create then Restore over a changed tree gives back the tree byte for byte (caches excluded,
// hard links as plain copies), through GNU tar and through busybox's tar and sh.
func TestArchiveRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*hostExecutor) executor
	}{
		{"gnu", nil},
		{"busybox", func(h *hostExecutor) executor { return newBusyboxExecutor(t, h) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newArchiveEnv(t, tc.wrap)
			ctx := t.Context()
			writeTree(t, e.root)
			// busybox tar makes symlinks pointing up or out last, so the directories holding
			// them get the time of the restore; GNU tar restores every directory time.
			dirTimes := tc.wrap == nil
			want := treeStateOpt(t, e.root, excludedByDefault, dirTimes)

			snap, err := e.av.Create(ctx, e.p, e.snap("s-1"))
			if err != nil {
				t.Fatal(err)
			}
			if snap.Backend != archive.BackendName || snap.SHA256 == "" || snap.SizeBytes == 0 {
				t.Fatalf("snapshot %+v", snap)
			}
			wantKey, _ := archive.NewSandwich(e.store, nil, archive.SandwichOptions{}).Key(e.p.Owner, e.p.ID, "s-1")
			if snap.Location != wantKey {
				t.Errorf("location %q, want Sandwich's key %q", snap.Location, wantKey)
			}
			raw, err := os.ReadFile(filepath.Join(e.objDir, filepath.FromSlash(snap.Location)))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != snap.SHA256 || int64(len(raw)) != snap.SizeBytes {
				t.Errorf("recorded sha/size do not match the stored object")
			}
			if snap, err = e.av.WaitReady(ctx, snap); err != nil || snap.Status != engine.SnapshotReady {
				t.Fatalf("wait ready: %v %v", snap.Status, err)
			}

			// Change everything: edits, deletions, additions, a dir where a file was.
			writable(e.root)
			for _, rel := range []string{"src", "big.bin", "caf\xe9 \xff.txt"} {
				if err := os.RemoveAll(filepath.Join(e.root, rel)); err != nil {
					t.Fatal(err)
				}
			}
			_ = os.WriteFile(filepath.Join(e.root, "bin/run.sh"), []byte("changed"), 0o644)
			_ = os.MkdirAll(filepath.Join(e.root, "big.bin/x"), 0o755)
			_ = os.WriteFile(filepath.Join(e.root, "new.txt"), []byte("new"), 0o644)

			var last engine.Progress
			if err := e.av.Restore(engine.WithProgress(ctx, func(p engine.Progress) { last = p }), e.p, snap); err != nil {
				t.Fatal(err)
			}
			diffStates(t, "restored", treeStateOpt(t, e.root, nil, dirTimes), want)
			noLeftovers(t, e.root)
			if last.Done != snap.SizeBytes {
				t.Errorf("last progress %+v, want Done %d", last, snap.SizeBytes)
			}
			// Restoring again over the restored tree is the same tree.
			if err := e.av.Restore(ctx, e.p, snap); err != nil {
				t.Fatal(err)
			}
			diffStates(t, "restored twice", treeStateOpt(t, e.root, nil, dirTimes), want)

			if err := e.av.Delete(ctx, snap); err != nil {
				t.Fatal(err)
			}
			if err := e.av.Delete(ctx, snap); err != nil {
				t.Errorf("second delete: %v", err)
			}
			if _, err := e.store.Head(ctx, snap.Location); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("object after delete: %v", err)
			}
			writable(e.root)
		})
	}
}

// Archives made here are restored by archive.Extract (and so by the local Sandwich), and
// archives made by archive.Write are restored here.
func TestArchiveInterop(t *testing.T) {
	e := newArchiveEnv(t, nil)
	ctx := t.Context()
	writeTree(t, e.root)
	want := treeState(t, e.root, excludedByDefault)
	snap, err := e.av.Create(ctx, e.p, e.snap("s-1"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := e.store.Get(ctx, snap.Location)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x")
	_, err = archive.Extract(ctx, rc, out, archive.Limits{AnyLinkTarget: true})
	rc.Close()
	if err != nil {
		t.Fatalf("archive.Extract of an ArchiveVolumes archive: %v", err)
	}
	diffStates(t, "archive.Extract", treeState(t, out, nil), want)
	writable(out)

	// The other way: a tree written by archive.Write, restored through the pod.
	src := t.TempDir()
	writeTree(t, src)
	var buf bytes.Buffer
	if _, err := archive.Write(ctx, src, &buf, archive.WriteOptions{AnyLinkTarget: true}); err != nil {
		t.Fatal(err)
	}
	wantW := treeState(t, src, excludedByDefault)
	// archive.Write sees the hard link as two files, as Create does.
	writable(e.root)
	if err := os.WriteFile(filepath.Join(e.root, "stale"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := e.put(t, "s-2", buf.Bytes())
	if err := e.av.Restore(ctx, e.p, s2); err != nil {
		t.Fatalf("restore of an archive.Write archive: %v", err)
	}
	diffStates(t, "restored archive.Write archive", treeState(t, e.root, nil), wantW)
	noLeftovers(t, e.root)
	writable(e.root)
	writable(src)
}

// A flipped byte in the stored object is ErrChecksum, naming the snapshot; the tree is as it was.
func TestArchiveCorruption(t *testing.T) {
	e := newArchiveEnv(t, nil)
	ctx := t.Context()
	writeTree(t, e.root)
	snap, err := e.av.Create(ctx, e.p, e.snap("s-corrupt"))
	if err != nil {
		t.Fatal(err)
	}
	writable(e.root)
	if err := os.WriteFile(filepath.Join(e.root, "after.txt"), []byte("written after the snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, e.root, nil)
	objPath := filepath.Join(e.objDir, filepath.FromSlash(snap.Location))
	for _, at := range []float64{0.01, 0.5, 0.99} {
		raw, err := os.ReadFile(objPath)
		if err != nil {
			t.Fatal(err)
		}
		i := int(float64(len(raw)) * at)
		raw[i] ^= 0x40
		if err := os.WriteFile(objPath, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		err = e.av.Restore(ctx, e.p, snap)
		if !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), "s-corrupt") {
			t.Errorf("byte %d flipped: %v, want ErrChecksum naming the snapshot", i, err)
		}
		if _, err := e.av.WaitReady(ctx, snap); !errors.Is(err, engine.ErrChecksum) {
			t.Errorf("wait ready on a corrupted object: %v", err)
		}
		diffStates(t, "after a refused restore", treeState(t, e.root, nil), before)
		noLeftovers(t, e.root)
		raw[i] ^= 0x40
		if err := os.WriteFile(objPath, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A wrong recorded checksum is refused the same way.
	bad := snap
	bad.SHA256 = strings.Repeat("0", 64)
	if err := e.av.Restore(ctx, e.p, bad); !errors.Is(err, engine.ErrChecksum) {
		t.Errorf("wrong recorded checksum: %v", err)
	}
	diffStates(t, "after a wrong checksum", treeState(t, e.root, nil), before)
	writable(e.root)
}

type tarEntry struct {
	hdr  tar.Header
	data string
}

func zstdTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, en := range entries {
		h := en.hdr
		h.Size = int64(len(en.data))
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
		if _, err := io.WriteString(tw, en.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Hostile archives, with a correct checksum, are refused before anything changes: nothing is
// written outside, the tree is untouched and no restore directory is left.
func TestArchiveHostileStreams(t *testing.T) {
	e := newArchiveEnv(t, nil)
	ctx := t.Context()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.root, "keep.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, e.root, nil)
	reg := func(name, data string) tarEntry { return tarEntry{hdr: tar.Header{Name: name}, data: data} }
	link := func(name, target string) tarEntry {
		return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}}
	}
	hard := func(name, target string) tarEntry {
		return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target}}
	}
	for i, tc := range []struct {
		name    string
		entries []tarEntry
		want    error
	}{
		{"dot-dot", []tarEntry{reg("ok.txt", "x"), reg("../evil.txt", "x")}, engine.ErrBadPath},
		{"dot-dot inside", []tarEntry{reg("a/../../evil.txt", "x")}, engine.ErrBadPath},
		{"absolute", []tarEntry{reg(filepath.Join(outside, "abs.txt"), "x")}, engine.ErrBadPath},
		{"symlink then write through", []tarEntry{link("l", outside), reg("l/through.txt", "x")}, engine.ErrBadPath},
		{"symlink then overwrite through", []tarEntry{link("s", secret), reg("s", "pwned")}, engine.ErrExists},
		{"symlink dir then deeper", []tarEntry{link("d", outside), {hdr: tar.Header{Name: "d/sub/", Typeflag: tar.TypeDir, Mode: 0o755}}}, engine.ErrBadPath},
		{"dir replaced by symlink", []tarEntry{{hdr: tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}}, link("d", outside), reg("d/x", "x")}, engine.ErrExists},
		{"hard link out", []tarEntry{hard("h", secret)}, engine.ErrBadPath},
		{"hard link up", []tarEntry{hard("h", "../secret")}, engine.ErrBadPath},
		{"hard link to a symlink", []tarEntry{link("l", secret), hard("h", "l")}, engine.ErrBadPath},
		{"hard link to a later file", []tarEntry{hard("h", "later"), reg("later", "x")}, engine.ErrBadPath},
		{"char device", []tarEntry{{hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}}, engine.ErrBadPath},
		{"block device", []tarEntry{{hdr: tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}}}, engine.ErrBadPath},
		{"fifo", []tarEntry{{hdr: tar.Header{Name: "fifo", Typeflag: tar.TypeFifo}}}, engine.ErrBadPath},
		{"duplicate", []tarEntry{reg("a", "1"), reg("a", "2")}, engine.ErrExists},
		{"file under a file", []tarEntry{reg("a", "1"), reg("a/b", "2")}, engine.ErrExists},
		{"empty symlink", []tarEntry{link("l", "")}, engine.ErrBadPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := e.put(t, fmt.Sprintf("h-%d", i), zstdTar(t, tc.entries))
			err := e.av.Restore(ctx, e.p, s)
			if !errors.Is(err, tc.want) {
				t.Errorf("restore: %v, want %v", err, tc.want)
			}
			diffStates(t, "mount", treeState(t, e.root, nil), before)
			noLeftovers(t, e.root)
			if b, _ := os.ReadFile(secret); string(b) != "s3cr3t" {
				t.Errorf("the file outside changed: %q", b)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("something was written outside: %v", ents)
			}
		})
	}

	// A legitimate hard link to an earlier file is kept; the limits apply.
	s := e.put(t, "ok-hard", zstdTar(t, []tarEntry{reg("a", "data"), hard("b", "a")}))
	if err := e.av.Restore(ctx, e.p, s); err != nil {
		t.Fatalf("hard link to an earlier file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "b")); string(b) != "data" {
		t.Errorf("hard link restored as %q", b)
	}
	small := NewArchiveVolumes(e.rt, e.store, archive.SandwichOptions{Limits: archive.Limits{MaxBytes: 10, MaxFiles: 3}})
	for name, entries := range map[string][]tarEntry{
		"bytes":   {reg("a", "123456"), reg("b", "123456")},
		"entries": {reg("a", ""), reg("b", ""), reg("c", ""), reg("d", "")},
	} {
		s := e.put(t, "lim-"+name, zstdTar(t, entries))
		if err := small.Restore(ctx, e.p, s); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("over the %s limit: %v", name, err)
		}
	}
	// A truncated archive (no end marker) is refused even with a matching checksum.
	full := zstdTar(t, []tarEntry{reg("a", "x")})
	var trunc bytes.Buffer
	zw, _ := zstd.NewWriter(&trunc)
	dec, _ := zstd.NewReader(bytes.NewReader(full))
	plain, _ := io.ReadAll(dec)
	dec.Close()
	_, _ = zw.Write(plain[:1024])
	_ = zw.Close()
	s = e.put(t, "trunc", trunc.Bytes())
	if err := e.av.Restore(ctx, e.p, s); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated archive: %v", err)
	}
	// A stream whose header asks for a 64 MiB window (one raw block, made by hand) is refused
	// before anything is decoded: sailtui's archives use 1 MiB.
	tarball := plain
	hdr := 1 | len(tarball)<<3 // last block, raw
	wide := append([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (26 - 10) << 3, byte(hdr), byte(hdr >> 8), byte(hdr >> 16)}, tarball...)
	s = e.put(t, "wide", wide)
	mid := treeState(t, e.root, nil)
	if err := e.av.Restore(ctx, e.p, s); !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "window") {
		t.Errorf("archive with a 64 MiB window: %v, want ErrBadInput naming the window", err)
	}
	diffStates(t, "mount", treeState(t, e.root, nil), mid)
	noLeftovers(t, e.root)
}

// A tar that fails, mid-stream or after a complete stream, leaves no object.
func TestArchiveCreateTarFails(t *testing.T) {
	for name, create := range map[string][]string{
		"mid-stream":      {"sh", "-c", `tar -c -f - -C "$1" . | head -c 300000; exit 2`, "sh"},
		"after the end":   {"sh", "-c", `tar -c -f - -C "$1" .; echo 'tar: file changed as we read it' >&2; exit 1`, "sh"},
		"at once":         {"sh", "-c", `exit 2`, "sh"},
		"garbage to tar":  {"sh", "-c", `head -c 5000 /dev/urandom`, "sh"},
		"missing program": {"no-such-tar-here"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newArchiveEnv(t, func(h *hostExecutor) executor { return rewriteExecutor{h: h, create: create} })
			writeTree(t, e.root)
			_, err := e.av.Create(t.Context(), e.p, e.snap("s-fail"))
			if err == nil {
				t.Fatal("create succeeded")
			}
			if !strings.Contains(err.Error(), "s-fail") {
				t.Errorf("error does not name the snapshot: %v", err)
			}
			key, _ := e.av.Key(e.p.Owner, e.p.ID, "s-fail")
			if _, err := e.store.Head(t.Context(), key); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("object after a failed create: %v", err)
			}
			var files []string
			_ = filepath.WalkDir(e.objDir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, p)
				}
				return nil
			})
			if len(files) != 0 {
				t.Errorf("files left in the store: %v", files)
			}
			writable(e.root)
		})
	}
}

// Without a file-manager pod, Create refuses (no storage is no snapshot) and Restore creates
// the namespace, PVC and file manager, waits for the pod (a watch) and restores into it.
func TestArchiveRestoreCreatesStorage(t *testing.T) {
	root := t.TempDir()
	h := &hostExecutor{root: root}
	p := engine.Project{ID: "p1", Slug: "demo", Owner: "o", Status: engine.StatusRestoring}
	cfg := Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	rt := &Runtime{cfg: cfg, exec: h, core: client}
	store, err := dirstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	av := NewArchiveVolumes(rt, store, archive.SandwichOptions{})
	av.podTimeout = 20 * time.Second
	ctx := t.Context()

	if _, err := av.Create(ctx, p, engine.Snapshot{ID: "s0", ProjectID: p.ID, Owner: p.Owner}); !errors.Is(err, engine.ErrBadState) {
		t.Errorf("create without a pod: %v, want ErrBadState", err)
	}

	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "hello.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := archive.Write(ctx, src, &buf, archive.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	e := &archiveEnv{av: av, store: store, p: p}
	snap := e.put(t, "s1", buf.Bytes())

	// Play kubelet: once the file-manager Deployment exists, its pod runs.
	ns := rt.Namespace(p)
	kubelet := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if _, err := client.AppsV1().Deployments(ns).Get(ctx, FileManagerName, metav1.GetOptions{}); err == nil {
				_, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "fm-new", Namespace: ns, Labels: projectLabels(p, ComponentFileManager)},
					Status:     corev1.PodStatus{Phase: corev1.PodRunning},
				}, metav1.CreateOptions{})
				kubelet <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		kubelet <- ctx.Err()
	}()
	if err := av.Restore(ctx, p, snap); err != nil {
		t.Fatal(err)
	}
	if err := <-kubelet; err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "hello.txt")); err != nil || string(b) != "hi" {
		t.Errorf("restored file: %q %v", b, err)
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, PVCName, metav1.GetOptions{}); err != nil {
		t.Errorf("pvc: %v", err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace: %v", err)
	}
}

// The swap script finishes or clears what a crash at each point of a restore left.
func TestArchiveSwapRecovers(t *testing.T) {
	mk := func(t *testing.T, root string, files map[string]string) {
		t.Helper()
		for rel, data := range files {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	contents := func(t *testing.T, root string) string {
		var out []string
		for _, s := range treeState(t, root, nil) {
			if !strings.Contains(s, " dir ") {
				out = append(out, s[:strings.Index(s, " ")])
			}
		}
		return strings.Join(out, ",")
	}
	newTree := `"a/x","b","c"`
	oldTree := `"old1","old2/y"`
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"crash while extracting", map[string]string{"old1": "o", "old2/y": "o", ".sailtui-restore-T/a/x": "n"}, oldTree},
		{"crash in phase A", map[string]string{"old2/y": "o", ".sailtui-old-T/old1": "o",
			".sailtui-restore-T/a/x": "n", ".sailtui-restore-T/b": "n", ".sailtui-restore-T/c": "n"}, newTree},
		{"crash after phase A", map[string]string{".sailtui-old-T/old1": "o", ".sailtui-old-T/old2/y": "o",
			".sailtui-in-T/a/x": "n", ".sailtui-in-T/b": "n", ".sailtui-in-T/c": "n"}, newTree},
		{"crash in phase B", map[string]string{".sailtui-old-T/old1": "o", ".sailtui-old-T/old2/y": "o",
			"a/x": "n", ".sailtui-in-T/b": "n", ".sailtui-in-T/c": "n"}, newTree},
		{"crash removing the old tree", map[string]string{".sailtui-old-T/old2/y": "o", "a/x": "n", "b": "n", "c": "n"}, newTree},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newArchiveEnv(t, nil)
			mk(t, e.root, tc.files)
			for range 2 { // recovering twice is recovering once
				if err := e.av.script(t.Context(), "ns", "pod", "recover", ""); err != nil {
					t.Fatal(err)
				}
				if got := contents(t, e.root); got != tc.want {
					t.Errorf("after recover: %s, want %s", got, tc.want)
				}
				noLeftovers(t, e.root)
			}
		})
	}
}

// A decompression bomb in place of the object: refused before it is read when its size is not
// the recorded one, and stopped at the recorded unpacked size when it is, with nothing sent to
// the pod's tar and the tree untouched (as archive.Sandwich does).
func TestArchiveRestoreStopsZstdBomb(t *testing.T) {
	e := newArchiveEnv(t, nil)
	ctx := t.Context()
	if err := os.WriteFile(filepath.Join(e.root, "small.txt"), []byte("small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := e.av.Create(ctx, e.p, e.snap("s-bomb"))
	if err != nil {
		t.Fatal(err)
	}
	if snap.UnpackedBytes <= 0 {
		t.Fatalf("Create recorded no unpacked size: %+v", snap)
	}
	want := treeState(t, e.root, nil)
	bomb := zstdTar(t, []tarEntry{{hdr: tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Mode: 0o644, Size: 64 << 20}, data: strings.Repeat("\x00", 64<<20)}})
	if _, err := e.store.Put(ctx, snap.Location, bytes.NewReader(bomb)); err != nil {
		t.Fatal(err)
	}
	if err := e.av.Restore(ctx, e.p, snap); !errors.Is(err, engine.ErrChecksum) || !strings.Contains(err.Error(), "recorded") {
		t.Errorf("restore of a bomb of another size: %v, want a size mismatch", err)
	}
	forged := snap
	forged.SizeBytes = int64(len(bomb))
	if err := e.av.Restore(ctx, e.p, forged); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("limit of %d bytes", snap.UnpackedBytes)) {
		t.Errorf("restore of a bomb of the recorded size: %v, want it stopped at the recorded %d unpacked bytes", err, snap.UnpackedBytes)
	}
	diffStates(t, "tree after the refused restores", treeState(t, e.root, nil), want)
}
