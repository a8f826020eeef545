package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

// bareServiceProject is a docker-mode project from a .tesslate/config.json whose service kv
// is of an image with no entrypoint and no command (Docker refuses to create its container
// unless it is given one), with the app api depending on it; kvNode is kv's node of the file.
func bareServiceProject(t *testing.T, kvNode string) (c *cli, slug, src string) {
	t.Helper()
	slug = "bare-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	img, err := dockertest.BuildImage(t.Context(), dcli, dockertest.ImageSpec{Repo: "sailtui-test-bare"})
	if err != nil {
		t.Fatalf("build the service image: %v", err)
	}
	src = t.TempDir()
	cfg := `{
  "apps": {"api": {"directory": ".", "port": 8080, "start": "exec sailtui devserver --dir . --port \"$PORT\""}},
  "infrastructure": {"kv": ` + strings.ReplaceAll(kvNode, "IMAGE", img) + `},
  "connections": [{"from": "api", "to": "kv"}]
}`
	p := filepath.Join(src, ".tesslate", "config.json")
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(cfg), 0o644))
	c.ok("project", "create", slug, "--from", src)
	return c, slug, src
}

// Issue 31: in docker mode a service whose container the Engine refuses to create failed the
// start, and the app that depends on it was started all the same. It is not started, as in
// every other mode, and the message names the service and why.
func TestDockerDependentOfFailedCreateNotStarted(t *testing.T) {
	t.Parallel()
	c, slug, _ := bareServiceProject(t, `{"image": "IMAGE", "port": 6379, "data": "/data"}`)
	r := c.run("project", "start", slug)
	if r.code == 0 || !strings.Contains(r.stderr, "start "+slug+"/api: not started: it depends on kv, which failed to start (") {
		t.Fatalf("start with a service Docker cannot create: %+v", r)
	}
	for name, x := range c.dockerContainers(slug) {
		if x.Status == "running" {
			t.Errorf("%s runs after the start failed: %+v", name, x)
		}
	}
}

// Issue 31: a service of an image with no command of its own failed with Docker's bare "No
// command specified", and config.json had no key to give it one. The message says what to
// do; a "start" on its infrastructure node is its command, and then it runs.
func TestDockerServiceWithoutCommand(t *testing.T) {
	t.Parallel()
	c, slug, _ := bareServiceProject(t, `{"image": "IMAGE", "port": 6379, "data": "/data"}`)
	r := c.run("project", "start", slug)
	for _, want := range []string{"start " + slug + "/kv: image sailtui-test-bare:", "has no command of its own",
		`"start" of infrastructure.kv in .tesslate/config.json`, "--command"} {
		// Exit 2: what is wrong is the project's definition, which only its owner can fix.
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("start of a service with no command: %+v\nwant %q", r, want)
		}
	}
	cfg := c.ok("files", "get", slug, ".tesslate/config.json")
	fixed := strings.Replace(cfg, `"port": 6379,`, `"port": 6379, "start": "exec httpd -f -p 6379 -h /data",`, 1)
	if fixed == cfg {
		t.Fatalf("config.json as stored: %s", cfg)
	}
	if r := c.runIn(strings.NewReader(fixed), nil, "files", "put", slug, ".tesslate/config.json"); r.code != 0 {
		t.Fatalf("files put: %+v", r)
	}
	c.ok("project", "start", slug)
	cs := c.dockerContainers(slug)
	if cs["kv"].Status != "running" || cs["api"].Status != "running" {
		t.Fatalf("after kv was given a start: %+v", cs)
	}
}
