package k8stest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sailtui/sailtui/backends/internal/testproc"
)

// The real node: a kubelet driving a containerd of its own, its pods on a CNI bridge of their
// own, under a control plane of its own (etcd, kube-apiserver, kube-controller-manager with
// every controller, kube-scheduler). Its names and addresses are fixed, so one runs on a
// machine at a time; `make test` starts one for the whole run (cmd: k8snode run) and tests
// reach it through NodeDirEnv.
const (
	NodeName = "sailtui-node"
	// NodeStorageClass is the default StorageClass: a provisioner stand-in (node_storage.go)
	// makes a hostPath volume for every claim, filled from the snapshot a claim restores.
	NodeStorageClass = "sailtui-node"
	nodeProvisioner  = "k8stest.sailtui.invalid/hostpath"
	nodeBridge       = "sailtui-node0"
	nodeSubnet       = "10.88.0.0/24"
	// nodeIP is the bridge's address and the node's InternalIP: the kubelet refuses a
	// loopback node IP, and the API server reaches the kubelet there for exec and logs.
	nodeIP     = "10.88.0.1"
	nodeCgroup = "sailtui-node"
)

// NodeDirEnv names the directory of the running node the tests use.
const NodeDirEnv = "SAILTUI_TEST_NODE"

// DefaultNodeDir is where `k8snode` keeps the node unless told otherwise. Short: containerd's
// socket path must fit a sockaddr_un.
func DefaultNodeDir() string { return "/tmp/sailtui-node" }

// NodeEnv is what a client of the node needs; the node writes it as shell exports to
// <dir>/node.env once it is ready.
type NodeEnv struct {
	Kubeconfig    string
	StorageClass  string
	SnapshotClass string
	// Image is the dev-server image in the node's containerd (static sailtui, every busybox
	// applet, tmux); PauseImage its sandbox image.
	Image      string
	PauseImage string
}

// Exports are the shell lines that point sailtui at the node, after a comment saying what
// its pods can reach.
func (e NodeEnv) Exports() string {
	return fmt.Sprintf("# Services: ClusterIPs (%s) through kube-proxy; DNS in pods: CoreDNS at %s, so a pod reaches <service>, <service>.<namespace> and <service>.<namespace>.svc.%s by name\n",
		ServiceCIDR, ClusterDNS, ClusterDomain) +
		fmt.Sprintf("# NetworkPolicy: enforced by kube-network-policies %s (a connection is dropped while it is down); pods route the metadata range %s through the node\n",
			NetPolVersion, linkLocalRange) +
		fmt.Sprintf("export KUBECONFIG=%s\nexport DEPLOYMENT_MODE=kubernetes\nexport K8S_STORAGE_CLASS=%s\nexport K8S_SNAPSHOT_CLASS=%s\nexport DEVSERVER_IMAGE=%s\n",
			e.Kubeconfig, e.StorageClass, e.SnapshotClass, e.Image)
}

func nodeEnvFile(dir string) string { return filepath.Join(dir, "node.env") }

// ReadNodeEnv reads the env file of the node in dir.
func ReadNodeEnv(dir string) (NodeEnv, error) {
	b, err := os.ReadFile(nodeEnvFile(dir))
	if err != nil {
		return NodeEnv{}, err
	}
	var e NodeEnv
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			continue
		}
		switch k {
		case "KUBECONFIG":
			e.Kubeconfig = v
		case "K8S_STORAGE_CLASS":
			e.StorageClass = v
		case "K8S_SNAPSHOT_CLASS":
			e.SnapshotClass = v
		case "DEVSERVER_IMAGE":
			e.Image = v
		case "SAILTUI_TEST_PAUSE_IMAGE":
			e.PauseImage = v
		}
	}
	if e.Kubeconfig == "" || e.Image == "" {
		return NodeEnv{}, fmt.Errorf("%s: incomplete", nodeEnvFile(dir))
	}
	return e, nil
}

func writeNodeEnv(dir string, e NodeEnv) error {
	body := e.Exports() + "export SAILTUI_TEST_PAUSE_IMAGE=" + e.PauseImage + "\n"
	tmp := nodeEnvFile(dir) + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, nodeEnvFile(dir))
}

// Node is the run's real node, as a test sees it.
type Node struct {
	*Cluster
	Env NodeEnv
}

// StartNode returns the real node of this test run: the one in $SAILTUI_TEST_NODE, which
// `make test` (k8snode run) and `make cluster` start. A test that needs it and cannot reach it
// fails, saying how to get one.
func StartNode(tb testing.TB) *Node {
	tb.Helper()
	n, err := connectNode()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func connectNode() (*Node, error) {
	dir := os.Getenv(NodeDirEnv)
	if dir == "" {
		return nil, fmt.Errorf("this test needs the real Kubernetes node and $%s is not set: run it through `make test-kubernetes` (which starts the node for the run), or start one with `make cluster` and set %s=%s",
			NodeDirEnv, NodeDirEnv, DefaultNodeDir())
	}
	env, err := ReadNodeEnv(dir)
	if err != nil {
		return nil, fmt.Errorf("the real Kubernetes node in %s ($%s) is not ready: %w; start it with `make cluster`", dir, NodeDirEnv, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("real node: kubeconfig %s: %w", env.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	c := &Cluster{Kubeconfig: env.Kubeconfig, config: cfg, dir: dir}
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	if c.Snapshots, err = snapclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the real Kubernetes node in %s does not answer (%w); restart it: make cluster-down cluster", dir, err)
	}
	if !nodeReady(node) {
		return nil, fmt.Errorf("the real Kubernetes node %s is not Ready (%s); see the logs in %s", NodeName, nodeConditions(node), filepath.Join(dir, "log"))
	}
	return &Node{Cluster: c, Env: env}, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeConditions(n *corev1.Node) string {
	var parts []string
	for _, c := range n.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Message))
	}
	return strings.Join(parts, "; ")
}

// node is a node being started or run by ServeNode.
type node struct {
	dir      string
	bin      string // .tools/bin
	cluster  *Cluster
	stops    []func()
	env      NodeEnv
	ports    map[string]int
	kubelet  *proc
	sched    *proc
	proxy    *proc // kube-proxy
	dns      *proc // CoreDNS
	netpol   *proc // kube-network-policies
	ctrd     *proc
	imported []string
}

func (n *node) path(parts ...string) string {
	return filepath.Join(append([]string{n.dir}, parts...)...)
}
func (n *node) sock() string { return n.path("containerd", "containerd.sock") }

// ServeNode starts the node in dir, calls ready with its env once the node is Ready, and runs
// it until ctx ends; then it stops every process and undoes every change to the host. Host
// changes a killed ServeNode left behind are undone by CleanNode (which ServeNode runs first).
func ServeNode(ctx context.Context, dir string, ready func(NodeEnv)) (err error) {
	bin, err := findBin()
	if err != nil {
		return err
	}
	for _, b := range []string{"kubelet", "kube-scheduler", "kube-proxy", coreDNSBinary(), netpolBinary()} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return fmt.Errorf("real node: %s not found in %s: build it with `make tools`", b, bin)
		}
	}
	for _, b := range []string{"/usr/bin/containerd", "/usr/bin/ctr", "/usr/sbin/runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback", "/usr/bin/unshare", "/usr/sbin/iptables", "/usr/sbin/nft"} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("real node: %s is missing: install Debian's containerd, runc, containernetworking-plugins, util-linux, iptables and nftables (make deps)", b)
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("real node: must run as root (it runs a containerd, a kubelet and a network bridge)")
	}
	if err := CleanNode(dir); err != nil {
		return fmt.Errorf("real node: clean what an earlier node left: %w", err)
	}
	n := &node{dir: dir, bin: bin, ports: map[string]int{}}
	defer func() {
		if terr := n.teardown(); terr != nil {
			err = errors.Join(err, terr)
		}
	}()
	start := time.Now()
	step := func(what string, f func(context.Context) error) error {
		t0 := time.Now()
		if err := f(ctx); err != nil {
			return fmt.Errorf("real node: %s: %w", what, err)
		}
		fmt.Fprintf(os.Stderr, "k8snode: %-28s %6.1fs\n", what, time.Since(t0).Seconds())
		return nil
	}
	for _, s := range []struct {
		what string
		f    func(context.Context) error
	}{
		{"prepare the host", n.prepareHost},
		{"build the images", n.buildImages},
		{"start containerd", n.startContainerd},
		{"import the images", n.importImages},
		{"start the control plane", n.startControlPlane},
		{"start kube-scheduler", n.startScheduler},
		{"start the kubelet", n.startKubelet},
		{"wait for the node", n.waitReady},
		{"start kube-proxy", n.startKubeProxy},
		{"start CoreDNS", n.startCoreDNS},
		{"start the policy enforcer", n.startNetPol},
		{"set up storage", n.setupStorage},
	} {
		if err := step(s.what, s.f); err != nil {
			return err
		}
	}
	if err := writeNodeEnv(dir, n.env); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	fmt.Fprintf(os.Stderr, "k8snode: node %s Ready after %.1fs\n", NodeName, time.Since(start).Seconds())
	if ready != nil {
		ready(n.env)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
		for _, p := range append([]*proc{n.ctrd, n.sched, n.kubelet, n.proxy, n.dns, n.netpol}, n.cluster.procs...) {
			select {
			case <-p.exited:
				return fmt.Errorf("real node: %s exited (%v)\n%s", p.name, p.cmd.ProcessState, p.tail())
			default:
			}
		}
	}
}

func (n *node) startControlPlane(ctx context.Context) error {
	c, err := newCluster(clusterOptions{
		dir: n.path("cp"),
		apiArgs: []string{
			"--kubelet-client-certificate", n.path("pki", "kubelet-client.crt"),
			"--kubelet-client-key", n.path("pki", "kubelet-client.key"),
			"--kubelet-preferred-address-types", "InternalIP",
		},
		// Real pods need them all: node-lifecycle lifts the not-ready taint, the root-ca
		// publisher makes kube-root-ca.crt, the PV binder and the protection controllers
		// bind claims and let namespaces go.
		controllers: "*",
	})
	if err != nil {
		return err
	}
	n.cluster = c
	n.env.Kubeconfig = c.Kubeconfig
	return nil
}

func (n *node) startScheduler(ctx context.Context) error {
	p, err := startProc(filepath.Join(n.bin, "kube-scheduler"), n.path("log", "kube-scheduler.log"),
		"--kubeconfig", n.cluster.Kubeconfig,
		"--authentication-kubeconfig", n.cluster.Kubeconfig,
		"--authorization-kubeconfig", n.cluster.Kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--leader-elect=false")
	if err != nil {
		return err
	}
	n.sched = p
	return nil
}

func (n *node) startKubelet(ctx context.Context) error {
	if err := n.writeKubeletConfig(); err != nil {
		return err
	}
	wrap, err := n.kubeletNamespace()
	if err != nil {
		return err
	}
	args := []string{"-m", "--propagation", "unchanged", wrap, filepath.Join(n.bin, "kubelet"),
		"--config", n.path("kubelet", "config.yaml"),
		"--kubeconfig", n.cluster.Kubeconfig,
		"--root-dir", n.path("kubelet", "root"),
		"--cert-dir", n.path("kubelet", "pki"),
		"--hostname-override", NodeName,
		"--node-ip", nodeIP,
		"--v", "1",
	}
	p, err := startProc("/usr/bin/unshare", n.path("log", "kubelet.log"), args...)
	if err != nil {
		return err
	}
	p.name = "kubelet"
	n.kubelet = p
	return nil
}

func (n *node) waitReady(ctx context.Context) error {
	return n.kubelet.waitReady(ctx, func(ctx context.Context) error {
		node, err := n.cluster.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !nodeReady(node) {
			return fmt.Errorf("not Ready: %s", nodeConditions(node))
		}
		return nil
	})
}

// teardown lets the kubelet remove the pods while it still runs (CNI teardown, mounts), then
// stops everything, last started first, and undoes the host changes.
func (n *node) teardown() error {
	var errs []error
	for i := len(n.stops) - 1; i >= 0; i-- {
		n.stops[i]()
	}
	if n.cluster != nil && n.kubelet != nil && len(n.cluster.procs) == 3 {
		// No controller may recreate what is deleted now.
		errs = append(errs, n.cluster.procs[2].stop())
		n.cluster.procs = n.cluster.procs[:2]
		if n.sched != nil {
			errs = append(errs, n.sched.stop())
			n.sched = nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		n.deleteAllPods(ctx)
		cancel()
	}
	for _, p := range []*proc{n.netpol, n.dns, n.proxy, n.kubelet, n.sched} {
		if p != nil {
			errs = append(errs, p.stop())
		}
	}
	if n.cluster != nil {
		errs = append(errs, n.cluster.Stop())
	}
	if n.ctrd != nil {
		n.killTasks()
		errs = append(errs, n.ctrd.stop())
	}
	errs = append(errs, CleanNode(n.dir))
	return errors.Join(errs...)
}

// deleteAllPods deletes every pod at once and waits until containerd runs no task.
func (n *node) deleteAllPods(ctx context.Context) {
	zero := int64(0)
	nss, err := n.cluster.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, ns := range nss.Items {
		_ = n.cluster.Client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	}
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		out, err := n.ctr(ctx, "tasks", "ls", "-q")
		return err == nil && strings.TrimSpace(out) == "", nil
	})
}

// killTasks kills and deletes whatever still runs in the node's containerd.
func (n *node) killTasks() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _ := n.ctr(ctx, "tasks", "ls", "-q")
	for _, t := range strings.Fields(out) {
		_, _ = n.ctr(ctx, "tasks", "kill", "-s", "SIGKILL", t)
	}
	if len(strings.Fields(out)) > 0 {
		time.Sleep(time.Second)
	}
	out, _ = n.ctr(ctx, "tasks", "ls", "-q")
	for _, t := range strings.Fields(out) {
		_, _ = n.ctr(ctx, "tasks", "delete", "-f", t)
	}
	out, _ = n.ctr(ctx, "containers", "ls", "-q")
	for _, c := range strings.Fields(out) {
		_, _ = n.ctr(ctx, "containers", "delete", c)
	}
}

// ctr runs ctr against the node's containerd in the kubelet's namespace.
func (n *node) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "/usr/bin/ctr", append([]string{"--address", n.sock(), "-n", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// freePorts picks the node's listening ports.
func (n *node) freePorts(names ...string) error {
	for _, name := range names {
		p, err := testproc.FreePort()
		if err != nil {
			return err
		}
		n.ports[name] = p
	}
	return nil
}
