package kubernetes_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	s3store "github.com/sailtui/sailtui/backends/s3"
	"github.com/sailtui/sailtui/backends/s3/s3test"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// manifestScript prints every entry under the project, sorted: path, type and mode (%f is
// the raw st_mode), size, and the link target or the sha256 of the content, as a pod sees them.
const manifestScript = `cd /app && find . -mindepth 1 ! -name '.sailtui-*' | LC_ALL=C sort | while IFS= read -r f; do
  m=$(stat -c '%f %s' "$f")
  if [ -L "$f" ]; then x="-> $(readlink "$f")"; elif [ -f "$f" ]; then x=$(sha256sum < "$f"); x=${x%% *}; else x=-; fi
  printf '%s %s %s\n' "$f" "$m" "$x"
done`

// fillTree writes a tree through both doors a user has, files put and exec: random bytes
// (a few MB), many small files, modes, symlinks (inside and dangling), an empty directory.
func fillTree(t *testing.T, eng *engine.Engine, ref, ctr string) {
	t.Helper()
	ctx := t.Context()
	big := make([]byte, 3<<20+17)
	_, _ = rand.Read(big)
	if err := eng.WriteFile(ctx, ref, "web/blob.bin", bytes.NewReader(big)); err != nil {
		t.Fatalf("files put blob: %v", err)
	}
	for i := range 40 {
		if err := eng.WriteFile(ctx, ref, fmt.Sprintf("web/src/f%02d.txt", i), strings.NewReader(strings.Repeat("x", i*37))); err != nil {
			t.Fatalf("files put small: %v", err)
		}
	}
	script := `set -e
cd /app/web
mkdir -p empty deep/a/b/c
printf 'exec wrote this\n' > deep/a/b/c/leaf.txt
i=0; while [ $i -lt 200 ]; do printf '%s\n' $i > deep/n$i; i=$((i+1)); done
head -c 1048576 /dev/urandom > rand.bin
printf '#!/bin/sh\necho hi\n' > run.sh; chmod 0755 run.sh
printf 'secret\n' > private; chmod 0600 private
chmod 0700 deep/a
ln -s src/f01.txt link-inside
ln -s ../nowhere/at/all dangling
ln -s deep/a dirlink`
	res, err := eng.Exec(ctx, ref, ctr, engine.ExecRequest{Argv: []string{"sh", "-c", script}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec fill: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
}

// manifest is manifestScript's output from inside the container's pod, which must list at
// least min entries (fillTree makes about 300).
func manifest(t *testing.T, eng *engine.Engine, ref, ctr string, min int) string {
	t.Helper()
	res, err := eng.Exec(t.Context(), ref, ctr, engine.ExecRequest{Argv: []string{"sh", "-c", manifestScript}, MaxOutput: 8 << 20})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("manifest: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	out := string(res.Stdout)
	if strings.Count(out, "\n") < min {
		t.Fatalf("manifest has only %d entries:\n%s", strings.Count(out, "\n"), out)
	}
	return out
}

func diffManifests(t *testing.T, what, before, after string) {
	t.Helper()
	if before == after {
		return
	}
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	seen := map[string]bool{}
	for _, l := range a {
		seen[l] = true
	}
	var missing []string
	for _, l := range b {
		if !seen[l] {
			missing = append(missing, l)
		}
	}
	t.Fatalf("%s: the tree differs (%d entries before, %d after); lost or changed:\n%s", what, len(b), len(a), strings.Join(missing, "\n"))
}

// Files written through files put and exec come back identical, as a pod sees them, after a
// hibernation to a VolumeSnapshot and a wake; then after a manual snapshot's restore on the
// live project (and its safety snapshot holds the state it replaced).
func TestNodeDataSurvivesHibernateAndRestore(t *testing.T) {
	n := k8stest.StartNode(t)
	rt := newNodeRuntime(t, n)
	dataSurvives(t, rt, kubernetes.NewSnapshots(rt))
}

// The same with K8S_USE_S3_SNAPSHOTS: tar in the real file-manager pod, versitygw as the bucket.
func TestNodeDataSurvivesS3Archives(t *testing.T) {
	n := k8stest.StartNode(t)
	rt := newNodeRuntime(t, n)
	dataSurvives(t, rt, kubernetes.NewArchiveVolumes(rt, newS3Store(t), archive.SandwichOptions{}))
}

// newS3Store is an object store on a versitygw of the test's own.
func newS3Store(t *testing.T) *s3store.Store {
	t.Helper()
	srv := s3test.Start(t)
	store, err := s3store.New(t.Context(), s3store.Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region,
		PathStyle: true, Credentials: srv.Credentials()})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// startedProject is an engine over rt and vols with a started project of one container, web,
// serving its directory; the project is deleted when t ends.
func startedProject(t *testing.T, rt *kubernetes.Runtime, vols engine.Volumes, name string) (*engine.Engine, engine.Project) {
	t.Helper()
	eng, err := engine.New(engine.Config{Store: newStore(t), Runtime: rt, Volumes: vols})
	if err != nil {
		t.Fatal(err)
	}
	p, err := eng.CreateProject(t.Context(), engine.CreateRequest{Name: name, Owner: "alice@example.com",
		Containers: []engine.ContainerSpec{{Name: "web", Directory: "web", Port: 8080, Command: serveCommand}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eng.DeleteProject(context.WithoutCancel(t.Context()), p.ID) })
	if _, err := eng.StartProject(t.Context(), p.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	return eng, p
}

func dataSurvives(t *testing.T, rt *kubernetes.Runtime, vols engine.Volumes) {
	eng, p := startedProject(t, rt, vols, "Data Survives")
	ctx := t.Context()
	fillTree(t, eng, p.ID, "web")
	before := manifest(t, eng, p.ID, "web", 250)

	if _, err := eng.Hibernate(ctx, p.ID); err != nil {
		t.Fatalf("hibernate: %v", err)
	}
	if _, err := eng.Wake(ctx, p.ID); err != nil {
		t.Fatalf("wake: %v", err)
	}
	diffManifests(t, "after hibernate and wake", before, manifest(t, eng, p.ID, "web", 250))

	snap, err := eng.CreateSnapshot(ctx, p.ID, "before the change")
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if err := eng.WriteFile(ctx, p.ID, "web/src/f01.txt", strings.NewReader("changed after the snapshot\n")); err != nil {
		t.Fatal(err)
	}
	if err := eng.DeleteFile(ctx, p.ID, "web/deep"); err != nil {
		t.Fatal(err)
	}
	changed := manifest(t, eng, p.ID, "web", 40)
	res, err := eng.RestoreSnapshot(ctx, p.ID, snap.ID)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	diffManifests(t, "after the restore", before, manifest(t, eng, p.ID, "web", 250))
	if res.Safety.ID == "" {
		t.Fatalf("restore made no safety snapshot: %+v", res)
	}
	if _, err := eng.RestoreSnapshot(ctx, p.ID, res.Safety.ID); err != nil {
		t.Fatalf("restore the safety snapshot: %v", err)
	}
	diffManifests(t, "after restoring the safety snapshot", changed, manifest(t, eng, p.ID, "web", 40))
}

// Exec stdin arrives whole however the remote command treats its output streams, and files
// put of 1, 16 and 64 MiB land byte for byte.
func TestNodeWritesArriveWhole(t *testing.T) {
	n := k8stest.StartNode(t)
	rt := newNodeRuntime(t, n)
	eng, p := startedProject(t, rt, kubernetes.NewSnapshots(rt), "Whole Writes")
	ctx := t.Context()
	for _, size := range []int{1 << 20, 16 << 20, 64 << 20} {
		body := make([]byte, size)
		_, _ = rand.Read(body)
		want := fmt.Sprintf("%x", sha256.Sum256(body))
		name := fmt.Sprintf("web/put-%d.bin", size>>20)
		if err := eng.WriteFile(ctx, p.ID, name, bytes.NewReader(body)); err != nil {
			t.Fatalf("files put %d MiB: %v", size>>20, err)
		}
		res, err := eng.Exec(ctx, p.ID, "web", engine.ExecRequest{Argv: []string{"sh", "-c", `s=$(sha256sum < "$1"); echo ${s%% *}`, "sh", "/app/" + name}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("sha256sum: %v %d %s", err, res.ExitCode, res.Stderr)
		}
		if got := strings.TrimSpace(string(res.Stdout)); got != want {
			t.Errorf("files put %d MiB: sha256 in the pod %s, sent %s", size>>20, got, want)
		}
	}
}
