package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

// serviceImage is a database stand-in built here (no registry): busybox's httpd serving its
// data directory, so what is in the service's volume can be read over the project network.
func serviceImage(t *testing.T, dcli *client.Client) string {
	t.Helper()
	ref, err := dockertest.BuildImage(t.Context(), dcli, dockertest.ImageSpec{
		Repo:       "sailtui-test-kv",
		Entrypoint: []string{"httpd", "-f", "-p", "5432", "-h", "/var/lib/kv"},
	})
	if err != nil {
		t.Fatalf("build the service image: %v", err)
	}
	return ref
}

type jsonServiceContainer struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Image    string            `json:"image"`
	DataPath string            `json:"data_path"`
	Volume   string            `json:"volume"`
	Status   string            `json:"status"`
	Exports  map[string]string `json:"exports"`
	Primary  bool              `json:"primary"`
}

// TestDockerServicesEndToEnd is issue 16's acceptance in docker mode: a project from a
// directory whose .tesslate/config.json has a web app and a database service of a locally
// built image, connected. The app gets the service's exports, resolved, and reaches it by
// name; the service's data survives hibernate/wake and a manual snapshot's restore; and
// hibernation leaves no container, network or volume behind.
func TestDockerServicesEndToEnd(t *testing.T) {
	t.Parallel()
	slug := "svc-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	c.env = append(c.env, "SAILTUI_DOCKER_LABELS=team=core, cost-center=42")
	img := serviceImage(t, dcli)
	src := t.TempDir()
	cfg := `{
  "apps": {"web": {"directory": "web", "port": 8080,
    "start": "env | sort > injected.env; exec sailtui devserver --dir . --port \"$PORT\""}},
  "infrastructure": {"db": {"image": "` + img + `", "port": 5432, "data": "/var/lib/kv",
    "env": {"DB_NAME": "app"}, "exports": {"DB_URL": "http://${HOST}:${PORT}/${DB_NAME}", "KEEP": "${MISSING}"}}},
  "connections": [{"from": "web", "to": "db"}],
  "primaryApp": "web"
}`
	for name, body := range map[string]string{".tesslate/config.json": cfg, "web/index.html": "<h1>web</h1>\n"} {
		p := filepath.Join(src, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	c.ok("project", "create", slug, "--from", src)
	listed := func() map[string]jsonServiceContainer {
		var cs []jsonServiceContainer
		c.json(&cs, "containers", "ls", slug)
		m := map[string]jsonServiceContainer{}
		for _, x := range cs {
			m[x.Name] = x
		}
		return m
	}
	cs := listed()
	var prefix string
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "SAILTUI_DOCKER_NETWORK_PREFIX="); ok {
			prefix = v
		}
	}
	vol := prefix + "-" + slug + "-db"
	if db := cs["db"]; db.Kind != "service" || db.Image != img || db.DataPath != "/var/lib/kv" || db.Volume != vol {
		t.Fatalf("db listed as %+v, want a service of %s with volume %s", db, img, vol)
	}
	if !cs["web"].Primary || cs["web"].Kind != "app" {
		t.Fatalf("web listed as %+v", cs["web"])
	}

	c.ok("project", "start", slug)
	env := c.ok("files", "get", slug, "web/injected.env")
	for _, want := range []string{"DB_URL=http://db:5432/app\n", "KEEP=${MISSING}\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("web's environment lacks %q:\n%s", want, env)
		}
	}
	// The service runs its image's own command as its own user, with its volume at its path.
	c.ok("exec", slug, "db", "--", "sh", "-c", "echo v1 > /var/lib/kv/app && chown 999:999 /var/lib/kv/app")
	fetch := func(want string) {
		t.Helper()
		// busybox's httpd answers in HTTP/1.1.
		script := strings.Replace(dockertest.Fetch, `"HTTP/1.0 200"*`, `"HTTP/1."?" 200"*`, 1)
		r := c.run("exec", slug, "web", "--", "sh", "-c", script, "sh", "db", "5432", "/app")
		if r.code != 0 || strings.TrimSpace(r.stdout) != want {
			t.Fatalf("web fetching http://db:5432/app: %+v, want %q", r, want)
		}
	}
	fetch("v1")

	ctx := t.Context()
	for _, name := range []string{"web", "db"} {
		ins, err := dcli.ContainerInspect(ctx, slug+"-"+name, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rp := ins.Container.HostConfig.RestartPolicy.Name; rp != "unless-stopped" {
			t.Errorf("%s restart policy %q, want unless-stopped (a daemon restart must not leave projects down)", name, rp)
		}
		if got, want := ins.Container.Config.Labels["com.tesslate.routable"] == "true", name == "web"; got != want {
			t.Errorf("%s com.tesslate.routable=%v, want %v", name, got, want)
		}
		if l := ins.Container.Config.Labels; l["team"] != "core" || l["cost-center"] != "42" {
			t.Errorf("%s lacks the labels of SAILTUI_DOCKER_LABELS: %v", name, l)
		}
	}
	compose, err := os.ReadFile(filepath.Join(c.state, "docker-compose-projects", slug+".yml"))
	must(t, err)
	for _, want := range []string{`"db-data":`, `name: "` + vol + `"`, "restart: unless-stopped", `image: "` + img + `"`} {
		if !strings.Contains(string(compose), want) {
			t.Errorf("compose file lacks %s:\n%s", want, compose)
		}
	}

	// Hibernation snapshots the service's volume with the files, then nothing is left.
	c.ok("project", "hibernate", slug)
	assertNoDockerLeftovers(t, dcli, slug)
	var snaps []struct {
		ID    string `json:"id"`
		Type  string `json:"type"`
		Parts []struct {
			Name      string `json:"name"`
			SizeBytes int64  `json:"size_bytes"`
			SHA256    string `json:"sha256"`
		} `json:"parts"`
	}
	c.json(&snaps, "snapshot", "ls", slug)
	if len(snaps) != 1 || len(snaps[0].Parts) != 1 || snaps[0].Parts[0].Name != "db" || snaps[0].Parts[0].SHA256 == "" {
		b, _ := json.Marshal(snaps)
		t.Fatalf("hibernation snapshot: %s, want one part for db", b)
	}
	c.ok("project", "wake", slug)
	fetch("v1")
	// The service's files come back with their owners (a database refuses a data directory
	// that is not its user's).
	if got := c.ok("exec", slug, "db", "--", "stat", "-c", "%u:%g", "/var/lib/kv/app"); got != "999:999\n" {
		t.Errorf("owner of the service's file after the wake: %q, want 999:999", got)
	}

	// A manual snapshot holds the service's data as it was; its restore brings that back.
	var manual struct {
		ID string `json:"id"`
	}
	c.json(&manual, "snapshot", "create", slug, "--label", "v1")
	c.ok("exec", slug, "db", "--", "sh", "-c", "echo v2 > /var/lib/kv/app")
	fetch("v2")
	c.ok("snapshot", "restore", slug, manual.ID, "--yes")
	fetch("v1")
	c.ok("project", "rm", slug, "--yes")
	assertNoDockerLeftovers(t, dcli, slug)
}

// SAILTUI_DOCKER_LABELS is checked at start, as every setting: a label sailtui sets itself, or
// text that is not key=value, is refused before anything is touched.
func TestDockerLabelsSettingRefused(t *testing.T) {
	c := newCLI(t)
	for _, bad := range []string{"team", "sailtui.project=x", "=v"} {
		c.env = []string{"SAILTUI_DOCKER_LABELS=" + bad}
		r := c.run("projects", "ls")
		if r.code != 2 || !strings.Contains(r.stderr, "SAILTUI_DOCKER_LABELS") {
			t.Errorf("SAILTUI_DOCKER_LABELS=%s: %+v, want exit 2 naming the setting", bad, r)
		}
	}
}

// container add --service makes a service container from the command line, with the defaults
// of its image; on the embedded default (processes of this machine) its start is refused,
// naming it and the modes that run it.
func TestContainerAddServiceCLI(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "shop")
	var row jsonServiceContainer
	c.json(&row, "container", "add", "shop", "db", "--service", "--image", "postgres:16",
		"--export", "DATABASE_URL=postgres://${HOST}:${PORT}/app")
	if row.Kind != "service" || row.Image != "postgres:16" || row.DataPath != "/var/lib/postgresql/data" || row.Exports["DATABASE_URL"] == "" {
		t.Fatalf("container add --service: %+v", row)
	}
	if r := c.run("container", "add", "shop", "cache", "--service"); r.code != 2 || !strings.Contains(r.stderr, "--image") {
		t.Errorf("--service without --image: %+v", r)
	}
	r := c.run("project", "start", "shop")
	if r.code == 0 || !strings.Contains(r.stderr, "db (postgres:16)") || !strings.Contains(r.stderr, "docker mode") {
		t.Errorf("start of a service on the local runtime: %+v", r)
	}
	out := c.ok("containers", "ls", "shop")
	if !strings.Contains(out, "service") || !strings.Contains(out, "postgres:16") {
		t.Errorf("containers ls:\n%s", out)
	}
}

// Issue 31, docker item 1: a service container is not routed, so it has no URL: not in
// containers ls (table or JSON), not in project describe, and no Traefik label routes it,
// even where SAILTUI_DOCKER_LABELS carries Traefik labels for every container and a Traefik
// would expose what it is not told to leave alone. The app beside it keeps its route.
func TestDockerServiceHasNoURL(t *testing.T) {
	t.Parallel()
	slug := "nourl-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	c.env = append(c.env, "APP_DOMAIN=apps.example.test",
		"SAILTUI_DOCKER_LABELS=traefik.enable=true,traefik.http.routers.all.rule=HostRegexp(`.+`),com.tesslate.routable=true")
	img := serviceImage(t, dcli)
	src := t.TempDir()
	cfg := `{
  "apps": {"web": {"directory": ".", "port": 8080, "start": "exec sailtui devserver --dir . --port \"$PORT\""}},
  "infrastructure": {"db": {"image": "` + img + `", "port": 5432, "data": "/var/lib/kv"}}
}`
	must(t, os.MkdirAll(filepath.Join(src, ".tesslate"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, ".tesslate/config.json"), []byte(cfg), 0o644))
	c.ok("project", "create", slug, "--from", src)
	c.ok("project", "start", slug)

	cs := c.dockerContainers(slug)
	if db := cs["db"]; db.Status != "running" || db.URL != "" || db.LocalURL != "" {
		t.Errorf("db in containers ls -o json: %+v, want running without url or local_url", db)
	}
	if web := cs["web"]; web.URL != "http://"+slug+"-web.apps.example.test/" || web.LocalURL == "" {
		t.Errorf("web in containers ls -o json: %+v, want its route and its local URL", web)
	}
	for _, line := range strings.Split(c.ok("containers", "ls", slug), "\n") {
		if strings.HasPrefix(line, "db ") && strings.Contains(line, "http") {
			t.Errorf("containers ls shows a URL for db: %q", line)
		}
	}
	desc := c.ok("project", "describe", slug)
	for _, line := range strings.Split(desc, "\n") {
		if strings.Contains(line, slug+"-db") && strings.Contains(line, "http") || strings.HasPrefix(strings.TrimSpace(line), "db:") && strings.Contains(line, "http") {
			t.Errorf("project describe shows a URL for db: %q\n%s", line, desc)
		}
	}
	if !strings.Contains(desc, "http://"+slug+"-web.apps.example.test/") && !strings.Contains(desc, cs["web"].LocalURL) {
		t.Errorf("project describe lost web's URL:\n%s", desc)
	}

	ins, err := dcli.ContainerInspect(t.Context(), slug+"-db", client.ContainerInspectOptions{})
	must(t, err)
	for k, v := range ins.Container.Config.Labels {
		switch {
		case k == "traefik.enable" && v == "false":
		case strings.HasPrefix(k, "traefik.") || k == "com.tesslate.routable":
			t.Errorf("db carries the routing label %s=%s", k, v)
		}
	}
	if v := ins.Container.Config.Labels["traefik.enable"]; v != "false" {
		t.Errorf("db traefik.enable=%q, want false (a Traefik exposing by default would route it)", v)
	}
}
