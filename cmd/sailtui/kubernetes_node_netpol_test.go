package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
)

// NetworkPolicy enforced on the real node (issue 32, item 2): with the projects' policy
// (project-isolation) judged by kube-network-policies, from real pods:
//   - a pod of project A cannot open a connection to B's pod nor to B's Service, nor B to A;
//   - A's containers reach each other by name (so DNS works through the policy);
//   - a pod in the ingress controller's namespace (K8S_INGRESS_NAMESPACE; a busybox pod
//     stands in for the controller) reaches A's dev pod and its Service;
//   - a listener on the link-local metadata address 169.254.169.254:80, which the node routes
//     pods to as a cloud does, is unreachable from a project pod.
//
// The ingress pod, whose namespace has no policy, reaches B's pod and the metadata listener
// too: every refusal above is the policy's, not a route or a server missing.
//
// Each assertion was checked by hand to fail when its part is taken away: with both
// projects' NetworkPolicy deleted before the probes, A reached B's pod and Service, B reached
// A's, and A reached the metadata listener; with the hook's two jumps deleted (nothing reaches
// the enforcer), the same five. With the ingress namespace's peer taken out of A's policy, the
// ingress pod's probes of A's pod and Service were closed; with the same-namespace peers taken
// out, both probes by name were.
func TestKubernetesNodeNetworkPolicy(t *testing.T) {
	t.Parallel()
	c, n := nodeCLI(t, "")
	ctx := t.Context()
	ingressNS := "np-ingress-" + randSuffix(t)
	c.env = append(c.env, "K8S_INGRESS_NAMESPACE="+ingressNS)

	// The metadata server stand-in, on the node's bridge.
	ln := n.LinkLocalListener(t, "169.254.169.254:80")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "metadata\n")
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	dev := `echo "$NAME" > hello; exec sailtui devserver --port "$PORT"`
	a, b := "npa-"+randSuffix(t), "npb-"+randSuffix(t)
	for _, p := range []struct{ slug, ctr, port string }{{a, "web", "8080"}, {a, "api", "8081"}, {b, "web", "8080"}} {
		if p.ctr == "web" {
			c.ok("project", "create", p.slug)
		}
		c.ok("container", "add", p.slug, p.ctr, "--dir", p.ctr, "--mkdir", "--port", p.port,
			"--command", strings.ReplaceAll(dev, "$NAME", p.slug+"-"+p.ctr))
	}
	c.ok("project", "start", a)
	c.ok("project", "start", b)
	for _, w := range [][2]string{{a, "web"}, {a, "api"}, {b, "web"}} {
		waitState(t, c, w[0], w[1], "running")
	}
	nsOf := func(slug string) string { p, _ := c.stored(slug); return "proj-" + p.ID }
	// addr is the Service's ClusterIP and its one ready pod's IP.
	addr := func(slug, svcName string) (svcIP, podIP string) {
		t.Helper()
		ns := nsOf(slug)
		svc, err := n.Client.CoreV1().Services(ns).Get(ctx, svcName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector).String()
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			pods, err := n.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return false, err
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning {
					podIP = p.Status.PodIP
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("the pod of %s/%s: %v", ns, svcName, err)
		}
		return svc.Spec.ClusterIP, podIP
	}
	aSvc, aPod := addr(a, "web")
	bSvc, bPod := addr(b, "web")

	// Each probe GETs /hello (a metadata listener answers anything) and says open with the
	// body, or closed; all of one pod's probes run at once, each waiting at most 3 s.
	get := strings.Replace(dockertest.Fetch, `"HTTP/1.0 200"*`, `"HTTP/1."?" 200"*`, 1)
	probeScript := func(probes [][4]string) string {
		var s strings.Builder
		s.WriteString("probe() {\nn=$1; shift\nif out=$(\n" + get + "\n) 2>/dev/null; then echo \"$n open $out\"; else echo \"$n closed\"; fi\n}\n")
		for _, p := range probes {
			fmt.Fprintf(&s, "probe %s %s %s %s &\n", p[0], p[1], p[2], p[3])
		}
		s.WriteString("wait\n")
		return s.String()
	}
	check := func(from, out string, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if name, rest, ok := strings.Cut(line, " "); ok {
				got[name] = rest
			}
		}
		names := make([]string, 0, len(want))
		for name := range want {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if got[name] != want[name] {
				t.Errorf("from %s, %s: %q, want %q", from, name, got[name], want[name])
			}
		}
	}
	fromPod := func(slug, ctr string, probes [][4]string) string {
		t.Helper()
		r := c.run("exec", slug, ctr, "--", "sh", "-c", probeScript(probes))
		if r.code != 0 {
			t.Fatalf("probes from %s/%s: exit %d\n%s%s", slug, ctr, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}

	check(a+"/web", fromPod(a, "web", [][4]string{
		{"b-pod", bPod, "8080", "/hello"}, {"b-service", bSvc, "8080", "/hello"},
		{"api-by-name", "api", "8081", "/hello"}, {"metadata", "169.254.169.254", "80", "/"},
	}), map[string]string{
		"b-pod": "closed", "b-service": "closed", "api-by-name": "open " + a + "-api", "metadata": "closed",
	})
	// DNS through the policy (UDP to CoreDNS on the node, judged at INPUT): the name the
	// probe above used resolves to the Service's address.
	apiSvc, _ := addr(a, "api")
	if r := c.run("exec", a, "web", "--", "nslookup", "api"); !strings.Contains(r.stdout, "Name:\tapi."+nsOf(a)+".svc."+k8stest.ClusterDomain+"\nAddress: "+apiSvc+"\n") {
		t.Errorf("nslookup api in %s/web: exit %d, want api.%s.svc.%s at %s\n%s%s", a, r.code, nsOf(a), k8stest.ClusterDomain, apiSvc, r.stdout, r.stderr)
	}
	check(a+"/api", fromPod(a, "api", [][4]string{{"web-by-name", "web", "8080", "/hello"}}),
		map[string]string{"web-by-name": "open " + a + "-web"})
	check(b+"/web", fromPod(b, "web", [][4]string{
		{"a-pod", aPod, "8080", "/hello"}, {"a-service", aSvc, "8080", "/hello"},
	}), map[string]string{"a-pod": "closed", "a-service": "closed"})

	// The ingress controller's namespace: a plain pod that runs its probes and exits. Its
	// address reaches the enforcer through the API server a moment after the pod starts, so
	// it waits a little first (a SYN judged before that would be retried after 1 s anyway).
	out := ingressProbes(t, n, ingressNS, probeScript([][4]string{
		{"a-pod", aPod, "8080", "/hello"}, {"a-service", aSvc, "8080", "/hello"},
		{"b-pod", bPod, "8080", "/hello"}, {"metadata", "169.254.169.254", "80", "/"},
	}))
	check(ingressNS, out, map[string]string{
		"a-pod": "open " + a + "-web", "a-service": "open " + a + "-web",
		"b-pod": "open " + b + "-web", "metadata": "open metadata",
	})
}

// ingressProbes runs script in a pod of namespace ns (made here, deleted at the end) and
// returns what it printed.
func ingressProbes(t *testing.T, n *k8stest.Node, ns, script string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := n.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		_ = n.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	no, zero := false, int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "probe", Image: n.Env.Image, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "sleep 2\n" + script},
			}},
		},
	}
	// A new namespace's default ServiceAccount, which admission wants, comes a moment later.
	err := wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := n.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("create the probe pod in %s: %v", ns, err)
	}
	var phase corev1.PodPhase
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := n.Client.CoreV1().Pods(ns).Get(ctx, "probe", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	if err != nil {
		t.Fatalf("the probe pod in %s did not finish (%s): %v", ns, phase, err)
	}
	logs, err := n.Client.CoreV1().Pods(ns).GetLogs("probe", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of the probe pod in %s: %v", ns, err)
	}
	if phase != corev1.PodSucceeded {
		t.Fatalf("the probe pod in %s: %s\n%s", ns, phase, logs)
	}
	return string(logs)
}
