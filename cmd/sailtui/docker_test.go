package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

type jsonDockerContainer struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	URL      string `json:"url"`
	LocalURL string `json:"local_url"`
}

// dockerCLI is a cli in docker mode on the test image, whose networks carry a prefix of the
// test's own; every container and network of the slugs it is given is removed at the end.
func dockerCLI(t testing.TB, slugs ...string) (*cli, *client.Client) {
	t.Helper()
	dcli := dockertest.Client(t)
	img := dockertest.Image(t, dcli)
	tok := dockertest.Token(t, dcli)
	c := newCLI(t)
	c.env = []string{"DEPLOYMENT_MODE=docker", "DEVSERVER_IMAGE=" + img, "SAILTUI_DOCKER_NETWORK_PREFIX=sailtui-" + tok}
	for _, s := range slugs {
		t.Cleanup(func() { dockertest.RemoveLabelled(t, dcli, "sailtui.project="+s) })
	}
	return c, dcli
}

func (c *cli) dockerContainers(slug string) map[string]jsonDockerContainer {
	c.t.Helper()
	var cs []jsonDockerContainer
	c.json(&cs, "containers", "ls", slug)
	m := map[string]jsonDockerContainer{}
	for _, x := range cs {
		m[x.Name] = x
	}
	return m
}

// writeDockerSource is a two-container project: the root (no command of its own, so the
// image's devserver) and web (a Vite app by its TESSLATE.md: port 5173).
func writeDockerSource(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	files := map[string]string{
		"TESSLATE.md":      "# App\n\n**Port**: 8080\n",
		"index.html":       "<h1>root app</h1>\n",
		"web/TESSLATE.md":  "# Web\n\n## Development Server\n\n```bash\n# the image's server\nexec sailtui devserver --dir . --port \"$PORT\"\n```\n\n## Framework Configuration\n\n**Frontend**: Vite + React\n",
		"web/index.html":   "<h1>web container</h1>\n",
		"web/src/main.js":  "console.log('hi')\n",
		"scripts/build.sh": "#!/bin/sh\necho build\n",
	}
	for name, body := range files {
		p := filepath.Join(src, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	must(t, os.Chmod(filepath.Join(src, "scripts/build.sh"), 0o755))
	must(t, os.Symlink("web/index.html", filepath.Join(src, "link-to-web")))
	must(t, os.MkdirAll(filepath.Join(src, "empty/dir"), 0o750))
	return src
}

// assertDockerUp checks that both containers of the test project slug answer and that
// docker-compose shows them up; when says when ("after wake"), for the message.
func (c *cli) assertDockerUp(slug, when string) {
	c.t.Helper()
	cs := c.dockerContainers(slug)
	waitHTTP(c.t, cs["app"].LocalURL, "root app")
	waitHTTP(c.t, cs["web"].LocalURL, "web container")
	if up := composePS(c.t, c.state, slug); len(up) != 2 {
		c.t.Fatalf("docker-compose ps %s shows %v up, want %s-app and %s-web", when, up, slug, slug)
	}
}

// composePS lists the project with docker-compose from the generated compose file and returns
// the names of the containers it shows as up.
func composePS(t testing.TB, state, slug string) []string {
	t.Helper()
	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is needed (Debian: apt-get install docker-compose): %v", err)
	}
	file := filepath.Join(state, "docker-compose-projects", slug+".yml")
	out, err := exec.Command(compose, "-p", slug, "-f", file, "ps").CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose -p %s ps: %v\n%s", slug, err, out)
	}
	var up []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(l, " Up ") {
			up = append(up, f[0])
		}
	}
	return up
}

// TestDockerEndToEnd is the acceptance path in docker mode, through the command line:
// a two-container project starts and both answer over HTTP, docker compose lists them, another
// project cannot reach them, hibernate leaves no container, network or directory behind, and
// wake brings back the same bytes and both containers.
func TestDockerEndToEnd(t *testing.T) {
	t.Parallel()
	slug := "dock-" + randSuffix(t)
	other := "other-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug, other)
	src := writeDockerSource(t)
	ctx := t.Context()

	var p jsonProject
	c.json(&p, "project", "create", slug, "--from", src, "--owner", "tester")
	if p.Slug != slug || p.Status != "active" {
		t.Fatalf("create: %+v", p)
	}
	c.ok("project", "start", slug)
	cs := c.dockerContainers(slug)
	for name, want := range map[string]string{"app": "root app", "web": "web container"} {
		x := cs[name]
		if x.Status != "running" || !strings.HasPrefix(x.LocalURL, "http://127.0.0.1:") {
			t.Fatalf("%s after start: %+v", name, x)
		}
		if wantURL := "http://" + slug + "-" + name + ".localhost/"; x.URL != wantURL {
			t.Errorf("%s url %q, want the Traefik route %q", name, x.URL, wantURL)
		}
		waitHTTP(t, x.LocalURL, want)
	}
	if up := composePS(t, c.state, slug); len(up) != 2 {
		t.Fatalf("docker-compose ps shows %v up, want %s-app and %s-web", up, slug, slug)
	}

	// Containers write project files as their own (non-root) user; the console reads them.
	c.ok("exec", slug, "web", "--", "sh", "-c", "id -u > whoami.txt; echo one > note.txt")
	if got := c.ok("files", "get", slug, "web/note.txt"); got != "one\n" {
		t.Fatalf("exec wrote %q", got)
	}
	if os.Geteuid() == 0 {
		if got := c.ok("files", "get", slug, "web/whoami.txt"); got == "0\n" {
			t.Errorf("containers run as root")
		}
	}

	// Another project's container cannot connect to this one's, even by address.
	c.ok("project", "create", other)
	if r := c.runIn(strings.NewReader("other\n"), nil, "files", "put", other, "index.html"); r.code != 0 {
		t.Fatalf("files put: %+v", r)
	}
	c.ok("container", "add", other, "solo", "--dir", ".", "--port", "8080")
	c.ok("project", "start", other)
	ins, err := dcli.ContainerInspect(ctx, slug+"-web", client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect %s-web: %v", slug, err)
	}
	var addr string
	for _, ep := range ins.Container.NetworkSettings.Networks {
		addr = ep.IPAddress.String()
	}
	if r := c.run("exec", slug, "app", "--", "sh", "-c", dockertest.Fetch, "sh", addr, "5173", "/"); r.code != 0 || !strings.Contains(r.stdout, "web container") {
		t.Fatalf("app cannot reach web of its own project at %s: %+v", addr, r)
	}
	if r := c.run("exec", other, "solo", "--", "sh", "-c", dockertest.Fetch, "sh", addr, "5173", "/"); r.code == 0 {
		t.Errorf("a container of %s reached %s-web at %s: %q", other, slug, addr, r.stdout)
	}

	dir := filepath.Join(c.state, "users", "tester", slug)
	before := treeDigest(t, dir)
	c.ok("project", "hibernate", slug)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("project directory still there after hibernate: %v", err)
	}
	assertNoDockerLeftovers(t, dcli, slug)

	c.ok("project", "wake", slug)
	if d := diffDigests(before, treeDigest(t, dir)); d != "" {
		t.Fatalf("tree after wake differs:\n%s", d)
	}
	c.assertDockerUp(slug, "after wake")
	// The woken files are the containers' own again.
	c.ok("exec", slug, "web", "--", "sh", "-c", "echo two >> note.txt")
}

// TestDockerVolumesEndToEnd is the acceptance path with USE_DOCKER_VOLUMES=true: the project's
// files are in its named volume (no host directory), both containers answer and docker-compose
// lists them, the compose file declares the volume and loads with compose-go, hibernate leaves
// no container, network or volume behind, and wake brings back the same bytes in a new volume,
// which the containers can change.
func TestDockerVolumesEndToEnd(t *testing.T) {
	t.Parallel()
	slug := "dvol-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	c.env = append(c.env, "USE_DOCKER_VOLUMES=true")
	prefix := ""
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "SAILTUI_DOCKER_NETWORK_PREFIX="); ok {
			prefix = v
		}
	}
	vol := prefix + "-" + slug
	src := writeDockerSource(t)
	ctx := t.Context()

	var rows []struct{ Env, Value string }
	c.json(&rows, "config")
	for _, r := range rows {
		if r.Env == "USE_DOCKER_VOLUMES" && r.Value != "true" {
			t.Errorf("config shows USE_DOCKER_VOLUMES=%q, want true", r.Value)
		}
	}

	c.ok("project", "create", slug, "--from", src, "--owner", "tester")
	c.ok("project", "start", slug)
	c.assertDockerUp(slug, "")
	vi, err := dcli.VolumeInspect(ctx, vol, client.VolumeInspectOptions{})
	if err != nil {
		t.Fatalf("the project's volume %s: %v", vol, err)
	}
	if got := vi.Volume.Labels["com.docker.compose.project"]; got != slug {
		t.Errorf("volume's compose project label %q, want %q", got, slug)
	}
	if _, err := os.Stat(filepath.Join(c.state, "users", "tester", slug)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a host directory exists in volume mode: %v", err)
	}
	// The imported tree is in the volume as it was in the source (the root's own mode aside).
	want, got := treeDigest(t, src), treeDigest(t, vi.Volume.Mountpoint)
	delete(want, ".")
	delete(got, ".")
	if d := diffDigests(want, got); d != "" {
		t.Fatalf("the volume differs from the source:\n%s", d)
	}
	checkVolumeComposeFile(t, c.state, slug, vol)

	c.ok("exec", slug, "web", "--", "sh", "-c", "id -u > whoami.txt; echo one > note.txt")
	if got := c.ok("files", "get", slug, "web/note.txt"); got != "one\n" {
		t.Fatalf("exec wrote %q", got)
	}
	before := treeDigest(t, vi.Volume.Mountpoint)
	c.ok("project", "hibernate", slug)
	if _, err := dcli.VolumeInspect(ctx, vol, client.VolumeInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("volume %s after hibernate: %v", vol, err)
	}
	assertNoDockerLeftovers(t, dcli, slug)

	c.ok("project", "wake", slug)
	vi, err = dcli.VolumeInspect(ctx, vol, client.VolumeInspectOptions{})
	if err != nil {
		t.Fatalf("volume %s after wake: %v", vol, err)
	}
	if d := diffDigests(before, treeDigest(t, vi.Volume.Mountpoint)); d != "" {
		t.Fatalf("tree after wake differs:\n%s", d)
	}
	c.assertDockerUp(slug, "after wake")
	c.ok("exec", slug, "web", "--", "sh", "-c", "echo two >> note.txt")
	if got := c.ok("files", "get", slug, "web/note.txt"); got != "one\ntwo\n" {
		t.Errorf("note after wake and append: %q", got)
	}

	// The same state with host directories refuses the project instead of showing it empty.
	r := c.runIn(nil, []string{"USE_DOCKER_VOLUMES=false"}, "files", "get", slug, "web/note.txt")
	if r.code == 0 || !strings.Contains(r.stderr, "USE_DOCKER_VOLUMES=true") {
		t.Errorf("files get with USE_DOCKER_VOLUMES=false: exit %d, %q", r.code, r.stderr)
	}
}

// checkVolumeComposeFile loads the compose file of a project in volume mode with compose-go:
// every service mounts the external project volume at /app.
func checkVolumeComposeFile(t *testing.T, state, slug, vol string) {
	t.Helper()
	file := filepath.Join(state, "docker-compose-projects", slug+".yml")
	proj, err := loader.LoadWithContext(t.Context(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(file),
		ConfigFiles: []types.ConfigFile{{Filename: file}},
	}, func(o *loader.Options) { o.SetProjectName(slug, true) })
	if err != nil {
		b, _ := os.ReadFile(file)
		t.Fatalf("compose-go cannot load %s: %v\n%s", file, err, b)
	}
	if v, ok := proj.Volumes["app"]; !ok || v.Name != vol || !bool(v.External) {
		t.Errorf("compose volumes %+v, want app: external %s", proj.Volumes, vol)
	}
	if len(proj.Services) != 2 {
		t.Errorf("compose file has %d services, want 2", len(proj.Services))
	}
	for name, s := range proj.Services {
		if len(s.Volumes) != 1 || s.Volumes[0].Type != types.VolumeTypeVolume || s.Volumes[0].Source != "app" || s.Volumes[0].Target != "/app" {
			t.Errorf("service %s volumes %+v, want the project volume at /app", name, s.Volumes)
		}
	}
}

// TestDockerVolumesSetting: USE_DOCKER_VOLUMES takes true or false and nothing else.
func TestDockerVolumesSetting(t *testing.T) {
	c := newCLI(t)
	r := c.runIn(nil, []string{"USE_DOCKER_VOLUMES=maybe"}, "projects", "ls")
	if r.code != 2 || !strings.Contains(r.stderr, "USE_DOCKER_VOLUMES") || !strings.Contains(r.stderr, "true or false") {
		t.Errorf("USE_DOCKER_VOLUMES=maybe: exit %d, %q", r.code, r.stderr)
	}
}

func randSuffix(t testing.TB) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
