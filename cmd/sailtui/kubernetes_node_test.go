package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
)

// nodeCLI is the command line in kubernetes mode on the run's real node, with the node's
// image unless image says otherwise; the projects' namespaces go when t ends.
func nodeCLI(t *testing.T, image string) (*cli, *k8stest.Node) {
	t.Helper()
	n := k8stest.StartNode(t)
	if image == "" {
		image = n.Env.Image
	}
	c := newCLI(t)
	c.env = []string{"DEPLOYMENT_MODE=kubernetes", "KUBECONFIG=" + n.Env.Kubeconfig,
		"K8S_STORAGE_CLASS=" + n.Env.StorageClass, "K8S_SNAPSHOT_CLASS=" + n.Env.SnapshotClass,
		"DEVSERVER_IMAGE=" + image, "K8S_PVC_SIZE=1Gi", "APP_DOMAIN=sail.test"}
	t.Cleanup(func() {
		var ps []jsonProject
		if r := c.run("projects", "ls", "-o", "json"); r.code == 0 {
			_ = json.Unmarshal([]byte(r.stdout), &ps)
		}
		for _, p := range ps {
			_ = n.Client.CoreV1().Namespaces().Delete(context.Background(), "proj-"+p.ID, metav1.DeleteOptions{})
		}
	})
	return c, n
}

// Why a pod is stuck is shown where an operator looks: `containers ls` (its status column and
// the JSON detail) and `project describe` — an image that cannot be pulled, a command that
// keeps exiting.
func TestKubernetesNodeStuckPodsShown(t *testing.T) {
	t.Parallel()
	c, _ := nodeCLI(t, "")
	slug := "stuck-" + randSuffix(t)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "quitter", "--dir", "q", "--port", "8080", "--command", "echo bye; exit 3")
	c.ok("project", "start", slug)
	waitDetail(t, c, slug, "quitter", "exited", "exited")

	// An image nobody can pull: the node sends every pull to a closed port.
	bad, _ := nodeCLI(t, "sailtui-test-absent:1")
	slug2 := "nopull-" + randSuffix(t)
	bad.ok("project", "create", slug2)
	bad.ok("container", "add", slug2, "web", "--dir", "web", "--port", "8080", "--command", "sleep 1000")
	bad.ok("project", "start", slug2)
	waitDetail(t, bad, slug2, "web", "starting", "Image")
	if table := bad.ok("containers", "ls", slug2); !strings.Contains(table, "Image") {
		t.Errorf("containers ls does not say why web is stuck:\n%s", table)
	}
	if desc := bad.ok("project", "describe", slug2); !strings.Contains(desc, "Image") {
		t.Errorf("project describe does not say why web is stuck:\n%s", desc)
	}
	// An exec into it fails at once, saying why, instead of waiting for a pod that cannot come.
	start := time.Now()
	if r := bad.run("exec", slug2, "web", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "Image") || time.Since(start) > 30*time.Second {
		t.Errorf("exec into a pod that cannot pull its image: exit %d after %v: %s", r.code, time.Since(start).Round(time.Second), r.stderr)
	}
}

// waitDetail waits until container ctr of slug is in state with a detail containing want.
func waitDetail(t *testing.T, c *cli, slug, ctr, state, want string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := c.containers(slug)[ctr]
		if got.Status == state && strings.Contains(got.Detail, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: %+v, want %s with a detail naming %q", slug, ctr, got, state, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
