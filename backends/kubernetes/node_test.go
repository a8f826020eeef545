package kubernetes_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/runtimetest"
)

// serveCommand serves the container's directory over HTTP, as in the docker tests: the
// node's image carries a static sailtui.
const serveCommand = `exec sailtui devserver --dir . --port "$PORT"`

// newNodeRuntime is the runtime on the run's real node: its image, storage and snapshot
// classes, small claims.
func newNodeRuntime(t testing.TB, n *k8stest.Node, tweak ...func(*kubernetes.Config)) *kubernetes.Runtime {
	t.Helper()
	cfg := kubernetes.Config{
		REST:                 n.Config(),
		Image:                n.Env.Image,
		StorageClass:         n.Env.StorageClass,
		SnapshotClass:        n.Env.SnapshotClass,
		PVCSize:              "1Gi",
		AppDomain:            "sail.test",
		PodAffinity:          true,
		SnapshotReadyTimeout: time.Minute,
		DeleteTimeout:        2 * time.Minute,
	}
	return newRuntimeFrom(t, cfg, tweak)
}

// The whole Runtime contract, against real pods on the real node.
func TestContract(t *testing.T) {
	n := k8stest.StartNode(t)
	logs := newS3Store(t) // keeps the logs across stops, as S3_BUCKET_NAME does
	var rt *kubernetes.Runtime
	runtimetest.Run(t, runtimetest.Harness{
		New: func(t *testing.T) engine.Runtime {
			// The contract puts a file beside the project for the user to reach; / of the
			// image is root's, the dev user's home is not.
			rt = newNodeRuntime(t, n, func(c *kubernetes.Config) { c.MountPath, c.Logs = "/home/dev/app", logs })
			return rt
		},
		ServeCommand: serveCommand,
		Reach: func(t *testing.T, p engine.Project, c engine.Container, st engine.ContainerStatus) string {
			return podURL(t, n, rt.Namespace(p), c)
		},
	})
}

// podURL is the address of c's running dev pod: the node has no ingress controller and no
// kube-proxy, but the pod network is a bridge on this host.
func podURL(t *testing.T, n *k8stest.Node, ns string, c engine.Container) string {
	t.Helper()
	sel := labels.Set{kubernetes.LabelComponent: kubernetes.ComponentDev}.String()
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := n.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning || len(p.Spec.Containers) == 0 {
				continue
			}
			ctr := p.Spec.Containers[0]
			if !slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == "CONTAINER_NAME" && e.Value == c.Name }) || len(ctr.Ports) == 0 {
				continue
			}
			return fmt.Sprintf("http://%s:%d/", p.Status.PodIP, ctr.Ports[0].ContainerPort)
		}
		last = fmt.Sprintf("%d dev pods, none running for %s", len(pods.Items), c.Name)
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no running pod of %s in %s: %s", c.Name, ns, last)
	return ""
}
