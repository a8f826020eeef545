package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// project is one project on a runtime, destroyed when the test ends.
type project struct {
	t  *testing.T
	r  *Runtime
	p  engine.Project
	cs []engine.Container
}

func newProject(t *testing.T, r *Runtime, name string) *project {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	pr := &project{t: t, r: r, p: engine.Project{ID: "id-" + name + "-" + tok, Slug: name + "-" + tok, Owner: "alice", Status: engine.StatusActive}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := r.DestroyProject(ctx, pr.p, pr.cs); err != nil {
			t.Errorf("cleanup: DestroyProject %s: %v", pr.p.Slug, err)
		}
	})
	if err := r.EnsureProject(t.Context(), pr.p); err != nil {
		t.Fatalf("EnsureProject: %v", err)
	}
	return pr
}

func (pr *project) write(name, content string) {
	pr.t.Helper()
	if err := pr.r.WriteFile(pr.t.Context(), pr.p, name, strings.NewReader(content)); err != nil {
		pr.t.Fatalf("WriteFile %s: %v", name, err)
	}
}

// serve starts a devserver container in dir and waits until it answers on its loopback URL.
func (pr *project) serve(name, dir string, env map[string]string, dependsOn ...string) (engine.Container, engine.ContainerStatus) {
	pr.t.Helper()
	pr.write(dir+"/index.html", name+"\n")
	c := engine.Container{ProjectID: pr.p.ID, Name: name, Directory: dir, Env: env}
	pr.cs = append(pr.cs, c)
	if _, err := pr.r.StartContainer(pr.t.Context(), pr.p, c, engine.StartSpec{Command: serveCommand, Port: 8080, DependsOn: dependsOn}); err != nil {
		pr.t.Fatalf("StartContainer %s: %v", name, err)
	}
	var st engine.ContainerStatus
	waitFor(pr.t, name+" answering", func() bool {
		var err error
		st, err = pr.r.ContainerStatus(pr.t.Context(), pr.p, c)
		if err != nil || st.State != engine.ContainerRunning || st.LocalURL == "" {
			return false
		}
		code, body := get(st.LocalURL + "index.html")
		return code == 200 && body == name+"\n"
	})
	return c, st
}

// hibernate does what the engine's hibernation does to the project: stop it, take snapshot id
// of it through vols, wait until that is ready, destroy the project. It returns the snapshot.
func (pr *project) hibernate(vols engine.Volumes, id string) engine.Snapshot {
	pr.t.Helper()
	ctx := pr.t.Context()
	if err := pr.r.StopProject(ctx, pr.p, pr.cs); err != nil {
		pr.t.Fatalf("StopProject: %v", err)
	}
	snap, err := vols.Create(ctx, pr.p, engine.Snapshot{ID: id, ProjectID: pr.p.ID, Owner: pr.p.Owner, Type: engine.SnapshotHibernation})
	if err != nil {
		pr.t.Fatalf("Create: %v", err)
	}
	if snap, err = vols.WaitReady(ctx, snap); err != nil {
		pr.t.Fatalf("WaitReady: %v", err)
	}
	if err := pr.r.DestroyProject(ctx, pr.p, pr.cs); err != nil {
		pr.t.Fatalf("DestroyProject: %v", err)
	}
	return snap
}

// wake makes the project's environment again and restores snap into it through vols, as the
// engine's wake does, and fails the test unless the tree is then want (its treeDigest).
func (pr *project) wake(vols engine.Volumes, snap engine.Snapshot, want []string) {
	pr.t.Helper()
	if err := pr.r.EnsureProject(pr.t.Context(), pr.p); err != nil {
		pr.t.Fatalf("EnsureProject: %v", err)
	}
	if err := vols.Restore(pr.t.Context(), pr.p, snap); err != nil {
		pr.t.Fatalf("Restore: %v", err)
	}
	if after := treeDigest(pr.t, pr.r.StorageDir(pr.p)); !slices.Equal(after, want) {
		pr.t.Errorf("restored tree differs:\nbefore %v\nafter  %v", want, after)
	}
}

func (pr *project) exec(c engine.Container, script string, args ...string) engine.ExecResult {
	pr.t.Helper()
	argv := append([]string{"sh", "-c", script, "sh"}, args...)
	res, err := pr.r.Exec(pr.t.Context(), pr.p, c, engine.ExecRequest{Argv: argv, Timeout: 30 * time.Second})
	if err != nil {
		pr.t.Fatalf("Exec %q: %v", script, err)
	}
	return res
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(url string) (int, string) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// TestProjectOnEngine checks what a two-container project is made of on the engine: one
// network, containers with the compose and Traefik labels, the non-root user, the mount, the
// environment (and nothing of this process's), ports on loopback only, URLs, and a compose
// file that compose-go and docker-compose both read as the same project.
func TestProjectOnEngine(t *testing.T) {
	cli := dockertest.Client(t)
	cfg := testConfig(t, cli)
	cfg.DirectURLs = false
	cfg.AppDomain = "dev.example.test"
	r := newTestRuntime(t, cfg)
	// Credentials of the console must not reach a container.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "console-secret")
	t.Setenv("DATABASE_URL", "postgres://u:console-secret@db/x")

	pr := newProject(t, r, "shop")
	web, webSt := pr.serve("web", "web", map[string]string{"GREETING": "price $5"}, "api")
	api, apiSt := pr.serve("api", "api", nil)
	ctx := t.Context()

	if webSt.HostPort == apiSt.HostPort || webSt.HostPort == 0 {
		t.Errorf("host ports %d and %d: want two distinct engine-picked ports", webSt.HostPort, apiSt.HostPort)
	}
	if want := "http://" + pr.p.Slug + "-web.dev.example.test/"; webSt.URL != want {
		t.Errorf("URL %q, want the Traefik route %q", webSt.URL, want)
	}
	if !strings.HasPrefix(webSt.LocalURL, "http://127.0.0.1:") {
		t.Errorf("LocalURL %q, want loopback", webSt.LocalURL)
	}

	ins, err := cli.ContainerInspect(ctx, pr.p.Slug+"-web", client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect %s-web: %v", pr.p.Slug, err)
	}
	cfgc, hc := ins.Container.Config, ins.Container.HostConfig
	wantLabels := map[string]string{
		"com.docker.compose.project":                                           pr.p.Slug,
		"com.docker.compose.service":                                           "web",
		"com.docker.compose.oneoff":                                            "False",
		"com.docker.compose.container-number":                                  "1",
		"traefik.enable":                                                       "true",
		"traefik.docker.network":                                               cfg.NetworkPrefix + "-" + pr.p.Slug,
		"traefik.http.routers." + pr.p.Slug + "-web.rule":                      "Host(`" + pr.p.Slug + "-web.dev.example.test`)",
		"traefik.http.services." + pr.p.Slug + "-web.loadbalancer.server.port": "8080",
		LabelProjectID:                                                         pr.p.ID,
	}
	for k, v := range wantLabels {
		if got := cfgc.Labels[k]; got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}
	if cfgc.User != fmt.Sprintf("%d:%d", dockertest.UID, dockertest.GID) && os.Geteuid() == 0 {
		t.Errorf("user %q, want the non-root %d:%d", cfgc.User, dockertest.UID, dockertest.GID)
	}
	if cfgc.WorkingDir != "/app/web" {
		t.Errorf("working dir %q, want /app/web", cfgc.WorkingDir)
	}
	if len(hc.Mounts) != 1 || hc.Mounts[0].Source != r.StorageDir(pr.p) || hc.Mounts[0].Target != "/app" {
		t.Errorf("mounts %+v, want the project directory at /app", hc.Mounts)
	}
	if r.StorageDir(pr.p) != filepath.Join(cfg.ProjectsDir, "alice", pr.p.Slug) {
		t.Errorf("storage dir %s, want <projects>/alice/<slug>", r.StorageDir(pr.p))
	}
	for _, bs := range hc.PortBindings {
		for _, b := range bs {
			if b.HostIP.String() != "127.0.0.1" {
				t.Errorf("port published on %v, want 127.0.0.1 only", b.HostIP)
			}
		}
	}

	res := pr.exec(web, `id -u; env | sort`)
	out := string(res.Stdout)
	for _, want := range []string{"PROJECT_ID=" + pr.p.ID, "CONTAINER_NAME=web", "CONTAINER_ID=" + pr.p.Slug + "-web", "PORT=8080", "GREETING=price $5"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("container env lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "console-secret") {
		t.Errorf("a credential of the console reached the container:\n%s", out)
	}
	if os.Geteuid() == 0 && !strings.HasPrefix(out, fmt.Sprint(dockertest.UID)+"\n") {
		t.Errorf("exec runs as uid %q, want %d", strings.SplitN(out, "\n", 2)[0], dockertest.UID)
	}

	// Containers of one project reach each other by name on their network.
	res = pr.exec(web, dockertest.Fetch, "api", "8080", "/")
	if string(res.Stdout) != "api\n" {
		t.Errorf("web fetching http://api:8080/: exit %d, %q (stderr %q)", res.ExitCode, res.Stdout, res.Stderr)
	}

	checkComposeFile(t, r, pr, []engine.Container{api, web})

	desc, err := r.Describe(ctx, pr.p, pr.cs)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	for _, want := range []string{cfg.NetworkPrefix + "-" + pr.p.Slug, r.ComposeFile(pr.p), pr.p.Slug + "-api", "running"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc)
		}
	}
}

// checkComposeFile loads the generated compose file with compose-go and lists the project
// with docker-compose, which finds the running containers by their labels.
func checkComposeFile(t *testing.T, r *Runtime, pr *project, cs []engine.Container) {
	t.Helper()
	file := r.ComposeFile(pr.p)
	if filepath.Base(filepath.Dir(file)) != "docker-compose-projects" || filepath.Base(file) != pr.p.Slug+".yml" {
		t.Errorf("compose file at %s, want <state>/docker-compose-projects/<slug>.yml", file)
	}
	proj, err := loader.LoadWithContext(t.Context(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(file),
		ConfigFiles: []types.ConfigFile{{Filename: file}},
		Environment: types.Mapping{"PORT": "from-the-host"},
	}, func(o *loader.Options) { o.SetProjectName(pr.p.Slug, true) })
	if err != nil {
		b, _ := os.ReadFile(file)
		t.Fatalf("compose-go cannot load %s: %v\n%s", file, err, b)
	}
	if len(proj.Services) != len(cs) {
		t.Fatalf("compose file has %d services, want %d", len(proj.Services), len(cs))
	}
	for _, c := range cs {
		s, ok := proj.Services[c.Name]
		if !ok {
			t.Fatalf("compose file has no service %s", c.Name)
		}
		if s.ContainerName != pr.p.Slug+"-"+c.Name || s.Image != r.cfg.Image || s.User != r.cfg.User {
			t.Errorf("service %s: container %q image %q user %q", c.Name, s.ContainerName, s.Image, s.User)
		}
		if got := strings.Join(s.Entrypoint, " "); got != "sh -c "+serveCommand {
			t.Errorf("service %s entrypoint %q: $ must reach the container unexpanded", c.Name, got)
		}
		if v := s.Environment["PORT"]; v == nil || *v != "8080" {
			t.Errorf("service %s PORT = %v", c.Name, v)
		}
		if len(s.Ports) != 1 || s.Ports[0].Target != 8080 || s.Ports[0].HostIP != "127.0.0.1" {
			t.Errorf("service %s ports %+v", c.Name, s.Ports)
		}
		switch {
		case len(s.Volumes) != 1 || s.Volumes[0].Target != "/app":
			t.Errorf("service %s volumes %+v", c.Name, s.Volumes)
		case r.cfg.Volumes && (s.Volumes[0].Type != types.VolumeTypeVolume || s.Volumes[0].Source != "app" || s.Volumes[0].Volume == nil || !s.Volumes[0].Volume.NoCopy):
			t.Errorf("service %s volumes %+v, want the project volume \"app\" with nocopy", c.Name, s.Volumes)
		case !r.cfg.Volumes && (s.Volumes[0].Type != types.VolumeTypeBind || s.Volumes[0].Source != r.StorageDir(pr.p)):
			t.Errorf("service %s volumes %+v, want the project directory", c.Name, s.Volumes)
		}
	}
	if r.cfg.Volumes {
		v, ok := proj.Volumes["app"]
		if !ok || v.Name != r.volumeName(pr.p) || !bool(v.External) || len(proj.Volumes) != 1 {
			t.Errorf("compose volumes %+v, want app: external volume %s", proj.Volumes, r.volumeName(pr.p))
		}
	} else if len(proj.Volumes) != 0 {
		t.Errorf("compose volumes %+v, want none with host directories", proj.Volumes)
	}
	if _, ok := proj.Services["web"].DependsOn["api"]; !ok || len(proj.Services["api"].DependsOn) != 0 {
		t.Errorf("depends_on: web %v, api %v; want web on api only", proj.Services["web"].DependsOn, proj.Services["api"].DependsOn)
	}
	if v := proj.Services["web"].Environment["GREETING"]; v == nil || *v != "price $5" {
		t.Errorf("web GREETING = %v, want %q", v, "price $5")
	}
	if n := proj.Networks["default"].Name; n != r.networkName(pr.p) {
		t.Errorf("compose network %q, want %q", n, r.networkName(pr.p))
	}

	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is needed to check the compose labels (Debian: apt-get install docker-compose): %v", err)
	}
	out, err := exec.Command(compose, "-p", pr.p.Slug, "-f", file, "ps").CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose ps: %v\n%s", err, out)
	}
	for _, c := range cs {
		line := ""
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, pr.p.Slug+"-"+c.Name+" ") {
				line = l
			}
		}
		if !strings.Contains(line, "Up") {
			t.Errorf("docker-compose ps does not list %s-%s as up:\n%s", pr.p.Slug, c.Name, out)
		}
	}
}

// TestAPIVersionNegotiated: the client speaks the engine's API version, whatever its own is.
func TestAPIVersionNegotiated(t *testing.T) {
	cli := dockertest.Client(t)
	v, err := cli.ServerVersion(t.Context(), client.ServerVersionOptions{})
	if err != nil {
		t.Fatalf("ServerVersion: %v", err)
	}
	// A newer engine than the client gets the client's highest version, an older one its own.
	if got := cli.ClientVersion(); got != v.APIVersion && (got != client.MaxAPIVersion || versions.LessThan(v.APIVersion, got)) {
		t.Errorf("client speaks API %s to an engine of API %s", got, v.APIVersion)
	}
	t.Logf("engine %s, API %s; client API %s", v.Version, v.APIVersion, cli.ClientVersion())
}

// TestProjectsIsolated: a container of one project cannot connect to a container of another,
// even knowing its address, while it reaches its own project's containers.
func TestProjectsIsolated(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	r := newTestRuntime(t, testConfig(t, cli))
	a := newProject(t, r, "iso-a")
	b := newProject(t, r, "iso-b")
	aWeb, _ := a.serve("web", "web", nil)
	a.serve("db", "db", nil)
	b.serve("web", "web", nil)
	bDB, _ := b.serve("db", "db", nil)

	ins, err := cli.ContainerInspect(t.Context(), b.p.Slug+"-web", client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var bAddr string
	for _, ep := range ins.Container.NetworkSettings.Networks {
		bAddr = ep.IPAddress.String()
	}
	if bAddr == "" {
		t.Fatalf("project b's container has no address")
	}
	res := a.exec(aWeb, dockertest.Fetch, "db", "8080", "/")
	if string(res.Stdout) != "db\n" {
		t.Fatalf("a/web cannot reach its own db: %q %q", res.Stdout, res.Stderr)
	}
	// The address is right: b's own containers reach it.
	if res := b.exec(bDB, dockertest.Fetch, bAddr, "8080", "/"); string(res.Stdout) != "web\n" {
		t.Fatalf("b/db cannot reach b/web at %s: %q %q", bAddr, res.Stdout, res.Stderr)
	}
	res = a.exec(aWeb, dockertest.Fetch, bAddr, "8080", "/")
	if res.ExitCode == 0 || strings.Contains(string(res.Stdout), "web") {
		t.Errorf("a/web reached b/web at %s: exit %d, %q", bAddr, res.ExitCode, res.Stdout)
	}
	res = a.exec(aWeb, dockertest.Fetch, b.p.Slug+"-web", "8080", "/")
	if res.ExitCode == 0 {
		t.Errorf("a/web reached b/web by name: %q", res.Stdout)
	}
}

// memStore is an in-memory engine.ObjectStore, enough to carry an archive through a test.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Put(ctx context.Context, key string, r io.Reader) (engine.ObjectInfo, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return engine.ObjectInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = b
	return engine.ObjectInfo{Key: key, Size: int64(len(b)), ModTime: time.Now()}, nil
}

func (s *memStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, engine.ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *memStore) Head(ctx context.Context, key string) (engine.ObjectInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	if !ok {
		return engine.ObjectInfo{}, fmt.Errorf("%s: %w", key, engine.ErrNotFound)
	}
	return engine.ObjectInfo{Key: key, Size: int64(len(b))}, nil
}

func (s *memStore) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

func (s *memStore) List(ctx context.Context, prefix string) ([]engine.ObjectInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []engine.ObjectInfo
	for k, b := range s.m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, engine.ObjectInfo{Key: k, Size: int64(len(b))})
		}
	}
	return out, nil
}

func (s *memStore) Describe() string { return "memory" }

// TestArchiveSandwich runs the engine's archive Volumes unchanged over the runtime's storage
// directory: what containers wrote comes back byte for byte after destroy and restore, and the
// restored files belong to the container user again, so the containers can change them.
func TestArchiveSandwich(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	r := newTestRuntime(t, testConfig(t, cli))
	vols := archive.NewSandwich(&memStore{}, r, archive.SandwichOptions{})
	pr := newProject(t, r, "snap")
	web, _ := pr.serve("web", "web", nil)
	pr.exec(web, "mkdir -p gen && head -c 100000 /bin/busybox > gen/blob && ln -s gen/blob link && chmod 600 gen/blob")
	ctx := t.Context()
	before := treeDigest(t, r.StorageDir(pr.p))

	snap := pr.hibernate(vols, "snap1")
	nets, err := r.networksNamed(ctx, r.networkName(pr.p))
	if err != nil || len(nets) != 0 {
		t.Fatalf("network after DestroyProject: %v, %v", nets, err)
	}
	pr.wake(vols, snap, before)
	web, _ = pr.serve("web", "web", nil)
	if res := pr.exec(web, "echo more >> gen/blob && echo new > gen/new && rm link"); res.ExitCode != 0 {
		t.Errorf("the container cannot change its restored files: exit %d, %s", res.ExitCode, res.Stderr)
	}
}

// treeDigest lists a tree: path, mode, size and content hash of every entry.
func treeDigest(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %d %x", len(b), sha256.Sum256(b))
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		}
		if rel != "." {
			out = append(out, line)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return out
}
