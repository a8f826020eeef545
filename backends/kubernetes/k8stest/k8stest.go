// Package k8stest gives tests a real Kubernetes control plane: etcd, kube-apiserver and
// kube-controller-manager, built from the Go module proxy by the tool module in
// backends/kubernetes/controlplane/tools (make tools), started on free loopback ports with their
// state in a temporary directory, with the VolumeSnapshot CRDs of the external-snapshotter client
// installed. Such a control plane has no kubelet, scheduler or CSI driver: its pods stay Pending
// and its snapshots never become ready unless a test plays those parts with MarkPodsReady,
// ReadySnapshots, StartKubelet and StartSnapshotter, which suits tests of the objects themselves.
//
// Everything that needs a process in a pod runs on the real node instead (node.go: ServeNode,
// StartNode): a kubelet on a containerd of its own under a control plane of its own, with
// storage that keeps real data, one per test run. A test that cannot get its control plane or
// its node fails with the way to get one; it never skips (DESIGN.md, "Test tiers").
package k8stest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Cluster is a running control plane. Under Main it is shared by all the tests of a package,
// so tests keep to namespaces of their own.
type Cluster struct {
	// Kubeconfig is a kubeconfig file whose current context is the cluster's admin (a token
	// in group system:masters), for code that loads its configuration like kubectl does.
	Kubeconfig string
	// Client, Snapshots and Dynamic act as the cluster admin.
	Client    kubernetes.Interface
	Snapshots snapclient.Interface
	Dynamic   dynamic.Interface

	config   *rest.Config
	opts     clusterOptions
	kcmToken string // the controller manager's, in the token file and its kubeconfig
	dir      string
	procs    []*proc // in start order: etcd, kube-apiserver, kube-controller-manager

	// snapshotData, on the real node, copies the claim's data for a snapshot being cut.
	snapshotData func(ctx context.Context, namespace, pvc, handle string) error

	ipMu   sync.Mutex
	nextIP uint32 // the last pod IP handed out by the kubelet helper
}

// Config returns a copy of the admin client configuration, for clients of the caller's own.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.config) }

// SnapshotClass is the VolumeSnapshotClass every cluster has, marked the default class, with
// driver SnapshotDriver and deletion policy Delete (the usual default of CSI drivers).
const (
	SnapshotClass  = "k8stest"
	SnapshotDriver = "k8stest.sailtui.invalid"
)

// shared is the package-wide cluster of a test binary whose TestMain uses Main.
var shared struct {
	sync.Mutex
	enabled bool
	cluster *Cluster
	err     error // a failed start is not retried: every test reports it
}

// Main runs a package's tests with one cluster shared by all of them, started by the first
// Start and stopped when the tests are done. Starting one takes a few seconds, so a package
// with several tests wants this. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(k8stest.Main(m)) }
func Main(m *testing.M) int {
	shared.Lock()
	shared.enabled = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.cluster != nil {
		if err := shared.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Start returns a running cluster. Under Main it is the package's shared cluster; otherwise
// tb gets a cluster of its own, stopped and removed when tb ends. A cluster that cannot start
// fails tb with the reason.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.enabled {
		if shared.cluster == nil && shared.err == nil {
			shared.cluster, shared.err = New()
		}
		if shared.err != nil {
			tb.Fatal(shared.err)
		}
		return shared.cluster
	}
	c, err := New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return c
}

// NamespaceGoing reports an error unless namespace ns is gone or being deleted: what a
// hibernation leaves, since it returns once the deletion is underway.
func (c *Cluster) NamespaceGoing(ctx context.Context, ns string) error {
	cur, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read namespace %s: %w", ns, err)
	}
	if cur.DeletionTimestamp == nil {
		return fmt.Errorf("namespace %s is there and not being deleted", ns)
	}
	return nil
}
