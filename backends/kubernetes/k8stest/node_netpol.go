package k8stest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The node's NetworkPolicy enforcement (issue 32, item 2): kube-network-policies (tool module
// backends/kubernetes/netpol/tools) judges the first packet of every connection of the node's
// pods from the policies of its two ends. It takes the packets from an NFQUEUE; its own
// nftables rules need the kernel's nft queue expression, which this kernel lacks (its batch is
// rejected whole and it enforces nothing), so the harness feeds the queue itself with the xt
// NFQUEUE target through iptables: a mangle chain of its own, confined to the pod range,
// deleted at the end with both jumps (and the ip mangle table when the node made it).
const (
	// NetPolVersion is the kube-network-policies release of the tool module;
	// `make tools` builds it into .tools/bin/kube-network-policies-<version>.
	NetPolVersion = "v0.8.0"
	// netpolQueue is the NFQUEUE the hook sends packets to and the enforcer reads.
	netpolQueue = 100
	// netpolChain is the harness's mangle chain.
	netpolChain = "SAILTUI-NP"
	// netpolTable is the nftables table the enforcer makes on a kernel that accepts it (not
	// this one); it leaves it when killed, so CleanNode deletes it too.
	netpolTable = "kube-network-policies"
	// linkLocalRange is where cloud metadata servers answer; pods route it through the node
	// (writeCNI), and the projects' NetworkPolicy keeps them from it.
	linkLocalRange = "169.254.0.0/16"
)

func netpolBinary() string { return "kube-network-policies-" + NetPolVersion }

// netpolMarker records, before the node creates it, that the ip mangle table was not there:
// only then does CleanNode delete the table (once empty), also after a killed node.
func netpolMarker(dir string) string {
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".mangle-created")
}

// netpolRules are the rules of netpolChain. Connections are judged once, at their first
// packet (conntrack's NEW); a packet from or to a pod is queued, so both the source pod's
// egress and the destination pod's ingress policies apply. Nothing else on the host is.
func netpolRules() [][]string {
	return [][]string{
		{"-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"},
		{"-s", nodeSubnet, "-j", "NFQUEUE", "--queue-num", fmt.Sprint(netpolQueue)},
		{"-d", nodeSubnet, "-j", "NFQUEUE", "--queue-num", fmt.Sprint(netpolQueue)},
	}
}

// netpolJumps send packets into netpolChain. POSTROUTING sees what the node forwards or
// bridges between pods (after kube-proxy's DNAT, so a Service's packet carries its pod's
// address), as upstream's own postrouting chain does; root's own packets (the kubelet's
// probes, the harness) skip it, as upstream skips uid 0 — a forwarded packet has no owner, so
// `! --uid-owner 0` matches it. INPUT sees pods' packets to the node's own addresses (CoreDNS,
// and a metadata address the tests put on the bridge, as a cloud node answers one), which
// upstream, hooked on postrouting only, would not judge.
func netpolJumps() [][]string {
	return [][]string{
		{"POSTROUTING", "-m", "owner", "!", "--uid-owner", "0", "-j", netpolChain},
		{"INPUT", "-s", nodeSubnet, "-j", netpolChain},
	}
}

// startNetPol starts the enforcer, waits until it reads its queue, and only then installs the
// hook: a queue nobody reads drops its packets (fail closed).
func (n *node) startNetPol(ctx context.Context) error {
	p, err := startProc(filepath.Join(n.bin, netpolBinary()), n.path("log", "kube-network-policies.log"),
		"--kubeconfig", n.cluster.Kubeconfig, "--node-name", NodeName, "--nfqueue-id", fmt.Sprint(netpolQueue), "--v", "2")
	if err != nil {
		return err
	}
	p.name = "kube-network-policies"
	n.netpol = p
	if err := p.waitReady(ctx, func(context.Context) error {
		if !queueBound(netpolQueue) {
			return fmt.Errorf("queue %d not bound yet", netpolQueue)
		}
		return nil
	}); err != nil {
		return err
	}
	return installNetPolHook(ctx, n.dir)
}

// queueBound says whether a process reads NFQUEUE q (the kernel lists bound queues).
func queueBound(q int) bool {
	b, err := os.ReadFile("/proc/net/netfilter/nfnetlink_queue")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == fmt.Sprint(q) {
			return true
		}
	}
	return false
}

func mangle(ctx context.Context, args ...string) error {
	if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w", "-t", "mangle"}, args...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables -t mangle %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mangleTableExists asks nftables, not iptables: listing through iptables would create it.
func mangleTableExists() bool {
	return exec.Command("nft", "list", "table", "ip", "mangle").Run() == nil
}

func installNetPolHook(ctx context.Context, dir string) error {
	if !mangleTableExists() {
		if err := os.WriteFile(netpolMarker(dir), nil, 0o644); err != nil {
			return err
		}
	}
	if err := mangle(ctx, "-N", netpolChain); err != nil {
		return err
	}
	for _, r := range netpolRules() {
		if err := mangle(ctx, append([]string{"-A", netpolChain}, r...)...); err != nil {
			return err
		}
	}
	for _, j := range netpolJumps() {
		if err := mangle(ctx, append([]string{"-A"}, j...)...); err != nil {
			return err
		}
	}
	return nil
}

// cleanNetPol deletes the hook (every copy of each jump, the chain) and the enforcer's table,
// and the ip mangle table when the node made it and nothing else has put rules in it since.
func cleanNetPol(dir string) error {
	var errs []error
	ctx := context.Background()
	if mangleTableExists() {
		for _, j := range netpolJumps() {
			for range 10 {
				if mangle(ctx, append([]string{"-C"}, j...)...) != nil {
					break
				}
				if err := mangle(ctx, append([]string{"-D"}, j...)...); err != nil {
					errs = append(errs, err)
					break
				}
			}
		}
		if netpolChainExists() {
			errs = append(errs, mangle(ctx, "-F", netpolChain), mangle(ctx, "-X", netpolChain))
		}
		if _, err := os.Stat(netpolMarker(dir)); err == nil {
			if out, err := exec.Command("iptables", "-w", "-t", "mangle", "-S").Output(); err == nil && onlyPolicies(string(out)) {
				if out, err := exec.Command("nft", "delete", "table", "ip", "mangle").CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("nft delete table ip mangle: %w: %s", err, out))
				}
			}
		}
	}
	if !mangleTableExists() {
		_ = os.Remove(netpolMarker(dir))
	}
	if out, err := exec.Command("nft", "delete", "table", "inet", netpolTable).CombinedOutput(); err != nil &&
		!strings.Contains(string(out), "No such file") {
		errs = append(errs, fmt.Errorf("nft delete table inet %s: %w: %s", netpolTable, err, out))
	}
	return errors.Join(errs...)
}

// onlyPolicies says whether an `iptables -S` listing holds nothing but the built-in chains'
// policies: no rule, no chain of anyone's.
func onlyPolicies(listing string) bool {
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		if line != "" && !strings.HasPrefix(line, "-P ") {
			return false
		}
	}
	return true
}

func netpolChainExists() bool {
	return exec.Command("nft", "list", "chain", "ip", "mangle", netpolChain).Run() == nil
}

// netpolLeftovers names what of the hook is on the host: the chain, a jump, the enforcer's
// table, the ip mangle table the node made.
func netpolLeftovers(dir string) []string {
	var left []string
	if mangleTableExists() {
		if netpolChainExists() {
			left = append(left, "iptables chain mangle "+netpolChain)
		}
		for _, j := range netpolJumps() {
			if mangle(context.Background(), append([]string{"-C"}, j...)...) == nil {
				left = append(left, "iptables rule mangle "+strings.Join(j, " "))
			}
		}
		if _, err := os.Stat(netpolMarker(dir)); err == nil {
			left = append(left, "nftables table ip mangle (made by the node)")
		}
	}
	if exec.Command("nft", "list", "table", "inet", netpolTable).Run() == nil {
		left = append(left, "nftables table inet "+netpolTable)
	}
	return left
}

// LinkLocalListener listens on addr (a link-local address such as the cloud metadata
// server's 169.254.169.254, with a port) on the node's bridge, where pods reach it through the
// node as a cloud's pods reach their metadata server: the NetworkPolicy must keep project pods
// from it. The address goes when tb ends (and with the bridge, when the node stops).
func (n *Node) LinkLocalListener(tb testing.TB, addr string) net.Listener {
	tb.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatal(err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLinkLocalUnicast() || ip.To4() == nil {
		tb.Fatalf("LinkLocalListener: %s is not an IPv4 link-local address", host)
	}
	if out, err := exec.Command("ip", "addr", "add", host+"/32", "dev", nodeBridge).CombinedOutput(); err != nil {
		tb.Fatalf("put %s on the node's bridge %s: %v: %s", host, nodeBridge, err, out)
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "addr", "del", host+"/32", "dev", nodeBridge).CombinedOutput(); err != nil {
			tb.Errorf("remove %s from the node's bridge %s: %v: %s", host, nodeBridge, err, out)
		}
	})
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		tb.Fatalf("listen on %s: %v", addr, err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	return ln
}
