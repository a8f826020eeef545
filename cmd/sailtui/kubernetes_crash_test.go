package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
)

// kubeCrashEnv: DEPLOYMENT_MODE=kubernetes on a control plane of its own. There is no data
// plane, so "the tree" is what the API server holds of the project — its objects and their
// replica counts — and "serving" is both dev Deployments available with the PVC made from the
// newest hibernation snapshot (its pre-provisioned content carries that snapshot's handle).
func kubeCrashEnv(t *testing.T, _ string) crashEnv {
	c, cl := kubeCLI(t)
	return crashEnv{
		c: c, owner: "tester",
		setup: func(t *testing.T, c *cli, slug string) {
			c.ok("project", "create", slug, "--owner", "tester")
			c.ok("container", "add", slug, "web", "--dir", "web", "--port", "5173", "--command", "npm run dev")
			c.ok("container", "add", slug, "api", "--dir", "api", "--port", "8000", "--command", "uvicorn main:app")
			c.ok("project", "start", slug)
		},
		digest: func(t *testing.T, slug string) map[string]string {
			return kubeObjects(t, cl, c, slug)
		},
		serving: func(t *testing.T, c *cli, slug string) {
			deadline := time.Now().Add(60 * time.Second)
			for {
				cs := c.containers(slug)
				if cs["web"].Status == "running" && cs["api"].Status == "running" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("containers not running: %+v", cs)
				}
				time.Sleep(300 * time.Millisecond)
			}
			checkLineage(t, cl, c, slug)
		},
	}
}

// kubeObjects describes the project's objects in its namespace, so two states can be compared.
func kubeObjects(t *testing.T, cl *k8stest.Cluster, c *cli, slug string) map[string]string {
	t.Helper()
	ctx := t.Context()
	p, _ := c.stored(slug)
	ns := "proj-" + p.ID
	out := map[string]string{}
	deps, err := cl.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		out["deployment/"+d.Name] = fmt.Sprintf("replicas=%d image=%s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
	svcs, err := cl.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		out["service/"+s.Name] = fmt.Sprint(s.Spec.Ports[0].Port)
	}
	ings, err := cl.Client.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ings.Items {
		out["ingress/"+i.Name] = i.Spec.Rules[0].Host
	}
	pvcs, err := cl.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pvc := range pvcs.Items {
		out["pvc/"+pvc.Name] = pvc.Spec.Resources.Requests.Storage().String()
	}
	if _, err := cl.Client.NetworkingV1().NetworkPolicies(ns).Get(ctx, "project-isolation", metav1.GetOptions{}); err == nil {
		out["networkpolicy"] = "present"
	}
	return out
}

// checkLineage checks that a woken project's PVC comes from its newest hibernation snapshot.
func checkLineage(t *testing.T, cl *k8stest.Cluster, c *cli, slug string) {
	t.Helper()
	ctx := t.Context()
	var snaps []struct {
		ID, Type, Location string
		CreatedAt          time.Time `json:"created_at"`
	}
	c.json(&snaps, "snapshot", "ls", slug, "--all")
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].CreatedAt.After(snaps[j].CreatedAt) })
	var loc string
	for _, s := range snaps {
		if s.Type == "hibernation" && strings.Count(s.Location, "/") == 2 {
			loc = s.Location
			break
		}
	}
	if loc == "" {
		return // never hibernated yet
	}
	p, _ := c.stored(slug)
	ns := "proj-" + p.ID
	pvc, err := cl.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "project-storage", metav1.GetOptions{})
	if err != nil || pvc.Spec.DataSource == nil {
		t.Fatalf("pvc of a woken project: %v %+v", err, pvc)
	}
	vs, err := cl.Snapshots.SnapshotV1().VolumeSnapshots(ns).Get(ctx, pvc.Spec.DataSource.Name, metav1.GetOptions{})
	if err != nil || vs.Spec.Source.VolumeSnapshotContentName == nil {
		t.Fatalf("the PVC's source VolumeSnapshot %s: %v", pvc.Spec.DataSource.Name, err)
	}
	pre, err := cl.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, *vs.Spec.Source.VolumeSnapshotContentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := cl.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, loc[strings.LastIndex(loc, "/")+1:], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("content of the newest hibernation snapshot: %v", err)
	}
	if orig.Status == nil || orig.Status.SnapshotHandle == nil || pre.Spec.Source.SnapshotHandle == nil ||
		*pre.Spec.Source.SnapshotHandle != *orig.Status.SnapshotHandle {
		t.Fatalf("the PVC is not made from the newest hibernation snapshot (%s)", loc)
	}
}

// kubeNodeCrashEnv: DEPLOYMENT_MODE=kubernetes on the run's real node (real pods, snapshots
// that copy real data). The tree is the project's files as its pod sees them: paths, modes,
// sizes, link targets and SHA-256, listed from inside the dev container.
func kubeNodeCrashEnv(t *testing.T, _ string) crashEnv {
	n := k8stest.StartNode(t)
	c := newCLI(t)
	c.env = []string{"DEPLOYMENT_MODE=kubernetes", "KUBECONFIG=" + n.Env.Kubeconfig,
		"K8S_STORAGE_CLASS=" + n.Env.StorageClass, "K8S_SNAPSHOT_CLASS=" + n.Env.SnapshotClass,
		"DEVSERVER_IMAGE=" + n.Env.Image, "K8S_PVC_SIZE=1Gi", "APP_DOMAIN=sail.test",
		"K8S_SNAPSHOT_READY_TIMEOUT_SECONDS=60"}
	var slugs []string
	t.Cleanup(func() {
		// The node serves the whole run: take this test's pods off it.
		for _, slug := range slugs {
			if p, _ := c.stored(slug); p.ID != "" {
				_ = n.Client.CoreV1().Namespaces().Delete(context.Background(), "proj-"+p.ID, metav1.DeleteOptions{})
			}
		}
	})
	return crashEnv{
		c: c, owner: "tester",
		setup: func(t *testing.T, c *cli, slug string) {
			slugs = append(slugs, slug)
			c.ok("project", "create", slug, "--owner", "tester")
			c.ok("container", "add", slug, "web", "--dir", "web", "--port", "8080", "--command", `exec sailtui devserver --port "$PORT"`)
			c.ok("project", "start", slug)
			if r := c.runIn(strings.NewReader("put through files put\n"), nil, "files", "put", slug, "web/put.txt"); r.code != 0 {
				t.Fatalf("files put: exit %d: %s", r.code, r.stderr)
			}
			c.ok("exec", slug, "web", "--", "sh", "-c", `set -e; mkdir -p deep/a empty; printf 'x\n' > deep/a/leaf
i=0; while [ $i -lt 50 ]; do echo $i > deep/n$i; i=$((i+1)); done
head -c 300000 /dev/urandom > rand.bin; chmod 0600 rand.bin; ln -s deep/a link; ln -s ../gone dangling`)
		},
		digest: func(t *testing.T, slug string) map[string]string {
			out := c.ok("exec", slug, "web", "--", "sh", "-c", `cd .. && find . -mindepth 1 ! -name '.sailtui-*' | LC_ALL=C sort | while IFS= read -r f; do
  m=$(stat -c '%f %s' "$f")
  if [ -L "$f" ]; then x="-> $(readlink "$f")"; elif [ -f "$f" ]; then x=$(sha256sum < "$f"); x=${x%% *}; else x=-; fi
  printf '%s %s %s\n' "$f" "$m" "$x"
done`)
			m := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				path, rest, _ := strings.Cut(line, " ")
				m[path] = rest
			}
			if len(m) < 55 {
				t.Fatalf("the pod sees only %d entries:\n%s", len(m), out)
			}
			return m
		},
		serving: func(t *testing.T, c *cli, slug string) {
			deadline := time.Now().Add(2 * time.Minute)
			for c.containers(slug)["web"].Status != "running" {
				if time.Now().After(deadline) {
					t.Fatalf("web not running: %+v", c.containers(slug))
				}
				time.Sleep(300 * time.Millisecond)
			}
		},
	}
}
