package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The binary leaves out client-go's full Clientset and the scheme of every API group it
// carries: every sailtui process, the console on any runtime included, paid for their package
// init at start (backends/kubernetes/kubeclient says how much). So are client-go's fake
// clients (k8s.io/client-go/testing, which gentype imports), whose managed-fields and OpenAPI
// packages cost start memory for code that never runs. The kubernetes runtime speaks through
// kubeclient, which registers only the groups it uses; the groups allowed here are those,
// plus the ones `sailtui manifests` writes. A new group costs start time: add it here
// knowingly.
func TestBinaryLeavesOutClientset(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"k8s.io/client-go/kubernetes",
		"k8s.io/client-go/discovery",
		"github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned",
		"k8s.io/client-go/gentype",
		"k8s.io/client-go/testing",
	}
	allowedGroups := []string{
		"core/v1", "apps/v1", "networking/v1", "rbac/v1", "authorization/v1", // the runtime
		"admissionregistration/v1", "batch/v1", // the manifests
	}
	var clients, groups []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				clients = append(clients, pkg)
			}
		}
		if group, ok := strings.CutPrefix(pkg, "k8s.io/api/"); ok && !slices.Contains(allowedGroups, group) {
			groups = append(groups, group)
		}
	}
	if len(clients) > 0 {
		t.Errorf("sailtui depends on %d packages of the full or fake clients: %s", len(clients), strings.Join(clients, " "))
	}
	if len(groups) > 0 {
		t.Errorf("sailtui depends on %d more API groups: %s", len(groups), strings.Join(groups, " "))
	}
}
