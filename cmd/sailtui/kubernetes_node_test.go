package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// The start fails, naming the container and its exit code (issue 17 item 1).
	if r := c.run("project", "start", slug); r.code == 0 || !strings.Contains(r.stderr, "quitter") || !strings.Contains(r.stderr, "code 3") {
		t.Errorf("start of a container that exits: exit %d: %s", r.code, r.stderr)
	}
	waitDetail(t, c, slug, "quitter", "exited", "exited")

	// An image nobody can pull: the node sends every pull to a closed port.
	bad, _ := nodeCLI(t, "sailtui-test-absent:1")
	slug2 := "nopull-" + randSuffix(t)
	bad.ok("project", "create", slug2)
	bad.ok("container", "add", slug2, "web", "--dir", "web", "--port", "8080", "--command", "sleep 1000")
	// The start fails once the pull does, saying so, rather than wait out the start timeout.
	start := time.Now()
	if r := bad.run("project", "start", slug2); r.code == 0 || !strings.Contains(r.stderr, "Image") || time.Since(start) > 90*time.Second {
		t.Errorf("start of a container whose image cannot be pulled: exit %d after %v: %s", r.code, time.Since(start).Round(time.Second), r.stderr)
	}
	waitDetail(t, bad, slug2, "web", "starting", "Image")
	if table := bad.ok("containers", "ls", slug2); !strings.Contains(table, "Image") {
		t.Errorf("containers ls does not say why web is stuck:\n%s", table)
	}
	if desc := bad.ok("project", "describe", slug2); !strings.Contains(desc, "Image") {
		t.Errorf("project describe does not say why web is stuck:\n%s", desc)
	}
	// An exec into it fails at once, saying why, instead of waiting for a pod that cannot come.
	start = time.Now()
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

// refuseNamespaces makes the API server refuse to create any namespace labelled as owner's
// project (a ValidatingAdmissionPolicy, so other tests on the node are not touched) until the
// returned function is called; it returns once the refusal is in force.
func refuseNamespaces(t *testing.T, n *k8stest.Node, owner string) (allow func()) {
	t.Helper()
	ctx := t.Context()
	name := "sailtui-test-refuse-" + owner
	adm := n.Client.AdmissionregistrationV1()
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf(`!has(object.metadata.labels) || !('tesslate.io/user-id' in object.metadata.labels) || object.metadata.labels['tesslate.io/user-id'] != %q`, owner),
				Message:    "namespaces of " + owner + " are refused by the test",
			}},
		},
	}
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingAdmissionPolicy %s: %v", name, err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingAdmissionPolicyBinding %s: %v", name, err)
	}
	allowed := false
	allow = func() {
		if allowed {
			return
		}
		allowed = true
		ctx := context.WithoutCancel(ctx)
		_ = adm.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = adm.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
		waitNamespaceAdmission(t, n, owner, true)
	}
	t.Cleanup(allow)
	waitNamespaceAdmission(t, n, owner, false)
	return allow
}

// waitNamespaceAdmission waits until a server-side dry-run create of a namespace of owner's is
// admitted (want true) or refused (false): the API server takes policies in a moment later.
func waitNamespaceAdmission(t *testing.T, n *k8stest.Node, owner string, want bool) {
	t.Helper()
	probe := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sailtui-probe-" + owner,
		Labels: map[string]string{"tesslate.io/user-id": owner}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := n.Client.CoreV1().Namespaces().Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if (err == nil) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace admission for %s: want admitted=%v, last answer: %v", owner, want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Start ensures the environment (issue 20, item 12): a project whose create could not make its
// namespace is made whole by `project start` (namespace, PVC, file manager) and then runs; a
// project whose storage is removed behind sailtui's back is not started on an empty PVC but
// reported failed, naming the snapshot to restore, which doctor --fix and wake bring back.
func TestKubernetesNodeStartEnsuresEnvironment(t *testing.T) {
	t.Parallel()
	c, n := nodeCLI(t, "")
	ctx := t.Context()
	owner := "refused-" + randSuffix(t)
	slug := "ensure-" + randSuffix(t)
	allow := refuseNamespaces(t, n, owner)
	if r := c.run("project", "create", slug, "--owner", owner); r.code == 0 || !strings.Contains(r.stderr, "nothing was kept") {
		t.Fatalf("create with namespaces refused: exit %d, want a failure that says nothing was kept\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A create that failed leaves nothing (issue 31): not listed, its name free again.
	if p, _ := c.stored(slug); p.Status != "deleted" {
		t.Fatalf("after a create whose namespace was refused: %s (%s), want nothing left", p.Status, p.StatusReason)
	}
	allow()

	c.ok("project", "create", slug, "--owner", owner)
	c.ok("project", "start", slug)
	p, _ := c.stored(slug)
	ns := "proj-" + p.ID
	if _, err := n.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace after start: %v", err)
	}
	if _, err := n.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "project-storage", metav1.GetOptions{}); err != nil {
		t.Fatalf("pvc after start: %v", err)
	}
	if _, err := n.Client.AppsV1().Deployments(ns).Get(ctx, "file-manager", metav1.GetOptions{}); err != nil {
		t.Fatalf("file manager after start: %v", err)
	}
	c.ok("container", "add", slug, "web", "--dir", "web", "--port", "8080", "--command", `exec sailtui devserver --port "$PORT"`)
	c.ok("project", "start", slug)
	if r := c.runIn(strings.NewReader("kept\n"), nil, "files", "put", slug, "web/kept.txt"); r.code != 0 {
		t.Fatalf("files put: exit %d: %s", r.code, r.stderr)
	}
	waitState(t, c, slug, "web", "running")
	var snap jsonSnapshot
	c.json(&snap, "snapshot", "create", slug, "--label", "before the loss")

	// The namespace is removed behind sailtui's back.
	if err := n.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := n.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s does not go", ns)
		}
		time.Sleep(300 * time.Millisecond)
	}
	r := c.run("project", "start", slug)
	if r.code == 0 || !strings.Contains(r.stderr, "storage is gone") || !strings.Contains(r.stderr, snap.ID) {
		t.Fatalf("start of a project whose storage is gone: exit %d, want a failure naming snapshot %s:\n%s", r.code, snap.ID, r.stderr)
	}
	if _, err := n.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("start recreated the environment of a project whose storage is gone (namespace: %v)", err)
	}
	if p, _ := c.stored(slug); p.Status != "failed" {
		t.Errorf("after start found its storage gone: %s, want failed", p.Status)
	}
	if r := c.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, snap.ID) {
		t.Errorf("doctor on a project whose storage is gone: exit %d, want a finding naming %s:\n%s", r.code, snap.ID, r.stdout)
	}
	// The node is shared with the other tests of the run, whose namespaces this store does not
	// know (orphan-environment findings, left as they are): what matters is that this
	// project's finding is fixed.
	if r := c.run("doctor", "--fix"); r.code > 1 || !regexp.MustCompile(`storage +`+regexp.QuoteMeta(slug)+` .*fixed`).MatchString(r.stdout) {
		t.Fatalf("doctor --fix: exit %d, want this project's storage finding fixed:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	c.ok("project", "wake", slug)
	waitState(t, c, slug, "web", "running")
	if got := c.ok("files", "get", slug, "web/kept.txt"); got != "kept\n" {
		t.Errorf("kept.txt after the wake: %q", got)
	}
}

// waitState waits until container ctr of slug is in state.
func waitState(t *testing.T, c *cli, slug, ctr, state string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := c.containers(slug)[ctr]
		if got.Status == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: %+v, want %s", slug, ctr, got, state)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// unservedSnapshotClass makes a VolumeSnapshotClass of a driver no snapshotter on the node
// serves: its snapshots stay pending, readiness held back for as long as a test needs.
func unservedSnapshotClass(t *testing.T, n *k8stest.Node) string {
	t.Helper()
	name := "sailtui-test-unserved-" + randSuffix(t)
	class := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Driver: "unserved.sailtui.invalid", DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	if _, err := n.Snapshots.SnapshotV1().VolumeSnapshotClasses().Create(t.Context(), class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create VolumeSnapshotClass %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = n.Snapshots.SnapshotV1().VolumeSnapshotClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// A resumed hibernation that times out restarts the dev Deployments (issue 20, item 9): the
// hibernation is killed while it waits for a snapshot that is held back, and the sweep that
// takes it over waits a short timeout out; the project is then active with its container
// running again, as after a hibernation that timed out without a crash.
func TestKubernetesNodeResumedHibernationTimeoutRestarts(t *testing.T) {
	t.Parallel()
	c, n := nodeCLI(t, "")
	ctx := t.Context()
	c.env = append(c.env, "K8S_SNAPSHOT_CLASS="+unservedSnapshotClass(t, n))
	slug := "resume-" + randSuffix(t)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "web", "--dir", "web", "--port", "8080", "--command", `exec sailtui devserver --port "$PORT"`)
	c.ok("project", "start", slug)
	waitState(t, c, slug, "web", "running")

	c.crash("hibernate:snapshot-written", "project", "hibernate", slug)
	p, _ := c.stored(slug)
	ns := "proj-" + p.ID
	if d, err := n.Client.AppsV1().Deployments(ns).Get(ctx, "dev-web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 0 {
		t.Fatalf("after the kill mid-wait: dev-web %v, want it scaled to 0 by the hibernation", err)
	}
	// A long idle timeout: the sweep selects nothing idle, it only takes the interrupted
	// hibernation over (whose snapshot is still held back).
	r := c.runIn(nil, []string{"K8S_SNAPSHOT_READY_TIMEOUT_SECONDS=3"}, "sweep", "hibernate", "--idle", "24h")
	t.Logf("sweep: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	p, _ = c.stored(slug)
	if p.Status != "active" || p.OpID != "" {
		t.Fatalf("after the resumed hibernation timed out: %s (op %s), want active", p.Status, p.OpKind)
	}
	d, err := n.Client.AppsV1().Deployments(ns).Get(ctx, "dev-web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 1 {
		t.Fatalf("after the resumed hibernation timed out: dev-web %v, want replicas 1", err)
	}
	waitState(t, c, slug, "web", "running")
}

// SIGTERM cuts a snapshot wait short (issue 20, item 10): a headless hibernation sweep waiting
// for a snapshot that is not getting ready, with the default 300 s timeout, is told to stop as
// a CronJob's deadline or a node drain tells it; it hands the project back (active, its
// container running, reported deferred) and exits well inside the pod's grace period.
func TestKubernetesNodeSIGTERMCutsSnapshotWait(t *testing.T) {
	t.Parallel()
	c, n := nodeCLI(t, "")
	ctx := t.Context()
	c.env = append(c.env, "K8S_SNAPSHOT_CLASS="+unservedSnapshotClass(t, n), "K8S_SNAPSHOT_READY_TIMEOUT_SECONDS=300")
	slug := "sigterm-" + randSuffix(t)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "web", "--dir", "web", "--port", "8080", "--command", `exec sailtui devserver --port "$PORT"`)
	c.ok("project", "start", slug)
	waitState(t, c, slug, "web", "running")
	p, _ := c.stored(slug)
	ns := "proj-" + p.ID

	cmd := exec.Command(os.Args[0], "--state-dir", c.state, "--headless", "--sweep=hibernate", "--idle", "1ns")
	cmd.Env = append(append(os.Environ(), "SAILTUI_TEST_MAIN=1"), c.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	must(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(90 * time.Second)
	for {
		list, err := n.Snapshots.SnapshotV1().VolumeSnapshots(ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweep made no VolumeSnapshot within 90 s:\n%s", stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // well into the wait
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the sweep told to stop mid-wait: %v, want exit 0 (nothing failed)\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the sweep still runs 60 s after SIGTERM: its snapshot wait was not cut short\n%s", stderr.String())
	}
	sums := summaries(t, stdout.String())
	if len(sums) != 1 || len(sums[0].Deferred) != 1 || sums[0].Deferred[0].Slug != slug || len(sums[0].Failed) != 0 {
		t.Errorf("summary %+v: want %s deferred, nothing failed", sums, slug)
	}
	p, _ = c.stored(slug)
	if p.Status != "active" || p.OpID != "" {
		t.Fatalf("after the stopped sweep: %s (op %s), want active", p.Status, p.OpKind)
	}
	if d, err := n.Client.AppsV1().Deployments(ns).Get(ctx, "dev-web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
		t.Fatalf("after the stopped sweep: dev-web %v, want replicas 1", err)
	}
	waitState(t, c, slug, "web", "running")
}
