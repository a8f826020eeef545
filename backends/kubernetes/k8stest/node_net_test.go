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
