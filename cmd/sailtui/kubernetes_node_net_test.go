package main

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
)

// Services and names on the real node (issue 32, item 1): from a project's app pod, its
// service (busybox's httpd, as in the docker tests) answers by name, name.<namespace> and
// name.<namespace>.svc.cluster.local, each resolved (glibc's getent: search list, ndots) by
// CoreDNS through the kube-dns ClusterIP to the Service's ClusterIP, and reached through
// kube-proxy's rules; the connection's export (${HOST}) reaches it too. Another project's
// Service does not resolve by its short name (it does by its full one: names are not the
// isolation, NetworkPolicy is).
//
// Each part was taken away once by hand on a running node, and this test failed: CoreDNS
// stopped (SIGSTOP): "cannot resolve db"; kube-proxy stopped and its nftables table deleted:
// "cannot resolve db" (the kube-dns ClusterIP routes nowhere); the node's FORWARD accept
// deleted: names resolve, every GET times out (Docker's FORWARD policy drops the packets).
func TestKubernetesNodeServicesByName(t *testing.T) {
	t.Parallel()
	c, n := nodeCLI(t, "")
	ctx := t.Context()

	other := "others-" + randSuffix(t)
	c.ok("project", "create", other)
	c.ok("container", "add", other, "elsewhere", "--dir", "e", "--mkdir", "--port", "8080", "--command", `exec sailtui devserver --port "$PORT"`)
	c.ok("project", "start", other)

	slug := "names-" + randSuffix(t)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "web", "--dir", "web", "--mkdir", "--port", "8080", "--command", `exec sailtui devserver --port "$PORT"`)
	c.ok("container", "add", slug, "db", "--service", "--image", n.Env.Image, "--data", "/var/lib/kv", "--port", "5432",
		"--command", "exec httpd -f -p 5432 -h /var/lib/kv", "--export", "DB_URL=http://${HOST}:${PORT}/app")
	c.ok("connect", slug, "web", "db")
	c.ok("project", "start", slug)
	waitState(t, c, slug, "web", "running")
	waitState(t, c, slug, "db", "running")
	waitState(t, c, other, "elsewhere", "running")
	c.ok("exec", slug, "db", "--", "sh", "-c", "echo v1 > /var/lib/kv/app")

	p, _ := c.stored(slug)
	ns := "proj-" + p.ID
	op, _ := c.stored(other)
	otherNS := "proj-" + op.ID
	svc, err := n.Client.CoreV1().Services(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	osvc, err := n.Client.CoreV1().Services(otherNS).Get(ctx, "elsewhere", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, otherIP := svc.Spec.ClusterIP, osvc.Spec.ClusterIP
	if ip == "" || ip == "None" || otherIP == "" || otherIP == "None" {
		t.Fatalf("ClusterIPs: db %q, elsewhere %q", ip, otherIP)
	}

	// The pod's resolver is the cluster's, through the kube-dns Service.
	conf := c.ok("exec", slug, "web", "--", "cat", "/etc/resolv.conf")
	for _, want := range []string{"nameserver " + k8stest.ClusterDNS, "search " + ns + ".svc." + k8stest.ClusterDomain + " svc." + k8stest.ClusterDomain} {
		if !strings.Contains(conf, want) {
			t.Errorf("web's /etc/resolv.conf lacks %q:\n%s", want, conf)
		}
	}
	// getent resolves as an app linked to glibc does (the search list, ndots); the address
	// is the Service's ClusterIP, and an HTTP GET to it reaches the service's pod.
	resolve := `ip=$(getent hosts "$1" | cut -d' ' -f1); [ -n "$ip" ] || { echo "cannot resolve $1" >&2; exit 2; }`
	// busybox's wget crashes even on an address (a static glibc): nc speaks HTTP as in the
	// docker tests; busybox's httpd answers in HTTP/1.1.
	get := strings.Replace(dockertest.Fetch, `"HTTP/1.0 200"*`, `"HTTP/1."?" 200"*`, 1)
	fetch := resolve + "\nset -- \"$ip\" \"$2\" \"$3\"\n" + get
	for i, name := range []string{"db", "db." + ns, "db." + ns + ".svc." + k8stest.ClusterDomain} {
		r := c.run("exec", slug, "web", "--", "sh", "-c", resolve+`; echo "$ip"`, "sh", name)
		if r.code != 0 || r.stdout != ip+"\n" {
			t.Errorf("getent hosts %s in web: exit %d, %q, want the ClusterIP %s\n%s", name, r.code, r.stdout, ip, r.stderr)
			if i == 0 {
				// Without names every step below waits out its lookups' timeouts.
				t.FailNow()
			}
		}
		r = c.run("exec", slug, "web", "--", "sh", "-c", fetch, "sh", name, "5432", "/app")
		if r.code != 0 || r.stdout != "v1\n" {
			t.Errorf("GET http://%s:5432/app from web: exit %d, %q, want v1\n%s", name, r.code, r.stdout, r.stderr)
		}
	}
	// busybox's nslookup applies the search list to a name without a dot.
	if r := c.run("exec", slug, "web", "--", "nslookup", "db"); !strings.Contains(r.stdout, "Name:\tdb."+ns+".svc."+k8stest.ClusterDomain+"\nAddress: "+ip+"\n") {
		t.Errorf("nslookup db in web: exit %d, want db.%s.svc.%s at %s\n%s%s", r.code, ns, k8stest.ClusterDomain, ip, r.stdout, r.stderr)
	}
	// The connection's export names the service by ${HOST}.
	r := c.run("exec", slug, "web", "--", "sh", "-c", `echo "$DB_URL"; rest=${DB_URL#http://}; port=${rest#*:}; set -- "${rest%%:*}" "${port%%/*}" "/${port#*/}"`+"\n"+fetch)
	if r.code != 0 || r.stdout != "http://db:5432/app\nv1\n" {
		t.Errorf("GET $DB_URL (the connection's export) from web: exit %d, %q, want http://db:5432/app and v1\n%s", r.code, r.stdout, r.stderr)
	}

	// Another project's Service: not by its short name, by its full one.
	r = c.run("exec", slug, "web", "--", "sh", "-c", resolve, "sh", "elsewhere")
	if r.code != 2 {
		t.Errorf("getent hosts elsewhere (another project's Service) in web: exit %d, want not found\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := c.run("exec", slug, "web", "--", "nslookup", "elsewhere"); strings.Contains(r.stdout, otherIP) {
		t.Errorf("nslookup elsewhere (another project's Service) in web answers %s:\n%s", otherIP, r.stdout)
	}
	for _, full := range []string{"elsewhere." + otherNS, "elsewhere." + otherNS + ".svc." + k8stest.ClusterDomain} {
		if r := c.run("exec", slug, "web", "--", "sh", "-c", resolve+`; echo "$ip"`, "sh", full); r.code != 0 || r.stdout != otherIP+"\n" {
			t.Errorf("getent hosts %s in web: exit %d, %q, want %s\n%s", full, r.code, r.stdout, otherIP, r.stderr)
		}
	}
}
