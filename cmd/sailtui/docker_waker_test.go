package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

// Wake on request through the real router (issue 35, item 4): Traefik sends the host of a
// hibernated project, which no route of a running container claims, to its catch-all, the
// waker; the waker answers with the page and wakes the project; a browser that follows the
// page's refresh then gets the app from the router. A host of no project gets the neutral 404.
func TestDockerWakerThroughTheRouter(t *testing.T) {
	t.Parallel()
	slug := "asleep-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	_, tok := dockerPrefix(t, c)
	router := "router-" + tok
	c.env = append(c.env, "SAILTUI_TRAEFIK_CONTAINER="+router, "APP_DOMAIN=localhost")
	// The waker runs on the host, where the router's container reaches it
	// (host.docker.internal); the router exists before any project (sailtui joins it to each
	// project network), so the waker's port is chosen first.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	wport := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	bin, err := dockertest.TraefikBinary()
	if err != nil {
		t.Fatal(err)
	}
	img, err := dockertest.RouterImage(t.Context(), dcli, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = dcli.ContainerRemove(context.Background(), router, client.ContainerRemoveOptions{Force: true})
	})
	port, err := dockertest.StartRouter(t.Context(), dcli, dockertest.RouterSpec{Name: router, Image: img,
		Labels: map[string]string{dockertest.Label: tok}, Waker: "http://host.docker.internal:" + wport, ConfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}

	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "web", "--dir", ".", "--port", "8080")
	if r := c.runIn(strings.NewReader("the sleeping app\n"), nil, "files", "put", slug, "index.html"); r.code != 0 {
		t.Fatalf("files put: %s", r.stderr)
	}
	c.ok("project", "start", slug)
	c.ok("project", "hibernate", slug)
	startWakerOn(t, c, "0.0.0.0:"+wport, "localhost")
	base := fmt.Sprintf("127.0.0.1:%d", port)
	const browser = "text/html"

	// The router loads its catch-all a moment after it starts: until then it answers 404.
	var first answer
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if first = ask(t, base, slug+"-web.localhost", http.MethodGet, browser); first.status != http.StatusNotFound {
			break
		}
	}
	if first.status != http.StatusServiceUnavailable || !strings.Contains(first.body, slug+" is waking up") || first.retry == "" {
		t.Fatalf("the hibernated project's URL through the router: %+v", first)
	}
	var got answer
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		got = ask(t, base, slug+"-web.localhost", http.MethodGet, browser)
		if got.status == http.StatusOK {
			break
		}
		wait, _ := strconv.Atoi(got.retry)
		time.Sleep(time.Duration(min(max(wait, 1), 2)) * time.Second)
	}
	if got.status != http.StatusOK || !strings.Contains(got.body, "the sleeping app") {
		t.Fatalf("a browser following the waker's page: %+v", got)
	}
	if a := ask(t, base, "nobody-web.localhost", http.MethodGet, ""); a.status != http.StatusNotFound || a.body != "no such environment\n" {
		t.Fatalf("a host of no project through the router: %+v", a)
	}
}
