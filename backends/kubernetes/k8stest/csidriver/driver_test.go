package csidriver

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// served is a driver on a unix socket under a test's temporary directory.
type served struct {
	dir, root, sock string
	drv             *Driver
}

// serve starts a driver with its root under dir (a fresh temporary directory when ""); the
// test's end stops it and unmounts everything under dir, also after a failure.
func serve(t *testing.T, dir string) *served {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the CSI driver's tests need root (bind mounts, ownership through snapshots); run them as root, as make test does")
	}
	if _, err := exec.LookPath("tar"); err != nil {
		t.Fatal("the CSI driver needs GNU tar (make deps):", err)
	}
	if dir == "" {
		dir = t.TempDir()
		// Cleanups run last-registered first: this runs before TempDir's removal, which
		// would otherwise remove files through a bind mount left by a failed test.
		t.Cleanup(func() { unmountUnder(t, dir) })
	}
	s := &served{dir: dir, root: filepath.Join(dir, "root"), sock: filepath.Join(dir, "csi.sock")}
	d, err := New(Config{Name: DefaultName, Version: "test", NodeID: "node-1", Root: s.root})
	if err != nil {
		t.Fatal(err)
	}
	s.drv = d
	lis, err := ListenUnix(s.sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("driver: %v", err)
		}
	})
	return s
}

// unmountUnder unmounts every mount point under dir, deepest first.
func unmountUnder(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Errorf("read mount table: %v", err)
		return
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 {
			if p := unescapeMountPath(fields[4]); strings.HasPrefix(p, dir+"/") {
				points = append(points, p)
			}
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		if err := unix.Unmount(points[i], unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", points[i], err)
		}
	}
}

var mountCap = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}

// TestSnapshotRestoreKeepsTheTree: a volume restored from a snapshot is the snapshotted tree
// with its owners, modes, hard links, symlinks, sparse files and extended attributes, and
// what was written after the snapshot is not in it.
func TestSnapshotRestoreKeepsTheTree(t *testing.T) {
	ctx := context.Background()
	s := serve(t, "")
	d := s.drv
	vol, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "src", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	id := vol.GetVolume().GetVolumeId()
	// Written through a published target, as a pod writes.
	target := filepath.Join(s.dir, "pod", "mount")
	if _, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: mountCap}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := func(rel string) string { return filepath.Join(target, rel) }
	must(os.MkdirAll(p("src/deep"), 0o750))
	must(os.WriteFile(p("src/deep/file"), []byte("hello"), 0o640))
	must(os.Chown(p("src/deep/file"), 1234, 5678))
	must(os.Chown(p("src"), 1000, 1000))
	must(unix.Chmod(p("src"), 0o2775)) // os.Chmod would drop the raw setgid bit
	must(os.Link(p("src/deep/file"), p("src/hardlink")))
	must(os.Symlink("deep/file", p("src/symlink")))
	must(unix.Setxattr(p("src/deep/file"), "user.sailtui", []byte("kept"), 0))
	sparse, err := os.Create(p("sparse"))
	must(err)
	must(sparse.Truncate(64 << 20))
	_, err = sparse.WriteAt([]byte("end"), 64<<20-3)
	must(err)
	must(sparse.Close())

	snap, err := d.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: id})
	must(err)
	if !snap.GetSnapshot().GetReadyToUse() || snap.GetSnapshot().GetSizeBytes() != 1<<20 {
		t.Fatalf("snapshot %+v: want ready with the volume's size as its restore size", snap.GetSnapshot())
	}
	must(os.WriteFile(p("after"), []byte("not in the snapshot"), 0o644))

	restored, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "restored", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}})
	must(err)
	r := func(rel string) string { return filepath.Join(d.volumeDir(restored.GetVolume().GetVolumeId()), rel) }

	if b, err := os.ReadFile(r("src/deep/file")); err != nil || string(b) != "hello" {
		t.Errorf("restored file: %q, %v", b, err)
	}
	var st, st2 unix.Stat_t
	must(unix.Lstat(r("src/deep/file"), &st))
	if st.Uid != 1234 || st.Gid != 5678 || st.Mode&0o7777 != 0o640 {
		t.Errorf("restored file: uid %d gid %d mode %o, want 1234 5678 640", st.Uid, st.Gid, st.Mode&0o7777)
	}
	must(unix.Lstat(r("src"), &st2))
	if st2.Uid != 1000 || st2.Mode&0o7777 != 0o2775 {
		t.Errorf("restored directory: uid %d mode %o, want 1000 2775", st2.Uid, st2.Mode&0o7777)
	}
	must(unix.Lstat(r("src/hardlink"), &st2))
	if st2.Ino != st.Ino || st.Nlink != 2 {
		t.Errorf("hard link: inode %d vs %d, %d links; want one inode with 2 links", st2.Ino, st.Ino, st.Nlink)
	}
	if l, err := os.Readlink(r("src/symlink")); err != nil || l != "deep/file" {
		t.Errorf("symlink: %q, %v", l, err)
	}
	buf := make([]byte, 16)
	if n, err := unix.Getxattr(r("src/deep/file"), "user.sailtui", buf); err != nil || string(buf[:n]) != "kept" {
		t.Errorf("xattr: %q, %v", buf[:max(n, 0)], err)
	}
	must(unix.Stat(r("sparse"), &st))
	if st.Size != 64<<20 || st.Blocks*512 > 1<<20 {
		t.Errorf("sparse file: %d bytes in %d blocks; want 64 MiB in a few blocks", st.Size, st.Blocks)
	}
	if _, err := os.Stat(r("after")); !os.IsNotExist(err) {
		t.Errorf("a file written after the snapshot is in the restored volume (%v)", err)
	}

	// A published volume is not deleted under its pod; unpublished, it is.
	if _, err := d.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err == nil {
		t.Error("DeleteVolume of a published volume succeeded")
	}
	_, err = d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	must(err)
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("target after unpublish: %v, want it gone", err)
	}
	_, err = d.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	must(err)
	// The snapshot outlives its volume (hibernation deletes the volume after the snapshot).
	list, err := d.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()})
	must(err)
	if len(list.GetEntries()) != 1 {
		t.Errorf("snapshot after its volume's deletion: %d entries, want 1", len(list.GetEntries()))
	}
}

// TestRestartKeepsState: a driver started again on the same root has the volumes, snapshots
// and publications of the first, and removes what an interrupted operation left.
func TestRestartKeepsState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Cleanup(func() { unmountUnder(t, dir) })
	first := serve(t, dir)
	vol, err := first.drv.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mountCap}})
	if err != nil {
		t.Fatal(err)
	}
	id := vol.GetVolume().GetVolumeId()
	target := filepath.Join(dir, "target")
	if _, err := first.drv.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: mountCap}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := first.drv.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: id})
	if err != nil {
		t.Fatal(err)
	}
	// What a crash in the middle of a create leaves: a directory and a tar without records.
	if err := os.Mkdir(filepath.Join(first.root, "volumes", "half-made"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(first.root, "snapshots", "half-made.tar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	again, err := New(Config{Name: DefaultName, NodeID: "node-1", Root: first.root})
	if err != nil {
		t.Fatal(err)
	}
	// The same name answers with the same volume: a provisioner's retry after the restart.
	same, err := again.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mountCap}})
	if err != nil || same.GetVolume().GetVolumeId() != id {
		t.Fatalf("CreateVolume after restart: %v, %v; want volume %s", same, err, id)
	}
	if v := again.volumes[id]; v == nil || len(v.Published) != 1 {
		t.Errorf("volume after restart: %+v, want one publication", v)
	}
	if _, ok := again.snapshots[snap.GetSnapshot().GetSnapshotId()]; !ok {
		t.Error("snapshot lost across the restart")
	}
	for _, p := range []string{"volumes/half-made", "snapshots/half-made.tar"} {
		if _, err := os.Stat(filepath.Join(first.root, p)); !os.IsNotExist(err) {
			t.Errorf("%s after restart: %v, want it removed", p, err)
		}
	}
	if _, err := again.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if _, err := again.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatal(err)
	}
}

// TestHeldSnapshots: a snapshot of a class with HoldParameter is refused as unavailable (the
// sidecar retries it), and nothing is cut.
func TestHeldSnapshots(t *testing.T) {
	ctx := context.Background()
	d := serve(t, "").drv
	vol, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mountCap}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: vol.GetVolume().GetVolumeId(),
		Parameters: map[string]string{HoldParameter: "true"}})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("held snapshot: %v, want Unavailable", err)
	}
	if len(d.snapshots) != 0 {
		t.Errorf("a held snapshot was cut: %d snapshots", len(d.snapshots))
	}
}
