package kubernetes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/dirstore"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/volumestest"
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

// The round trip of the Volumes contract (TestArchiveVolumesContract, through GNU tar) through
// busybox's tar and sh, the tools of a minimal file-manager image.
func TestArchiveRoundTripBusybox(t *testing.T) {
	e := newArchiveEnv(t, func(h *hostExecutor) executor { return newBusyboxExecutor(t, h) })
	ctx := t.Context()
	volumestest.WriteTree(t, e.root)
	t.Cleanup(func() { volumestest.Writable(e.root) })
	// busybox tar makes symlinks pointing up or out last, so the directories holding them get
	// the time of the restore; GNU tar restores every directory time.
	want := volumestest.TreeStateOpt(t, e.root, volumestest.ExcludedByDefault, false)
	snap, err := e.av.Create(ctx, e.p, e.snap("s-1"))
	if err != nil {
		t.Fatal(err)
	}
	if snap, err = e.av.WaitReady(ctx, snap); err != nil || snap.Status != engine.SnapshotReady {
		t.Fatalf("wait ready: %v %v", snap.Status, err)
	}
	volumestest.Writable(e.root)
	volumestest.ChangeTree(t, e.root)
	if err := e.av.Restore(ctx, e.p, snap); err != nil {
		t.Fatal(err)
	}
	volumestest.DiffStates(t, "restored", volumestest.TreeStateOpt(t, e.root, nil, false), want)
	noLeftovers(t, e.root)
	if err := e.av.Restore(ctx, e.p, snap); err != nil {
		t.Fatal(err)
	}
	volumestest.DiffStates(t, "restored twice", volumestest.TreeStateOpt(t, e.root, nil, false), want)
}

// Archives made here are restored by archive.Extract (and so by the local Sandwich), and
// archives made by archive.Write are restored here.
func TestArchiveInterop(t *testing.T) {
	e := newArchiveEnv(t, nil)
	ctx := t.Context()
	volumestest.WriteTree(t, e.root)
	want := volumestest.TreeState(t, e.root, volumestest.ExcludedByDefault)
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
	volumestest.DiffStates(t, "archive.Extract", volumestest.TreeState(t, out, nil), want)
	volumestest.Writable(out)

	// The other way: a tree written by archive.Write, restored through the pod.
	src := t.TempDir()
	volumestest.WriteTree(t, src)
	var buf bytes.Buffer
	if _, err := archive.Write(ctx, src, &buf, archive.WriteOptions{AnyLinkTarget: true}); err != nil {
		t.Fatal(err)
	}
	wantW := volumestest.TreeState(t, src, volumestest.ExcludedByDefault)
	// archive.Write sees the hard link as two files, as Create does.
	volumestest.Writable(e.root)
	if err := os.WriteFile(filepath.Join(e.root, "stale"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := e.put(t, "s-2", buf.Bytes())
	if err := e.av.Restore(ctx, e.p, s2); err != nil {
		t.Fatalf("restore of an archive.Write archive: %v", err)
	}
	volumestest.DiffStates(t, "restored archive.Write archive", volumestest.TreeState(t, e.root, nil), wantW)
	noLeftovers(t, e.root)
	volumestest.Writable(e.root)
	volumestest.Writable(src)
}

// Unlike archive.Extract, the restore through the pod keeps a hard link to an earlier file of
// the archive (a pod's tar makes them); the limits of the Volumes apply. The rest of the
// entry rules are the Volumes contract's (TestArchiveVolumesContract).
func TestArchiveRestoreHardLinksAndLimits(t *testing.T) {
	e := newArchiveEnv(t, nil)
	ctx := t.Context()
	s := e.put(t, "ok-hard", volumestest.ZstdTar(t, []volumestest.TarEntry{volumestest.Reg("a", "data"), volumestest.HardLink("b", "a")}))
	if err := e.av.Restore(ctx, e.p, s); err != nil {
		t.Fatalf("hard link to an earlier file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "b")); string(b) != "data" {
		t.Errorf("hard link restored as %q", b)
	}
	small := NewArchiveVolumes(e.rt, e.store, archive.SandwichOptions{Limits: archive.Limits{MaxBytes: 10, MaxFiles: 3}})
	reg := volumestest.Reg
	for name, entries := range map[string][]volumestest.TarEntry{
		"bytes":   {reg("a", "123456"), reg("b", "123456")},
		"entries": {reg("a", ""), reg("b", ""), reg("c", ""), reg("d", "")},
	} {
		s := e.put(t, "lim-"+name, volumestest.ZstdTar(t, entries))
		if err := small.Restore(ctx, e.p, s); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("over the %s limit: %v", name, err)
		}
	}
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
			volumestest.WriteTree(t, e.root)
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
			volumestest.Writable(e.root)
		})
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
		for _, s := range volumestest.TreeState(t, root, nil) {
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
				if err := e.av.rt.volumeScript(t.Context(), "ns", e.av.fileManagerMount("pod"), "recover", ""); err != nil {
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
