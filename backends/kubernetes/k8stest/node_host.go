package k8stest

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hostPaths are the fixed paths outside the node's directory that a kubelet or containerd
// needs to exist (mount points for the kubelet's private copies, containerd 1.6's CNI result
// cache); the node creates those that are missing and records them, and CleanNode removes
// exactly those.
var hostPaths = []string{"/var/lib/kubelet/device-plugins", "/var/log/containers", "/var/lib/cni"}

func createdFile(dir string) string {
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".created")
}

// prepareHost makes the node's directories, the bridge that carries the node IP, and the
// kubelet's cgroup root in every hierarchy.
func (n *node) prepareHost(ctx context.Context) error {
	for _, d := range []string{"log", "pki", "containerd/tmp", "containerd/certs.d/_default", "cni/bin", "cni/net.d", "cni/ipam",
		"kubelet/root", "kubelet/pki", "kubelet/pod-logs", "kubelet/volume-plugins", "kubelet/device-plugins",
		"kubelet/var-log-containers", "kubelet/shield", "runc", "pv", "snapshots"} {
		if err := os.MkdirAll(n.path(d), 0o755); err != nil {
			return err
		}
	}
	// Record before creating: a kill between the two leaves a name CleanNode skips when absent.
	var created []string
	for _, p := range hostPaths {
		for q := p; q != "/"; q = filepath.Dir(q) {
			if _, err := os.Lstat(q); errors.Is(err, fs.ErrNotExist) {
				created = append(created, q)
			}
		}
	}
	if err := os.WriteFile(createdFile(n.dir), []byte(strings.Join(created, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	for _, p := range hostPaths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"link", "add", nodeBridge, "type", "bridge"},
		{"addr", "replace", nodeIP + "/24", "dev", nodeBridge},
		{"link", "set", nodeBridge, "up"},
	} {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil && !(args[1] == "add" && strings.Contains(string(out), "exists")) {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	if err := allowForward(ctx); err != nil {
		return err
	}
	hier, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hier {
		if err := os.MkdirAll(filepath.Join(h, nodeCgroup), 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", h, err)
		}
	}
	// A new cpuset cgroup starts with no CPUs and no memory nodes: nothing could run in it.
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuset", f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join("/sys/fs/cgroup/cpuset", nodeCgroup, f), b, 0o644); err != nil {
			return fmt.Errorf("cgroup cpuset %s: %w", f, err)
		}
	}
	if err := n.writePKI(); err != nil {
		return err
	}
	return n.writeCNI()
}

// cgroupHierarchies are the mounted cgroup hierarchies under /sys/fs/cgroup (v1 and the
// unified one), or /sys/fs/cgroup itself on a pure v2 host.
func cgroupHierarchies() ([]string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return nil, fmt.Errorf("statfs /sys/fs/cgroup: %w", err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return []string{"/sys/fs/cgroup"}, nil
	}
	ents, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, err
	}
	var hs []string
	for _, e := range ents {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			hs = append(hs, p)
		}
	}
	return hs, nil
}

// CleanNode undoes what a node in dir did to the host, whether it stopped cleanly or was
// killed: processes left running from the node's files, mounts under dir, the cgroup trees, the
// bridge and the host paths it created. The logs move to <dir>.last-logs for post-mortems;
// the rest of dir goes. Running it when no node was there is harmless.
func CleanNode(dir string) error {
	var errs []error
	killLeftovers(dir)
	for range 3 {
		mounts, err := mountsUnder(dir)
		if err != nil {
			errs = append(errs, err)
			break
		}
		if len(mounts) == 0 {
			break
		}
		for _, m := range mounts {
			_ = unix.Unmount(m, unix.MNT_DETACH)
		}
	}
	if hier, err := cgroupHierarchies(); err == nil {
		for _, h := range hier {
			errs = append(errs, removeCgroupTree(filepath.Join(h, nodeCgroup)))
		}
	} else {
		errs = append(errs, err)
	}
	if out, err := exec.Command("ip", "link", "del", nodeBridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
		errs = append(errs, fmt.Errorf("ip link del %s: %w: %s", nodeBridge, err, out))
	}
	errs = append(errs, cleanNetwork(dir))
	if b, err := os.ReadFile(createdFile(dir)); err == nil {
		paths := strings.Fields(string(b))
		slices.Sort(paths)
		for _, p := range slices.Backward(paths) {
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
			}
		}
		_ = os.Remove(createdFile(dir))
	}
	if _, err := os.Stat(filepath.Join(dir, "log")); err == nil {
		last := dir + ".last-logs"
		_ = os.RemoveAll(last)
		_ = os.Rename(filepath.Join(dir, "log"), last)
		for _, f := range []string{"cp"} {
			if ents, err := filepath.Glob(filepath.Join(dir, f, "*.log")); err == nil {
				for _, e := range ents {
					_ = os.Rename(e, filepath.Join(last, filepath.Base(e)))
				}
			}
		}
	}
	if mounts, _ := mountsUnder(dir); len(mounts) > 0 {
		errs = append(errs, fmt.Errorf("mounts left under %s: %s", dir, strings.Join(mounts, " ")))
	} else if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// killLeftovers kills the processes whose command line names dir: components and containerd
// shims of a node whose supervisor was killed. Shims outlive containerd by design.
func killLeftovers(dir string) {
	for range 3 {
		pids := processesNaming(dir)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func processesNaming(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == self || pid == os.Getppid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && strings.Contains(filepath.Base(args[0]), "k8snode") {
			continue // a supervisor: told to stop, not killed
		}
		if strings.Contains(string(b), dir+"/") || strings.Contains(string(b), dir+"\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			ms = append(ms, mp)
		}
	}
	slices.SortFunc(ms, func(a, b string) int { return len(b) - len(a) })
	return ms, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroupTree removes a cgroup directory and those below it, deepest first; a cgroup
// with processes left cannot go, which is reported.
func removeCgroupTree(root string) error {
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var last error
	for range 10 {
		last = nil
		for _, d := range slices.Backward(dirs) {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
				last = fmt.Errorf("remove cgroup %s: %w", d, err)
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

// kubeletNamespace writes the wrapper the kubelet runs under, in a mount namespace of its own
// (unshare -m): the kernel settings it would write (vm.overcommit_memory, kernel.panic,
// kernel.panic_on_oops, ...) are shadowed by files holding the values it wants, so it finds
// them set and changes nothing on the host; its hard-coded /var/lib/kubelet/device-plugins and
// /var/log/containers get private directories. Its root dir is made a shared mount first so
// the volumes it mounts there (secrets, projected tokens) reach containerd in the host's
// namespace.
func (n *node) kubeletNamespace() (string, error) {
	root := n.path("kubelet", "root")
	if err := unix.Mount(root, root, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind %s: %w", root, err)
	}
	if err := unix.Mount("", root, "", unix.MS_SHARED, ""); err != nil {
		return "", fmt.Errorf("make %s shared: %w", root, err)
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\nset -e\n")
	for _, kv := range [][2]string{{"vm.overcommit_memory", "1"}, {"vm.panic_on_oom", "0"}, {"kernel.panic", "10"},
		{"kernel.panic_on_oops", "1"}, {"kernel.keys.root_maxkeys", "1000000"}, {"kernel.keys.root_maxbytes", "25000000"}} {
		proc := "/proc/sys/" + strings.ReplaceAll(kv[0], ".", "/")
		cur, err := os.ReadFile(proc)
		if err != nil || strings.TrimSpace(string(cur)) == kv[1] {
			continue
		}
		shield := n.path("kubelet", "shield", kv[0])
		if err := os.WriteFile(shield, []byte(kv[1]+"\n"), 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "mount --bind '%s' '%s'\n", shield, proc)
	}
	fmt.Fprintf(&b, "mount --bind '%s' /var/lib/kubelet/device-plugins\n", n.path("kubelet", "device-plugins"))
	fmt.Fprintf(&b, "mount --bind '%s' /var/log/containers\n", n.path("kubelet", "var-log-containers"))
	b.WriteString("exec \"$@\"\n")
	wrap := n.path("kubelet", "ns-wrap.sh")
	return wrap, os.WriteFile(wrap, []byte(b.String()), 0o755)
}

func (n *node) writeKubeletConfig() error {
	if err := n.freePorts("kubelet", "kubelet-healthz"); err != nil {
		return err
	}
	if err := os.WriteFile(n.path("resolv.conf"), []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%[1]s
# PID 1 is not systemd; containerd's runc uses cgroupfs too.
cgroupDriver: cgroupfs
cgroupRoot: /%[2]s
failCgroupV1: false
failSwapOn: false
address: %[3]s
port: %[4]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[5]d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[6]s}
authorization:
  mode: Webhook
makeIPTablesUtilChains: false
protectKernelDefaults: false
podLogsDir: %[7]s
volumePluginDir: %[8]s
resolvConf: %[9]s
clusterDNS: [%[10]s]
clusterDomain: %[11]s
# Small disks would put the node under DiskPressure at once with the default thresholds.
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
  imagefs.inodesFree: "1%%"
# The images were imported, and cannot be pulled again: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
shutdownGracePeriod: 0s
# -999 needs CAP_SYS_RESOURCE, which root may lack in a container.
oomScoreAdj: 0
`, n.sock(), nodeCgroup, nodeIP, n.ports["kubelet"], n.ports["kubelet-healthz"], n.path("pki", "ca.crt"),
		n.path("kubelet", "pod-logs"), n.path("kubelet", "volume-plugins"), n.path("resolv.conf"), ClusterDNS, ClusterDomain)
	return os.WriteFile(n.path("kubelet", "config.yaml"), []byte(cfg), 0o644)
}

// writeCNI writes the pod network: a bridge with host-local addresses, pods reaching only
// the subnet, the Service range through the bridge's address where kube-proxy translates it,
// and the link-local range through the node as a cloud's pods reach its metadata server (which
// the NetworkPolicy must then keep them from; nothing answers there unless a test puts a
// listener on the bridge). No default route, no masquerade.
func (n *node) writeCNI() error {
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "sailtui-node",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "isDefaultGateway": false,
    "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]], "dataDir": %q,
      "routes": [{"dst": %q, "gw": %q}, {"dst": %q, "gw": %q}]}
  }]
}
`, nodeBridge, nodeSubnet, nodeIP, n.path("cni", "ipam"), ServiceCIDR, nodeIP, linkLocalRange, nodeIP)
	if err := os.WriteFile(n.path("cni", "net.d", "10-sailtui-node.conflist"), []byte(conf), 0o644); err != nil {
		return err
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		b, err := os.ReadFile(filepath.Join("/usr/lib/cni", p))
		if err != nil {
			return err
		}
		if err := os.WriteFile(n.path("cni", "bin", p), b, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// writePKI makes the CA the kubelet trusts for client certificates and the API server's
// client certificate for the kubelet (group system:masters, so the kubelet's webhook
// authorization admits exec and logs).
func (n *node) writePKI() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "sailtui-node-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano() + 1),
		Subject:      pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for name, block := range map[string]*pem.Block{
		"ca.crt":             {Type: "CERTIFICATE", Bytes: caDER},
		"kubelet-client.crt": {Type: "CERTIFICATE", Bytes: der},
		"kubelet-client.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(n.path("pki", name), pem.EncodeToMemory(block), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// startContainerd starts the node's own containerd: private root, state, socket, runc root
// and CNI directories; every pull sent to a closed port, so an image that was not imported
// fails at once instead of timing out against a registry this machine cannot reach.
func (n *node) startContainerd(ctx context.Context) error {
	hosts := "server = \"http://127.0.0.1:9\"\n[host.\"http://127.0.0.1:9\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
	if err := os.WriteFile(n.path("containerd", "certs.d", "_default", "hosts.toml"), []byte(hosts), 0o644); err != nil {
		return err
	}
	cfg := n.containerdConfig()
	if err := os.WriteFile(n.path("containerd", "config.toml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := startProc("/usr/bin/containerd", n.path("log", "containerd.log"), "--config", n.path("containerd", "config.toml"))
	if err != nil {
		return err
	}
	n.ctrd = p
	return p.waitReady(ctx, func(ctx context.Context) error {
		_, err := n.ctr(ctx, "version")
		return err
	})
}

func (n *node) containerdConfig() string {
	r := n.path("containerd")
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
temp = %[3]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[4]q
[ttrpc]
  address = %[5]q
[debug]
  address = ""
  level = "warn"
[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %[6]q
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = %[7]q
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    enable_selinux = false
    # Without CAP_SYS_RESOURCE runc cannot lower oom_score_adj, and every sandbox would fail
    # with "can't get final child's PID from pipe: EOF": clamp to containerd's own.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    disable_tcp_service = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = %[8]q
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = %[9]q
      conf_dir = %[10]q
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = %[11]q
`, filepath.Join(r, "root"), filepath.Join(r, "state"), filepath.Join(r, "tmp"), n.sock(), n.sock()+".ttrpc",
		filepath.Join(r, "opt"), n.env.PauseImage, n.path("runc"), n.path("cni", "bin"), n.path("cni", "net.d"),
		filepath.Join(r, "certs.d"))
}
