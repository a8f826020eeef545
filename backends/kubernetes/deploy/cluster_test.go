package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/deploy"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
)

// kubectl runs kubectl against the cluster with stdin; it fails the test when kubectl is missing.
func kubectl(t *testing.T, c *k8stest.Cluster, stdin []byte, args ...string) (string, string, error) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("these tests drive the real kubectl, which is not on PATH: %v", err)
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	return so.String(), se.String(), err
}

// canI is one `kubectl auth can-i` question about the sweeper's ServiceAccount.
type canI struct {
	verb, resource, subresource string
	namespace                   string // "" for a cluster-scoped resource; "*" for all namespaces
	want                        bool
}

func (q canI) String() string {
	r := q.resource
	if q.subresource != "" {
		r += "/" + q.subresource
	}
	where := "cluster-wide"
	switch q.namespace {
	case "":
	case "*":
		where = "in all namespaces"
	default:
		where = "in " + q.namespace
	}
	return fmt.Sprintf("%s %s %s", q.verb, r, where)
}

// ask runs every question through `kubectl auth can-i --as=<the service account>`, a few at
// once, and reports each wrong answer.
func ask(t *testing.T, c *k8stest.Cluster, saNamespace string, qs []canI) {
	t.Helper()
	as := "--as=system:serviceaccount:" + saNamespace + ":" + kubernetes.SweeperServiceAccount
	errs := make([]string, len(qs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			args := []string{"auth", "can-i", q.verb, q.resource, as}
			if q.subresource != "" {
				args = append(args, "--subresource="+q.subresource)
			}
			switch q.namespace {
			case "":
			case "*":
				args = append(args, "--all-namespaces")
			default:
				args = append(args, "-n", q.namespace)
			}
			out, stderr, err := kubectl(t, c, nil, args...)
			answer := strings.TrimSpace(out)
			if answer != "yes" && answer != "no" {
				errs[i] = fmt.Sprintf("%s: kubectl said %q (%v) %s", q, out, err, stderr)
				return
			}
			if (answer == "yes") != q.want {
				errs[i] = fmt.Sprintf("%s: %s, want %v", q, answer, map[bool]string{true: "yes", false: "no"}[q.want])
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, e := range errs {
		if e != "" {
			t.Error(e)
			n++
		}
	}
	t.Logf("%d can-i questions, %d wrong", len(qs), n)
}

// kubectlResource names a rule's resource as kubectl does: resource.group (core: resource),
// and the subresource apart.
func kubectlResource(group, resource string) (string, string) {
	res, sub, _ := strings.Cut(resource, "/")
	if group != "" {
		res += "." + group
	}
	return res, sub
}

// granted are the (resource, verb) pairs of rules, as `kubectl auth can-i --list` names them.
func granted(rules ...[]rbacv1.PolicyRule) map[string]bool {
	out := map[string]bool{}
	for _, rs := range rules {
		for _, r := range rs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					name, sub := kubectlResource(g, res)
					if sub != "" {
						name += "/" + sub
					}
					for _, v := range r.Verbs {
						out[name+" "+v] = true
					}
				}
			}
		}
	}
	return out
}

// ruleQuestions asks each verb each rule grants, in namespace; want is the answer expected.
func ruleQuestions(rules []rbacv1.PolicyRule, namespace string, want bool) []canI {
	var qs []canI
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				name, sub := kubectlResource(g, res)
				for _, v := range r.Verbs {
					qs = append(qs, canI{verb: v, resource: name, subresource: sub, namespace: namespace, want: want})
				}
			}
		}
	}
	return qs
}

var listRow = regexp.MustCompile(`^(\S+)?\s*\[([^\]]*)\]\s+\[([^\]]*)\]\s+\[([^\]]*)\]$`)

// canList is everything `kubectl auth can-i --list` says user may do to resources in namespace,
// as "resource verb" pairs (non-resource URLs left out).
func canList(t *testing.T, c *k8stest.Cluster, user, namespace string) map[string]bool {
	t.Helper()
	out, stderr, err := kubectl(t, c, nil, "auth", "can-i", "--list", "--no-headers", "--as="+user, "-n", namespace)
	if err != nil {
		t.Fatalf("kubectl auth can-i --list: %v\n%s", err, stderr)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		m := listRow.FindStringSubmatch(strings.TrimRight(l, " "))
		if m == nil {
			t.Fatalf("cannot read the line %q of kubectl auth can-i --list:\n%s", l, out)
		}
		if m[1] == "" {
			continue
		}
		if m[3] != "" {
			t.Errorf("%s: %s is granted on named resources %s only", user, m[1], m[3])
		}
		for _, v := range strings.Fields(m[4]) {
			got[m[1]+" "+v] = true
		}
	}
	return got
}

// checkList compares what the sweeper may do in namespace with exactly baseline (what every
// service account may do) plus want.
func checkList(t *testing.T, c *k8stest.Cluster, saNamespace, namespace string, want map[string]bool) {
	t.Helper()
	baseline := canList(t, c, "system:serviceaccount:"+saNamespace+":sailtui-baseline", namespace)
	got := canList(t, c, "system:serviceaccount:"+saNamespace+":"+kubernetes.SweeperServiceAccount, namespace)
	for k := range got {
		if !want[k] && !baseline[k] {
			t.Errorf("in %s the sweeper may %s, which no rule of rbac.go grants there", namespace, k)
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("in %s the sweeper may not %s", namespace, k)
		}
	}
}

// waitCan waits until the authorizer answers q as wanted: RBAC objects reach the API server's
// authorizer through an informer, a moment after they are written.
func waitCan(t *testing.T, c *k8stest.Cluster, saNamespace string, q canI) {
	t.Helper()
	as := "--as=system:serviceaccount:" + saNamespace + ":" + kubernetes.SweeperServiceAccount
	args := []string{"auth", "can-i", q.verb, q.resource, as}
	if q.subresource != "" {
		args = append(args, "--subresource="+q.subresource)
	}
	if q.namespace != "" {
		args = append(args, "-n", q.namespace)
	}
	want := map[bool]string{true: "yes", false: "no"}[q.want]
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := kubectl(t, c, nil, args...)
		if strings.TrimSpace(out) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %q after 30s, want %s", q, out, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func createNamespace(t *testing.T, c *k8stest.Cluster, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// On the real API server: the manifests pass a server-side dry run, apply for real, and the
// sweeper's ServiceAccount can do exactly what the rules in rbac.go say, where they say it:
// the cluster rules cluster-wide, the project rules only in a namespace with the RoleBinding
// the runtime creates (deploy.ProjectRoleBinding), nothing in other namespaces; never secrets,
// never exec outside project namespaces (inside only for the S3 sandwich), never creating
// namespaces or patching deployments cluster-wide.
func TestManifestsOnAPIServer(t *testing.T) {
	c := k8stest.Start(t)
	ctx := context.Background()
	const sweeperNS = kubernetes.SweeperNamespace

	y, err := deploy.YAML(deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The namespace exists before the manifests are applied, as the README's steps make it
	// (its ConfigMap and Secret live there): an API server refuses even a dry-run create in a
	// namespace that does not exist yet, and a dry run creates none.
	if out, stderr, err := kubectl(t, c, nil, "create", "namespace", sweeperNS); err != nil {
		t.Fatalf("kubectl create namespace: %v\n%s%s", err, out, stderr)
	}
	if out, stderr, err := kubectl(t, c, y, "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s%s", err, out, stderr)
	} else {
		t.Logf("dry run:\n%s%s", out, stderr)
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Get(ctx, kubernetes.SweeperClusterRole, metav1.GetOptions{}); err == nil {
		t.Fatalf("the dry run created ClusterRole %s", kubernetes.SweeperClusterRole)
	}
	if out, stderr, err := kubectl(t, c, y, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, out, stderr)
	}
	// Applying again changes nothing and fails nothing.
	if out, stderr, err := kubectl(t, c, y, "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply --dry-run=server over the applied manifests: %v\n%s%s", err, out, stderr)
	}
	// The project role is bound by no ClusterRoleBinding.
	crbs, err := c.Client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range crbs.Items {
		if b.RoleRef.Name == kubernetes.SweeperProjectRole {
			t.Errorf("ClusterRoleBinding %s binds %s cluster-wide", b.Name, kubernetes.SweeperProjectRole)
		}
	}

	// A project namespace as the runtime makes it (with the RoleBinding), and another namespace
	// without one.
	project, other := "proj-deploytest", "proj-unbound"
	createNamespace(t, c, project)
	createNamespace(t, c, other)
	rb := deploy.ProjectRoleBinding(project, sweeperNS, kubernetes.SweeperServiceAccount)
	if _, err := c.Client.RbacV1().RoleBindings(project).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, s3 := range []bool{false, true} {
		t.Run(fmt.Sprintf("s3-snapshots=%v", s3), func(t *testing.T) {
			if s3 {
				y, err := deploy.YAML(deploy.Options{S3Snapshots: true})
				if err != nil {
					t.Fatal(err)
				}
				if out, stderr, err := kubectl(t, c, y, "apply", "-f", "-"); err != nil {
					t.Fatalf("kubectl apply --s3-snapshots: %v\n%s%s", err, out, stderr)
				}
			}
			// Wait for the authorizer to see the bindings and the role as applied.
			waitCan(t, c, sweeperNS, canI{verb: "delete", resource: "namespaces", want: true})
			waitCan(t, c, sweeperNS, canI{verb: "create", resource: "volumesnapshots.snapshot.storage.k8s.io", namespace: project, want: true})
			waitCan(t, c, sweeperNS, canI{verb: "create", resource: "pods", subresource: "exec", namespace: project, want: s3})

			clusterRules, projectRules := kubernetes.SweeperClusterRules(), kubernetes.SweeperProjectRules(s3)
			// The whole list, exactly: in the project namespace the cluster rules and the
			// project rules; anywhere else the cluster rules alone.
			checkList(t, c, sweeperNS, project, granted(clusterRules, projectRules))
			for _, ns := range []string{other, sweeperNS} {
				checkList(t, c, sweeperNS, ns, granted(clusterRules))
			}

			var qs []canI
			// Every verb of the cluster rules, cluster-wide.
			qs = append(qs, ruleQuestions(clusterRules, "", true)...)
			// Every verb of the project rules in the project namespace, and none of them in
			// another namespace or across all of them.
			qs = append(qs, ruleQuestions(projectRules, project, true)...)
			qs = append(qs, ruleQuestions(projectRules, other, false)...)
			qs = append(qs, ruleQuestions(projectRules, "*", false)...)
			// Explicitly denied.
			for _, ns := range []string{project, other, sweeperNS, "*"} {
				qs = append(qs,
					canI{verb: "get", resource: "secrets", namespace: ns},
					canI{verb: "list", resource: "secrets", namespace: ns},
					canI{verb: "watch", resource: "secrets", namespace: ns},
				)
			}
			for _, ns := range []string{other, sweeperNS, "kube-system", "*"} {
				qs = append(qs, canI{verb: "create", resource: "pods", subresource: "exec", namespace: ns})
			}
			qs = append(qs,
				canI{verb: "create", resource: "pods", subresource: "exec", namespace: project, want: s3},
				canI{verb: "create", resource: "namespaces"},
				canI{verb: "patch", resource: "deployments.apps", namespace: "*"},
				canI{verb: "patch", resource: "deployments.apps", namespace: other},
				canI{verb: "create", resource: "rolebindings.rbac.authorization.k8s.io", namespace: project},
				canI{verb: "bind", resource: "clusterroles.rbac.authorization.k8s.io"},
				canI{verb: "escalate", resource: "clusterroles.rbac.authorization.k8s.io"},
				canI{verb: "impersonate", resource: "serviceaccounts"},
				canI{verb: "*", resource: "*", namespace: "*"},
			)
			ask(t, c, sweeperNS, qs)
		})
	}
}
