package docker

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

func volumeConfig(t *testing.T, cli *client.Client) Config {
	t.Helper()
	cfg := testConfig(t, cli)
	cfg.Volumes = true
	return cfg
}

// TestVolumeProject: with Config.Volumes a project's files live in one named volume, labelled
// for compose and for cleanup, mounted at /app (nocopy) in every container of the project, and
// declared external in a compose file that compose-go loads and docker-compose lists; no host
// directory is made. Hibernation through the archive sandwich leaves no container, network or
// volume behind, and the wake brings back the same bytes, which the containers can change.
func TestVolumeProject(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	cfg := volumeConfig(t, cli)
	r := newTestRuntime(t, cfg)
	store := &memStore{}
	vols := archive.NewSandwich(store, r, archive.SandwichOptions{})
	pr := newProject(t, r, "vol")
	greeting := map[string]string{"GREETING": "price $5"} // what checkComposeFile expects
	web, _ := pr.serve("web", "web", greeting, "api")
	api, _ := pr.serve("api", "api", nil)
	ctx := t.Context()

	name := cfg.NetworkPrefix + "-" + pr.p.Slug
	vi, err := cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if err != nil {
		t.Fatalf("the project volume %s: %v", name, err)
	}
	for k, v := range map[string]string{
		"com.docker.compose.project": pr.p.Slug,
		"com.docker.compose.volume":  "app",
		LabelProjectID:               pr.p.ID,
		LabelProject:                 pr.p.Slug,
		LabelManaged:                 "true",
		dockertest.Label:             cfg.Labels[dockertest.Label],
	} {
		if got := vi.Volume.Labels[k]; got != v {
			t.Errorf("volume label %s = %q, want %q", k, got, v)
		}
	}
	if got := r.StorageDir(pr.p); got != vi.Volume.Mountpoint || got == "" {
		t.Errorf("StorageDir %q, want the volume's mountpoint %q", got, vi.Volume.Mountpoint)
	}
	if _, err := os.Stat(filepath.Join(cfg.ProjectsDir, "alice", pr.p.Slug)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a host directory was made in volume mode: %v", err)
	}
	for _, c := range []string{"web", "api"} {
		ins, err := cli.ContainerInspect(ctx, pr.p.Slug+"-"+c, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatalf("inspect %s: %v", c, err)
		}
		ms := ins.Container.Mounts
		if len(ms) != 1 || ms[0].Type != mount.TypeVolume || ms[0].Name != name || ms[0].Destination != "/app" {
			t.Errorf("%s mounts %+v, want volume %s at /app", c, ms, name)
		}
		hm := ins.Container.HostConfig.Mounts
		if len(hm) != 1 || hm[0].VolumeOptions == nil || !hm[0].VolumeOptions.NoCopy {
			t.Errorf("%s host config mounts %+v, want nocopy", c, hm)
		}
	}
	// One volume for the project: what one container writes, the other and the console see.
	pr.exec(api, "echo shared > ../shared.txt")
	if res := pr.exec(web, "cat ../shared.txt"); string(res.Stdout) != "shared\n" {
		t.Errorf("web reads %q of what api wrote", res.Stdout)
	}
	var b strings.Builder
	if err := r.ReadFile(ctx, pr.p, "shared.txt", &b); err != nil || b.String() != "shared\n" {
		t.Errorf("ReadFile of what a container wrote: %q, %v", b.String(), err)
	}
	checkComposeFile(t, r, pr, []engine.Container{api, web})
	desc, err := r.Describe(ctx, pr.p, pr.cs)
	if err != nil || !strings.Contains(desc, "volume: "+name+" at "+vi.Volume.Mountpoint) {
		t.Errorf("Describe does not show the volume (%v):\n%s", err, desc)
	}

	// Hibernate: snapshot, verify, destroy.
	pr.exec(web, "mkdir -p gen empty/d && head -c 100000 /bin/busybox > gen/blob && ln -s gen/blob link && chmod 600 gen/blob")
	before := treeDigest(t, r.StorageDir(pr.p))
	snap := pr.hibernate(vols, "hib1")
	if _, err := cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("volume %s after DestroyProject: %v", name, err)
	}
	if _, err := os.Stat(vi.Volume.Mountpoint); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("volume directory %s after DestroyProject: %v", vi.Volume.Mountpoint, err)
	}
	f := client.Filters{}.Add("label", LabelProjectID+"="+pr.p.ID)
	vl, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil || len(vl.Items) != 0 {
		t.Errorf("volumes of the project after DestroyProject: %v, %v", vl.Items, err)
	}
	nl, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil || len(nl.Items) != 0 {
		t.Errorf("networks of the project after DestroyProject: %v, %v", nl.Items, err)
	}
	cl, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil || len(cl.Items) != 0 {
		t.Errorf("containers of the project after DestroyProject: %v, %v", cl.Items, err)
	}
	if ok, err := r.ProjectExists(ctx, pr.p); ok || err != nil {
		t.Errorf("ProjectExists after DestroyProject = %v, %v; want false, nil", ok, err)
	}
	if d := r.StorageDir(pr.p); d != "" {
		t.Errorf("StorageDir with no volume = %q, want \"\"", d)
	}
	// A restore with no volume has nowhere to go: it must not make a directory of its own.
	if err := vols.Restore(ctx, pr.p, snap); err == nil {
		t.Fatalf("Restore with no volume succeeded")
	}
	if _, err := os.Stat(filepath.Dir(vi.Volume.Mountpoint)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Restore with no volume made %s: %v", filepath.Dir(vi.Volume.Mountpoint), err)
	}

	// Wake: a new volume, the snapshot swapped in.
	pr.wake(vols, snap, before)
	checkVolumeDirClean(t, r, pr.p)
	pr.cs = nil
	web, _ = pr.serve("web", "web", greeting, "api")
	api, _ = pr.serve("api", "api", nil)
	if res := pr.exec(web, "echo more >> gen/blob && echo new > gen/new && rm link && echo changed > index.html"); res.ExitCode != 0 {
		t.Errorf("the container cannot change its restored files: exit %d, %s", res.ExitCode, res.Stderr)
	}
	checkComposeFile(t, r, pr, []engine.Container{api, web})

	// Restore over the live volume: its contents are replaced by the snapshot's.
	if err := r.StopProject(ctx, pr.p, pr.cs); err != nil {
		t.Fatalf("StopProject: %v", err)
	}
	if err := vols.Restore(ctx, pr.p, snap); err != nil {
		t.Fatalf("Restore over a live volume: %v", err)
	}
	if after := treeDigest(t, r.StorageDir(pr.p)); !slices.Equal(after, before) {
		t.Errorf("tree restored over the live volume differs:\nbefore %v\nafter  %v", before, after)
	}
	checkVolumeDirClean(t, r, pr.p)

	// A snapshot that does not verify leaves the volume's contents as they are (invariant 1).
	pr.write("after-restore.txt", "keep me\n")
	kept := treeDigest(t, r.StorageDir(pr.p))
	store.mu.Lock()
	obj := store.m[snap.Location]
	bad := slices.Clone(obj)
	bad[len(bad)/2] ^= 0xff
	store.m[snap.Location] = bad
	store.mu.Unlock()
	if err := vols.Restore(ctx, pr.p, snap); err == nil {
		t.Fatalf("Restore of a corrupted archive succeeded")
	}
	if after := treeDigest(t, r.StorageDir(pr.p)); !slices.Equal(after, kept) {
		t.Errorf("a failed restore changed the volume:\nbefore %v\nafter  %v", kept, after)
	}
	checkVolumeDirClean(t, r, pr.p)
}

// checkVolumeDirClean: the volume's own directory holds _data and nothing a restore left.
func checkVolumeDirClean(t *testing.T, r *Runtime, p engine.Project) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(r.StorageDir(p)))
	if err != nil {
		t.Fatalf("read the volume's directory: %v", err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"_data"}) {
		t.Errorf("the volume's directory holds %v, want [_data]", names)
	}
}

// TestVolumeUnreachable: a volume whose directory is not on this machine (a daemon elsewhere,
// or no access to its root directory) makes every file operation fail with an error that says
// what to do, and StorageDir "", so the sandwich neither snapshots nor restores somewhere else.
func TestVolumeUnreachable(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	r := newTestRuntime(t, volumeConfig(t, cli))
	vols := archive.NewSandwich(&memStore{}, r, archive.SandwichOptions{})
	pr := newProject(t, r, "far")
	pr.write("a.txt", "a\n")
	ctx := t.Context()
	dir := r.StorageDir(pr.p)
	// As seen from a machine that is not the Docker host: the mountpoint is not there.
	moved := dir + "-elsewhere"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Rename(moved, dir); err != nil {
			t.Errorf("put the volume's directory back: %v", err)
		}
	}()
	wantHelp := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "on the Docker host") || !strings.Contains(err.Error(), "USE_DOCKER_VOLUMES=false") {
			t.Errorf("%s: %v; want an error naming the Docker host and USE_DOCKER_VOLUMES", what, err)
		}
		if errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%s: %v must not say the project has no storage", what, err)
		}
	}
	wantHelp("ReadFile", r.ReadFile(ctx, pr.p, "a.txt", io.Discard))
	wantHelp("WriteFile", r.WriteFile(ctx, pr.p, "b.txt", strings.NewReader("b")))
	_, err := r.ListFiles(ctx, pr.p, "")
	wantHelp("ListFiles", err)
	_, err = r.ProjectExists(ctx, pr.p)
	wantHelp("ProjectExists", err)
	wantHelp("EnsureProject", r.EnsureProject(ctx, pr.p))
	_, err = r.StartContainer(ctx, pr.p, engine.Container{ProjectID: pr.p.ID, Name: "web"}, engine.StartSpec{Command: serveCommand})
	wantHelp("StartContainer", err)
	if d := r.StorageDir(pr.p); d != "" {
		t.Errorf("StorageDir of an unreachable volume = %q, want \"\"", d)
	}
	if _, err := vols.Create(ctx, pr.p, engine.Snapshot{ID: "s1", ProjectID: pr.p.ID, Owner: pr.p.Owner}); err == nil {
		t.Errorf("snapshot of an unreachable volume succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something made %s: %v", dir, err)
	}
	if desc, err := r.Describe(ctx, pr.p, nil); err != nil || !strings.Contains(desc, "not usable from here") {
		t.Errorf("Describe: %v\n%s", err, desc)
	}

	for _, v := range []volume.Volume{
		{Name: "x", Driver: "local", Mountpoint: "relative/_data"},
		{Name: "x", Driver: "local", Mountpoint: "/nonexistent/volumes/x/_data"},
	} {
		_, err := usableDir(&v)
		wantHelp("usableDir("+v.Mountpoint+")", err)
	}
	_, err = usableDir(&volume.Volume{Name: "x", Driver: "nfs-plugin", Mountpoint: dir})
	if err == nil || !strings.Contains(err.Error(), "local volumes without options") {
		t.Errorf("a volume of another driver: %v", err)
	}
}

// TestVolumeBadInput: a prefix no volume name can start with, a volume of the same name that
// is another project's, and a project whose files are in the storage of the other mode are
// refused with errors that say what to do, and nothing of them is removed.
func TestVolumeBadInput(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	ctx := t.Context()

	cfg := volumeConfig(t, cli)
	cfg.NetworkPrefix = "bad prefix"
	if _, err := New(cfg); !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "bad prefix") {
		t.Errorf("New with prefix %q: %v, want ErrBadInput naming it", cfg.NetworkPrefix, err)
	}

	cfg = volumeConfig(t, cli)
	r := newTestRuntime(t, cfg)
	p := engine.Project{ID: "id-mine", Slug: "taken-" + cfg.Labels[dockertest.Label], Owner: "alice"}
	name := r.volumeName(p)
	if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: map[string]string{
		dockertest.Label: cfg.Labels[dockertest.Label], LabelProjectID: "id-someone-else",
	}}); err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureProject(ctx, p); !errors.Is(err, engine.ErrExists) || !strings.Contains(err.Error(), "docker volume rm "+name) {
		t.Errorf("EnsureProject over another project's volume: %v", err)
	}
	if _, err := r.ProjectExists(ctx, p); !errors.Is(err, engine.ErrExists) {
		t.Errorf("ProjectExists with another project's volume: %v", err)
	}
	if err := r.WriteFile(ctx, p, "x", strings.NewReader("x")); !errors.Is(err, engine.ErrExists) {
		t.Errorf("WriteFile into another project's volume: %v", err)
	}
	if err := r.DestroyProject(ctx, p, nil); err != nil {
		t.Errorf("DestroyProject: %v", err)
	}
	if _, err := cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err != nil {
		t.Errorf("DestroyProject removed another project's volume: %v", err)
	}

	// Host directories first, then volumes on the same state: the files stay where they are.
	hostCfg := cfg
	hostCfg.Volumes = false
	host := newTestRuntime(t, hostCfg)
	hp := engine.Project{ID: "id-host", Slug: "hostmade-" + cfg.Labels[dockertest.Label], Owner: "alice"}
	t.Cleanup(func() { _ = host.DestroyProject(context.Background(), hp, nil) })
	if err := host.EnsureProject(ctx, hp); err != nil {
		t.Fatal(err)
	}
	if err := host.WriteFile(ctx, hp, "a.txt", strings.NewReader("a\n")); err != nil {
		t.Fatal(err)
	}
	wantMode := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, engine.ErrBadState) || !strings.Contains(err.Error(), "USE_DOCKER_VOLUMES") || !strings.Contains(err.Error(), "hibernate") {
			t.Errorf("%s: %v; want ErrBadState telling how to move the files", what, err)
		}
	}
	wantMode("EnsureProject in volume mode of a project in a host directory", r.EnsureProject(ctx, hp))
	_, err := r.ProjectExists(ctx, hp)
	wantMode("ProjectExists in volume mode of a project in a host directory", err)
	wantMode("ReadFile in volume mode of a project in a host directory", r.ReadFile(ctx, hp, "a.txt", io.Discard))
	if _, err := cli.VolumeInspect(ctx, r.volumeName(hp), client.VolumeInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("a volume was made for a project in a host directory: %v", err)
	}

	// And the other way round.
	vp := engine.Project{ID: "id-vol", Slug: "volmade-" + cfg.Labels[dockertest.Label], Owner: "alice"}
	t.Cleanup(func() { _ = r.DestroyProject(context.Background(), vp, nil) })
	if err := r.EnsureProject(ctx, vp); err != nil {
		t.Fatal(err)
	}
	wantMode("EnsureProject with host directories of a project in a volume", host.EnsureProject(ctx, vp))
	// Not "no storage": a start would take that for storage lost and fail the project.
	_, err = host.ProjectExists(ctx, vp)
	wantMode("ProjectExists with host directories of a project in a volume", err)
	if _, err := os.Stat(host.StorageDir(vp)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a host directory was made for a project in a volume: %v", err)
	}
}
