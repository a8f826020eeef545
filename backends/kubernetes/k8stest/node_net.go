package k8stest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The node's Services and names (issue 32): kube-proxy in nftables mode routes ClusterIPs to
// pods, its rules in a table of its own; CoreDNS, a host process on the bridge's address,
// answers for cluster.local through its kubernetes plugin, behind the kube-dns Service (a
// selectorless Service whose EndpointSlice names the bridge address), which the kubelet gives
// pods as their nameserver. So a pod reaches a Service by name the way it does in a real
// cluster: resolv.conf → the kube-dns ClusterIP → kube-proxy → CoreDNS, then the Service's
// ClusterIP → kube-proxy → a pod.
const (
	// ServiceCIDR is the API server's Service range; pods get a route to it through the
	// bridge, where kube-proxy's rules translate it.
	ServiceCIDR = "10.96.0.0/16"
	// ClusterDNS is the kube-dns Service's ClusterIP, the nameserver of every pod.
	ClusterDNS    = "10.96.0.10"
	ClusterDomain = "cluster.local"
	// kubernetesServiceIP is the "kubernetes" Service's ClusterIP (the range's first address),
	// the name the harness looks up to see DNS work end to end.
	kubernetesServiceIP = "10.96.0.1"
	// CoreDNSVersion is the CoreDNS release of the tool module backends/kubernetes/coredns/tools;
	// `make tools` builds it into .tools/bin/coredns-<version>.
	CoreDNSVersion = "v1.15.0"
	// kubeProxyTable is the nftables table (families ip and ip6) kube-proxy keeps its rules in;
	// it leaves it behind when it stops, so CleanNode deletes it.
	kubeProxyTable = "kube-proxy"
)

func coreDNSBinary() string { return "coredns-" + CoreDNSVersion }

// forwardRule lets bridged traffic between the node's pods through the host's filter FORWARD
// chain: Docker sets its policy to DROP with bridge netfilter on, which drops pod-to-pod
// packets on the bridge, and a ClusterIP's translated packets too. CleanNode deletes it.
var forwardRule = []string{"FORWARD", "-i", nodeBridge, "-o", nodeBridge, "-j", "ACCEPT"}

// allowForward inserts forwardRule unless it is there.
func allowForward(ctx context.Context) error {
	if exec.CommandContext(ctx, "iptables", append([]string{"-C"}, forwardRule...)...).Run() == nil {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-I"}, forwardRule...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables -I %s: %w: %s", strings.Join(forwardRule, " "), err, out)
	}
	return nil
}

// cleanNetwork deletes what the node's network left on the host: forwardRule (every copy),
// kube-proxy's tables and the policy hook (node_netpol.go). It then checks that none is left.
func cleanNetwork(dir string) error {
	var errs []error
	for range 10 {
		if exec.Command("iptables", append([]string{"-C"}, forwardRule...)...).Run() != nil {
			break
		}
		if out, err := exec.Command("iptables", append([]string{"-D"}, forwardRule...)...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("iptables -D %s: %w: %s", strings.Join(forwardRule, " "), err, out))
			break
		}
	}
	for _, family := range []string{"ip", "ip6"} {
		if out, err := exec.Command("nft", "delete", "table", family, kubeProxyTable).CombinedOutput(); err != nil &&
			!strings.Contains(string(out), "No such file") {
			errs = append(errs, fmt.Errorf("nft delete table %s %s: %w: %s", family, kubeProxyTable, err, out))
		}
	}
	errs = append(errs, cleanNetPol(dir))
	if left := networkLeftovers(dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left on the host after cleaning: %s", strings.Join(left, "; ")))
	}
	return errors.Join(errs...)
}

// networkLeftovers names what of the node's network is on the host: the bridge, forwardRule,
// kube-proxy's tables, the policy hook.
func networkLeftovers(dir string) []string {
	var left []string
	if _, err := net.InterfaceByName(nodeBridge); err == nil {
		left = append(left, "bridge "+nodeBridge)
	}
	if exec.Command("iptables", append([]string{"-C"}, forwardRule...)...).Run() == nil {
		left = append(left, "iptables rule "+strings.Join(forwardRule, " "))
	}
	if out, err := exec.Command("nft", "list", "tables").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "table" && f[2] == kubeProxyTable {
				left = append(left, "nftables table "+f[1]+" "+f[2])
			}
		}
	}
	return append(left, netpolLeftovers(dir)...)
}

// startKubeProxy runs kube-proxy in nftables mode for the node: ClusterIPs of the Service range
// to the pods of the bridge's subnet. It touches no conntrack sysctl (maxPerCore and the
// timeouts 0: left as they are) and serves NodePorts on the bridge's address only.
func (n *node) startKubeProxy(ctx context.Context) error {
	if err := n.freePorts("kube-proxy-healthz", "kube-proxy-metrics"); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
bindAddress: %[3]s
clusterCIDR: %[4]s
detectLocalMode: ClusterCIDR
nodePortAddresses: ["%[3]s/32"]
healthzBindAddress: 127.0.0.1:%[5]d
metricsBindAddress: 127.0.0.1:%[6]d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, n.cluster.Kubeconfig, NodeName, nodeIP, nodeSubnet, n.ports["kube-proxy-healthz"], n.ports["kube-proxy-metrics"])
	if err := os.WriteFile(n.path("kube-proxy.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := startProc(filepath.Join(n.bin, "kube-proxy"), n.path("log", "kube-proxy.log"),
		"--config", n.path("kube-proxy.yaml"), "--v", "1")
	if err != nil {
		return err
	}
	n.proxy = p
	hc := &http.Client{Timeout: 2 * time.Second}
	url := "http://127.0.0.1:" + strconv.Itoa(n.ports["kube-proxy-healthz"]) + "/healthz"
	return p.waitReady(ctx, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		if out, err := exec.CommandContext(ctx, "nft", "list", "table", "ip", kubeProxyTable).CombinedOutput(); err != nil {
			return fmt.Errorf("nft list table ip %s: %w: %s", kubeProxyTable, err, out)
		}
		return nil
	})
}

// startCoreDNS runs CoreDNS on the bridge's address, port 53, where pods reach it, and the
// kube-dns Service in front of it; ready once a lookup through the Service's ClusterIP (so
// through kube-proxy's rules) answers with the kubernetes Service's address.
func (n *node) startCoreDNS(ctx context.Context) error {
	if err := n.freePorts("coredns-ready"); err != nil {
		return err
	}
	// Names outside the cluster go where this host's resolver sends them.
	corefile := fmt.Sprintf(`.:53 {
    bind %[1]s
    errors
    ready 127.0.0.1:%[2]d
    kubernetes %[3]s in-addr.arpa ip6.arpa {
        kubeconfig %[4]s k8stest
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    forward . /etc/resolv.conf
    cache 5
}
`, nodeIP, n.ports["coredns-ready"], ClusterDomain, n.cluster.Kubeconfig)
	if err := os.WriteFile(n.path("Corefile"), []byte(corefile), 0o644); err != nil {
		return err
	}
	p, err := startProc(filepath.Join(n.bin, coreDNSBinary()), n.path("log", "coredns.log"), "-conf", n.path("Corefile"))
	if err != nil {
		return err
	}
	p.name = "coredns"
	n.dns = p
	if err := n.applyKubeDNS(ctx); err != nil {
		return err
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(ClusterDNS, "53"))
	}}
	name := "kubernetes.default.svc." + ClusterDomain + "."
	return p.waitReady(ctx, func(ctx context.Context) error {
		addrs, err := r.LookupHost(ctx, name)
		if err != nil {
			return fmt.Errorf("look up %s at %s: %w", name, ClusterDNS, err)
		}
		if len(addrs) != 1 || addrs[0] != kubernetesServiceIP {
			return fmt.Errorf("%s at %s: %v, want %s", name, ClusterDNS, addrs, kubernetesServiceIP)
		}
		return nil
	})
}

// applyKubeDNS makes kube-system/kube-dns: ClusterIP ClusterDNS, no selector, and an
// EndpointSlice of its own naming CoreDNS on the bridge's address.
func (n *node) applyKubeDNS(ctx context.Context) error {
	labels := map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
	ports := []corev1.ServicePort{
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem, Labels: labels},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ClusterDNS, Ports: ports},
	}
	if _, err := n.cluster.Client.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kube-dns Service: %w", err)
	}
	ready := true
	p := func(name string, proto corev1.Protocol) discoveryv1.EndpointPort {
		port := int32(53)
		return discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto}
	}
	node := NodeName
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-coredns", Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns",
			discoveryv1.LabelManagedBy:   "k8stest.sailtui.invalid",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{nodeIP}, NodeName: &node,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{p("dns", corev1.ProtocolUDP), p("dns-tcp", corev1.ProtocolTCP)},
	}
	if _, err := n.cluster.Client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kube-dns EndpointSlice: %w", err)
	}
	return nil
}
