package kubernetes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// A service's data (a database's stand-in: the node image serving its data directory) lives
// in its own PVC, and comes back identical, as the service's pod sees it, after a hibernation
// and a wake, and after a manual snapshot of the running project is restored: with
// VolumeSnapshots and with archives through a volume pod.
func TestNodeServiceDataSurvivesSnapshots(t *testing.T) {
	n := k8stest.StartNode(t)
	rt := newNodeRuntime(t, n)
	serviceDataSurvives(t, n, rt, kubernetes.NewSnapshots(rt))
}

func TestNodeServiceDataSurvivesS3Archives(t *testing.T) {
	n := k8stest.StartNode(t)
	rt := newNodeRuntime(t, n)
	serviceDataSurvives(t, n, rt, kubernetes.NewArchiveVolumes(rt, newS3Store(t), archive.SandwichOptions{}))
}

const dbDir = "/var/lib/db"

// dbFill writes what a database would: a private directory, files of several sizes and modes,
// a symlink. $1 is the data directory.
const dbFill = `set -e
cd "$1"
mkdir -p base/1 pg_wal
chmod 0700 base
head -c 1048576 /dev/urandom > base/1/16384
i=0; while [ $i -lt 50 ]; do printf 'row %s\n' $i > base/1/r$i; i=$((i+1)); done
printf 'wal\n' > pg_wal/000001; chmod 0600 pg_wal/000001
ln -s base/1 current
echo ready > marker`

func serviceDataSurvives(t *testing.T, n *k8stest.Node, rt *kubernetes.Runtime, vols engine.Volumes) {
	ctx := t.Context()
	eng, err := engine.New(engine.Config{Store: newStore(t), Runtime: rt, Volumes: vols})
	if err != nil {
		t.Fatal(err)
	}
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "Service Data", Owner: "alice@example.com",
		Containers: []engine.ContainerSpec{
			{Name: "web", Directory: "web", Port: 8080, Command: serveCommand, MakeDir: true},
			{Name: "db", Kind: engine.KindService, Image: n.Env.Image, Port: 5432, DataPath: dbDir,
				Command: `exec sailtui devserver --dir ` + dbDir + ` --port 5432`},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eng.DeleteProject(context.WithoutCancel(t.Context()), p.ID) })
	if _, err := eng.StartProject(ctx, p.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	res, err := eng.Exec(ctx, p.ID, "db", engine.ExecRequest{Argv: []string{"sh", "-c", dbFill, "sh", dbDir}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("fill the service's volume: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	before := dbManifest(t, eng, p.ID, 55)

	hib, err := eng.Hibernate(ctx, p.ID)
	if err != nil {
		t.Fatalf("hibernate: %v", err)
	}
	snaps, err := eng.Snapshots(ctx, p.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	var held *engine.Snapshot
	for i := range snaps {
		if snaps[i].Type == engine.SnapshotHibernation {
			held = &snaps[i]
		}
	}
	if held == nil || len(held.Parts) != 1 || held.Parts[0].Name != "db" || held.Parts[0].Absent || held.Parts[0].Location == "" {
		t.Fatalf("the hibernation snapshot does not hold the service's volume: %+v (project %s)", held, hib.Status)
	}
	if _, err := eng.Wake(ctx, p.ID); err != nil {
		t.Fatalf("wake: %v", err)
	}
	diffManifests(t, "the service's data after hibernate and wake", before, dbManifest(t, eng, p.ID, 55))

	snap, err := eng.CreateSnapshot(ctx, p.ID, "before the migration")
	if err != nil {
		t.Fatalf("snapshot of the running project: %v", err)
	}
	// The service runs again after its snapshot (archives stop it for theirs).
	res, err = eng.Exec(ctx, p.ID, "db", engine.ExecRequest{Argv: []string{"sh", "-c", `cd "$1" && rm -rf base/1 && echo changed > marker`, "sh", dbDir}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("change the service's data after the snapshot: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	if _, err := eng.RestoreSnapshot(ctx, p.ID, snap.ID); err != nil {
		t.Fatalf("restore: %v", err)
	}
	diffManifests(t, "the service's data after the restore", before, dbManifest(t, eng, p.ID, 55))
}

// dbManifest is manifestScript's listing of the service's data directory, from inside its pod.
func dbManifest(t *testing.T, eng *engine.Engine, ref string, min int) string {
	t.Helper()
	script := strings.Replace(manifestScript, "cd /app", `cd "$1"`, 1)
	res, err := eng.Exec(t.Context(), ref, "db", engine.ExecRequest{Argv: []string{"sh", "-c", script, "sh", dbDir}, MaxOutput: 1 << 20})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("manifest of the service's volume: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	out := string(res.Stdout)
	if strings.Count(out, "\n") < min {
		t.Fatalf("the service's volume lists only %d entries:\n%s", strings.Count(out, "\n"), out)
	}
	return out
}

// With K8S_ALLOW_ROOT_SERVICES an official database image starts as root and owns its data as
// a user of its own, in a directory only that user may read (postgres: 999, mode 0700). The
// archives through the volume pod (root too, then) keep every owner and mode, the data
// directory's own included, across a hibernation and a wake.
func TestNodeRootServiceKeepsOwners(t *testing.T) {
	n := k8stest.StartNode(t)
	ctx := t.Context()
	// The node's image under the name of an image that starts as root.
	image := "docker.io/library/postgres:sailtui-node-test"
	if err := n.TagImage(ctx, n.Env.Image, image); err != nil {
		t.Fatal(err)
	}
	rt := newNodeRuntime(t, n, func(c *kubernetes.Config) { c.AllowRootServices = true })
	eng, err := engine.New(engine.Config{Store: newStore(t), Runtime: rt,
		Volumes: kubernetes.NewArchiveVolumes(rt, newS3Store(t), archive.SandwichOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "Root Service", Owner: "alice@example.com",
		Containers: []engine.ContainerSpec{{Name: "db", Kind: engine.KindService, Image: image, Port: 5432, DataPath: dbDir,
			Command: `exec sailtui devserver --dir ` + dbDir + ` --port 5432`}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eng.DeleteProject(context.WithoutCancel(t.Context()), p.ID) })
	if _, err := eng.StartProject(ctx, p.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	own := `set -e
cd "$1"
mkdir -p base/1 shared
echo data > base/1/f; echo cfg > shared/conf; echo mine > mine
chown -R 999:999 . ; chown 0:999 shared/conf; chown 1234:5678 mine
chmod 0700 . base; chmod 0640 shared/conf`
	res, err := eng.Exec(ctx, p.ID, "db", engine.ExecRequest{Argv: []string{"sh", "-c", own, "sh", dbDir}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("own the data as root: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	owners := func() string {
		t.Helper()
		res, err := eng.Exec(ctx, p.ID, "db", engine.ExecRequest{Argv: []string{"sh", "-c",
			`cd "$1" && find . | LC_ALL=C sort | while IFS= read -r f; do stat -c '%n %a %u:%g' "$f"; done`, "sh", dbDir}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("list owners: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
		}
		return string(res.Stdout)
	}
	before := owners()
	if !strings.Contains(before, ". 700 999:999") || !strings.Contains(before, "./mine 644 1234:5678") {
		t.Fatalf("the service could not own its data as the test meant:\n%s", before)
	}
	if _, err := eng.Hibernate(ctx, p.ID); err != nil {
		t.Fatalf("hibernate: %v", err)
	}
	if _, err := eng.Wake(ctx, p.ID); err != nil {
		t.Fatalf("wake: %v", err)
	}
	diffManifests(t, "owners and modes after hibernate and wake", before, owners())
}
