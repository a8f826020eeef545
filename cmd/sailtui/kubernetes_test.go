package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
)

// kubeCLI is a cli in kubernetes mode against a control plane of the test's own, with the
// kubelet and CSI snapshotter stand-ins running for every namespace.
func kubeCLI(t *testing.T) (*cli, *k8stest.Cluster) {
	t.Helper()
	cl := k8stest.Start(t)
	cl.StartKubelet(t, "")
	cl.StartSnapshotter(t, "")
	c := newCLI(t)
	c.env = []string{"DEPLOYMENT_MODE=kubernetes", "KUBECONFIG=" + cl.Kubeconfig, "K8S_SNAPSHOT_CLASS=" + k8stest.SnapshotClass,
		"APP_DOMAIN=sail.test", "K8S_WILDCARD_TLS_SECRET=wild", "K8S_SNAPSHOT_READY_TIMEOUT_SECONDS=60"}
	return c, cl
}

// TestKubernetesEndToEnd is the path through the command line on a real API server:
// create, add two containers, start, snapshot, hibernate (namespace gone, snapshot content
// kept), wake (a fresh namespace with the PVC from the snapshot), purge (snapshot objects gone).
// Nothing here execs into a pod: there is no kubelet to run one.
func TestKubernetesEndToEnd(t *testing.T) {
	t.Parallel()
	c, cl := kubeCLI(t)
	ctx := t.Context()
	slug := "kube-" + randSuffix(t)
	var p jsonProject
	c.json(&p, "project", "create", slug, "--owner", "tester")
	if p.Status != "active" {
		t.Fatalf("create: %+v", p)
	}
	ns := "proj-" + p.ID
	if _, err := cl.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace after create: %v", err)
	}
	c.ok("container", "add", slug, "web", "--dir", "frontend", "--port", "5173", "--command", "npm run dev")
	c.ok("container", "add", slug, "api", "--dir", "backend", "--port", "8000", "--command", "uvicorn main:app")
	c.ok("project", "start", slug)
	deadline := time.Now().Add(60 * time.Second)
	for {
		cs := c.containers(slug)
		if cs["web"].Status == "running" && cs["api"].Status == "running" {
			if !strings.HasPrefix(cs["web"].URL, "https://"+slug+"-frontend.sail.test") {
				t.Errorf("web url %q", cs["web"].URL)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers not running: %+v", cs)
		}
		time.Sleep(300 * time.Millisecond)
	}
	desc := c.ok("project", "describe", slug)
	for _, want := range []string{"namespace " + ns, "deployment dev-web: 1/1", "deployment file-manager"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}

	var manual jsonSnapshot
	c.json(&manual, "snapshot", "create", slug, "--label", "before hibernation")
	if manual.Status != "ready" {
		t.Fatalf("manual snapshot: %+v", manual)
	}
	c.ok("project", "hibernate", slug)
	if err := cl.NamespaceGoing(ctx, ns); err != nil {
		t.Fatalf("namespace after hibernate: %v", err)
	}
	contents, err := cl.Snapshots.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(contents.Items) < 2 {
		t.Fatalf("contents after hibernate: %d, want the manual and the hibernation snapshot's", len(contents.Items))
	}
	c.ok("project", "wake", slug)
	pvc, err := cl.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "project-storage", metav1.GetOptions{})
	if err != nil || pvc.Spec.DataSource == nil || pvc.Spec.DataSource.Kind != "VolumeSnapshot" {
		t.Fatalf("pvc after wake: %v %+v", err, pvc)
	}

	// Restore the manual snapshot into the live project: a safety snapshot first, then the PVC
	// is replaced by one from the manual snapshot.
	c.ok("snapshot", "restore", slug, manual.ID, "--yes")
	pvc, err = cl.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "project-storage", metav1.GetOptions{})
	if err != nil || pvc.Spec.DataSource == nil || !strings.Contains(pvc.Spec.DataSource.Name, strings.ToLower(manual.ID)) {
		t.Fatalf("pvc after restoring %s: %v %+v", manual.ID, err, pvc.Spec.DataSource)
	}

	// Remove the manual snapshot; the purge (as of after the retention) takes its objects.
	c.ok("snapshot", "rm", slug, manual.ID, "--yes")
	out := c.headless("--sweep=purge", "--yes", "--as-of", time.Now().Add(31*24*time.Hour).UTC().Format(time.RFC3339))
	if !strings.Contains(out, manual.ID) {
		t.Errorf("purge summary does not name %s: %s", manual.ID, out)
	}
	left, err := cl.Snapshots.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range left.Items {
		if strings.Contains(ct.Spec.VolumeSnapshotRef.Name, strings.ToLower(manual.ID)) {
			t.Errorf("content %s of the purged snapshot is still there", ct.Name)
		}
	}
	c.ok("project", "rm", slug, "--yes")
}

// A cluster that does not answer is a clear error before anything is touched.
func TestKubernetesUnreachable(t *testing.T) {
	c := newCLI(t)
	c.env = []string{"DEPLOYMENT_MODE=kubernetes", "KUBECONFIG=" + writeKubeconfig(t, "https://127.0.0.1:1")}
	r := c.run("projects", "ls")
	if r.code == 0 || !strings.Contains(r.stderr, "kubernetes API server https://127.0.0.1:1") {
		t.Fatalf("unreachable cluster: exit %d\n%s", r.code, r.stderr)
	}
	// Archive snapshots without a bucket would live on whichever machine made them.
	r = c.runIn(nil, []string{"K8S_USE_S3_SNAPSHOTS=true"}, "projects", "ls")
	if r.code != 2 || !strings.Contains(r.stderr, "K8S_USE_S3_SNAPSHOTS=true needs S3_BUCKET_NAME") {
		t.Fatalf("archive snapshots without a bucket: exit %d\n%s", r.code, r.stderr)
	}
}

// writeKubeconfig writes a kubeconfig whose one context points at server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "nope"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TLS that works (issue 20, item 14), on the command line: a project whose namespace lacks the
// Ingresses' TLS secret is warned about when it is created (and in describe); with
// K8S_COPY_TLS_SECRET_FROM the secret is copied in at start and nothing is warned.
func TestKubernetesTLSSecretWarnedAndCopied(t *testing.T) {
	t.Parallel()
	c, cl := kubeCLI(t) // K8S_WILDCARD_TLS_SECRET=wild
	ctx := t.Context()
	slug := "tls-" + randSuffix(t)
	r := c.run("project", "create", slug)
	if r.code != 0 || !strings.Contains(r.stderr, "warning: TLS secret wild") || !strings.Contains(r.stderr, "--default-ssl-certificate") {
		t.Fatalf("create without the TLS secret: exit %d, want a warning naming it and the way out:\n%s", r.code, r.stderr)
	}
	if desc := c.ok("project", "describe", slug); !strings.Contains(desc, "TLS secret wild") {
		t.Errorf("describe does not warn about the missing TLS secret:\n%s", desc)
	}
	// No ingress controller's class either (issue 31): nothing would serve the URLs.
	if !strings.Contains(r.stderr, `warning: the cluster has no IngressClass "nginx"`) {
		t.Errorf("create in a cluster without the Ingress class: want a warning naming it:\n%s", r.stderr)
	}
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	if _, err := cl.Client.NetworkingV1().IngressClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	src := "tls-src-" + randSuffix(t)
	if _, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: src}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Client.CoreV1().Namespaces().Delete(context.Background(), src, metav1.DeleteOptions{}) })
	wild := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wild", Namespace: src}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")}}
	if _, err := cl.Client.CoreV1().Secrets(src).Create(ctx, wild, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = c.runIn(nil, []string{"K8S_COPY_TLS_SECRET_FROM=" + src}, "project", "start", slug)
	if r.code != 0 || strings.Contains(r.stderr, "warning:") {
		t.Fatalf("start with K8S_COPY_TLS_SECRET_FROM: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	p, _ := c.stored(slug)
	if got, err := cl.Client.CoreV1().Secrets("proj-"+p.ID).Get(ctx, "wild", metav1.GetOptions{}); err != nil || string(got.Data[corev1.TLSCertKey]) != "cert" {
		t.Fatalf("the TLS secret in the project namespace after start: %v", err)
	}
	c.ok("project", "rm", slug, "--yes")
}
