package routermetrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// traefikBinary is the Traefik `make tools` builds (the docker router and the cluster's
// ingress controller): the counters are read from the real router, not from a sample.
func traefikBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	bin := filepath.Join(dir, ".tools", "bin", "traefik-v3.6.12")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Traefik is not built (%v): run make tools", err)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Real Traefik serving two routes by host: the counters read back are the requests each got,
// keyed by Traefik's service names, and they only grow.
func TestTraefikCounters(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "app") }))
	defer app.Close()
	dir := t.TempDir()
	dynamic := fmt.Sprintf(`http:
  routers:
    shop-web:
      rule: "Host(%[2]sshop-web.localhost%[2]s)"
      service: shop-web
    blog-web:
      rule: "Host(%[2]sblog-web.localhost%[2]s)"
      service: blog-web
  services:
    shop-web:
      loadBalancer:
        servers: [{url: "%[1]s"}]
    blog-web:
      loadBalancer:
        servers: [{url: "%[1]s"}]
`, app.URL, "`")
	if err := os.WriteFile(filepath.Join(dir, "dynamic.yml"), []byte(dynamic), 0o644); err != nil {
		t.Fatal(err)
	}
	web, metrics := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, traefikBinary(t),
		fmt.Sprintf("--entrypoints.web.address=127.0.0.1:%d", web),
		fmt.Sprintf("--entrypoints.metrics.address=127.0.0.1:%d", metrics),
		"--metrics.prometheus=true", "--metrics.prometheus.entrypoint=metrics",
		"--providers.file.filename="+filepath.Join(dir, "dynamic.yml"), "--log.level=ERROR")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()

	r, err := New(fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
	if err != nil {
		t.Fatal(err)
	}
	get := func(host string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", web), nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s through Traefik: %s", host, resp.Status)
		}
	}
	// Traefik takes a moment to load the routes; until then it answers 404.
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", web), nil)
		req.Host = "shop-web.localhost"
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Traefik never routed shop-web.localhost: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 3 {
		get("shop-web.localhost")
	}
	get("blog-web.localhost")
	got, err := r.ReadCounters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got[TraefikPrefix+"shop-web@file"] != 4 || got[TraefikPrefix+"blog-web@file"] != 1 {
		t.Fatalf("counters %v; want shop-web@file 4 (with the request that waited for the route), blog-web@file 1", got)
	}
	get("blog-web.localhost")
	again, err := r.ReadCounters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again[TraefikPrefix+"blog-web@file"] != 2 || again[TraefikPrefix+"shop-web@file"] != 4 {
		t.Fatalf("after one more request to blog-web: %v", again)
	}
}

func TestNginxCountersAndNotARouter(t *testing.T) {
	// ingress-nginx cannot be built here (its Lua modules are not packaged): this is the shape
	// of its controller's counter, from its documentation.
	text := `# TYPE nginx_ingress_controller_requests counter
nginx_ingress_controller_requests{canary="",controller_class="k8s.io/ingress-nginx",controller_namespace="ingress-nginx",controller_pod="c",host="a.example",ingress="dev-web",method="GET",namespace="proj-1",path="/",service="dev-web",status="200"} 7
nginx_ingress_controller_requests{canary="",controller_class="k8s.io/ingress-nginx",controller_namespace="ingress-nginx",controller_pod="c",host="a.example",ingress="dev-web",method="POST",namespace="proj-1",path="/",service="dev-web",status="500"} 2
`
	got, err := Parse(strings.NewReader(text))
	if err != nil || got[NginxPrefix+"proj-1/dev-web"] != 9 {
		t.Fatalf("Parse: %v %v; want proj-1/dev-web 9", got, err)
	}
	_, err = Parse(strings.NewReader("# TYPE go_goroutines gauge\ngo_goroutines 12\n"))
	if err == nil || !strings.Contains(err.Error(), "no Traefik or ingress-nginx metrics") {
		t.Fatalf("a metrics endpoint of something else: %v", err)
	}
	if _, err := New("traefik:8082"); err == nil {
		t.Fatal("a URL without a scheme was taken")
	}
}
