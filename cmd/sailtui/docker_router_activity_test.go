package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
)

// Requests through the real router are activity (issue 35, item 1): in docker mode, with
// Traefik's counters as SAILTUI_ROUTER_METRICS_URL, a project whose URL keeps getting requests
// is not hibernated by a sweep that would take it for idle, and is once the requests stop.
func TestDockerRouterTrafficIsActivity(t *testing.T) {
	t.Parallel()
	slug := "browsed-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	_, tok := dockerPrefix(t, c)
	router, port := startRouter(t, dcli, tok)
	mport, err := dockertest.RouterMetricsPort(t.Context(), dcli, router)
	if err != nil {
		t.Fatal(err)
	}
	c.env = append(c.env, "SAILTUI_TRAEFIK_CONTAINER="+router, "APP_DOMAIN=localhost",
		fmt.Sprintf("SAILTUI_ROUTER_METRICS_URL=http://127.0.0.1:%d/metrics", mport), "SAILTUI_IDLE_WARNING_MINUTES=0")
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "web", "--dir", ".", "--port", "8080")
	c.ok("project", "start", slug)
	app := notesApp{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), host: slug + "-web.localhost"}
	browse := func(n int) {
		t.Helper()
		for range n {
			app.waitPath("/")
		}
	}
	sweep := func(idle string) engine.SweepReport {
		t.Helper()
		r := c.run("sweep", "hibernate", "--idle", idle, "-o", "json")
		var rep engine.SweepReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
			t.Fatalf("sweep --idle %s: exit %d %v\n%s\n%s", idle, r.code, err, r.stdout, r.stderr)
		}
		if rep.Router == nil || rep.Router.Error != "" {
			t.Fatalf("sweep --idle %s read no router: %+v", idle, rep.Router)
		}
		return rep
	}
	browse(1)
	sweep("1h") // the route's first counters: a baseline
	browse(5)
	time.Sleep(10 * time.Millisecond)
	if rep := sweep("1ns"); len(rep.Hibernated) != 0 || len(rep.Router.Touched) != 1 || rep.Router.Touched[0] != slug {
		t.Fatalf("a sweep after requests through the router: hibernated %+v, router %+v", rep.Hibernated, rep.Router)
	}
	var lines []engine.HistoryEntry
	c.json(&lines, "project", "history", slug)
	if len(lines) == 0 || lines[0].Kind != engine.HistoryActivity || lines[0].Source != engine.SourceHTTP || lines[0].Actor != "router" {
		t.Fatalf("the newest history line is not the router's traffic: %+v", lines)
	}
	if rep := sweep("1ns"); len(rep.Hibernated) != 1 || len(rep.Router.Touched) != 0 {
		t.Fatalf("a sweep with no request since the last: hibernated %+v, router %+v", rep.Hibernated, rep.Router)
	}
	// The router now has nothing to send the host to.
	req, _ := http.NewRequest(http.MethodGet, app.base+"/", nil)
	req.Host = app.host
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the hibernated project's URL still answers 200")
		}
	}
}
