package k8stest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sailtui/sailtui/backends/internal/testproc"
)

// The node runs .tools/bin/coredns-<CoreDNSVersion>: the Makefile must build that version, from
// a tool module that requires it.
func TestCoreDNSVersionAgrees(t *testing.T) {
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for file, re := range map[string]string{
		"Makefile": `(?m)^COREDNS_VERSION\s*:=\s*(\S+)$`,
		"backends/kubernetes/coredns/tools/go.mod": `(?m)^require github\.com/coredns/coredns (\S+)$`,
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(re).FindSubmatch(b)
		if m == nil || string(m[1]) != CoreDNSVersion {
			t.Errorf("%s: CoreDNS %q, want %s (k8stest.CoreDNSVersion)", file, m, CoreDNSVersion)
		}
	}
}

// The node runs .tools/bin/kube-network-policies-<NetPolVersion>: the Makefile must build that
// version, from a tool module that requires it.
func TestNetPolVersionAgrees(t *testing.T) {
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for file, re := range map[string]string{
		"Makefile": `(?m)^NETPOL_VERSION\s*:=\s*(\S+)$`,
		"backends/kubernetes/netpol/tools/go.mod": `(?m)^(?:require )?\s*sigs\.k8s\.io/kube-network-policies (\S+)$`,
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(re).FindSubmatch(b)
		if m == nil || string(m[1]) != NetPolVersion {
			t.Errorf("%s: kube-network-policies %q, want %s (k8stest.NetPolVersion)", file, m, NetPolVersion)
		}
	}
}

// The ip mangle table the node made is deleted only when nothing but the built-in chains'
// policies is left in it: a rule or chain of anyone else's keeps it.
func TestOnlyPolicies(t *testing.T) {
	for listing, want := range map[string]bool{
		"": true,
		"-P PREROUTING ACCEPT\n-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n-P POSTROUTING ACCEPT\n": true,
		"-P PREROUTING ACCEPT\n-N OTHER\n":                             false,
		"-P POSTROUTING ACCEPT\n-A POSTROUTING -j MARK --set-mark 1\n": false,
	} {
		if got := onlyPolicies(listing); got != want {
			t.Errorf("onlyPolicies(%q) = %v, want %v", listing, got, want)
		}
	}
}
