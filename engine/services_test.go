package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// writeTree writes files (path → content) under a new directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

// withServe is s with every container command "exec sleep 600" replaced by serve's listener,
// which a start waits for on the container's port.
func withServe(t *testing.T, s string) string {
	return strings.ReplaceAll(s, "exec sleep 600", serve(t))
}

const twoApps = `{
  "apps": {
    "web": {"directory": "web", "port": 5173, "start": "exec sleep 600", "env": {"OWN": "web"}},
    "api": {"directory": "api", "port": 8000, "start": "exec sleep 600",
            "env": {"API_TOKEN": "t0k"},
            "exports": {"API_URL": "http://${HOST}:${PORT}/v1?t=${API_TOKEN}", "ODD": "${NOPE}"}}
  },
  "infrastructure": {
    "auth": {"type": "external", "provider": "supabase", "endpoint": "https://x.supabase.co",
             "exports": {"SUPABASE_URL": "https://x.supabase.co", "OWN": "not this"}}
  },
  "connections": [{"from": "web", "to": "api"}, {"from": "web", "to": "auth"}],
  "primaryApp": "web",
  "deployments": {"ignored": true}
}`

// A project from a directory with .tesslate/config.json: its apps are containers, its external
// service is listed but never run, and a connection gives the exports of its target, resolved
// against the target, to the container it starts from (on the local runtime, where containers
// share this machine's network, ${HOST}:${PORT} is where the target process listens).
func TestConfigJSONProjectConnections(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test")
	src := writeTree(t, map[string]string{".tesslate/config.json": withServe(t, twoApps), "web/index.html": "hi", "api/main.py": ""})
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "shop", FromDir: src})
	must(t, err)
	_, views, err := p.eng.Containers(ctx, pr.Slug)
	must(t, err)
	got := map[string]engine.ContainerView{}
	for _, v := range views {
		got[v.Name] = v
	}
	if len(got) != 3 || got["web"].Directory != "web" || got["web"].Port != 5173 || !got["web"].Primary || got["api"].Primary {
		t.Fatalf("containers from config.json: %+v", views)
	}
	if a := got["auth"]; a.Kind != engine.KindExternal || a.Endpoint != "https://x.supabase.co" || a.Status.State != engine.ContainerExternal {
		t.Fatalf("external service: %+v", a)
	}
	conns, err := p.store.ListConnections(ctx, pr.ID)
	must(t, err)
	if len(conns) != 2 {
		t.Fatalf("connections = %+v", conns)
	}

	_, err = p.eng.StartProject(ctx, pr.Slug)
	must(t, err)
	res, err := p.eng.Exec(ctx, pr.Slug, "web", engine.ExecRequest{Argv: []string{"sh", "-c", `echo "API_URL=$API_URL"; echo "ODD=$ODD"; echo "SUPABASE_URL=$SUPABASE_URL"; echo "OWN=$OWN"`}})
	must(t, err)
	_, views, err = p.eng.Containers(ctx, pr.Slug)
	must(t, err)
	var apiPort int
	for _, v := range views {
		if v.Name == "api" {
			apiPort = v.Status.HostPort
		}
	}
	if apiPort == 0 {
		t.Fatalf("api has no port: %+v", views)
	}
	out := string(res.Stdout)
	for _, want := range []string{
		"API_URL=http://127.0.0.1:" + strconv.Itoa(apiPort) + "/v1?t=t0k",
		"ODD=${NOPE}", // unresolved: left as written
		"SUPABASE_URL=https://x.supabase.co",
		"OWN=web", // the container's own env wins over an injected export
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("web's environment lacks %q:\n%s", want, out)
		}
	}
	// describe shows the primary app first with its URL, and what each connection gives.
	text, err := p.eng.Describe(ctx, pr.Slug)
	must(t, err)
	lines := strings.Split(text, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[1], "  web (primary): app in web, running, http://") {
		t.Errorf("describe does not put the primary app first:\n%s", text)
	}
	for _, want := range []string{"  auth: external https://x.supabase.co, external\n", "  web → api (API_URL, ODD)\n", "  web → auth (OWN, SUPABASE_URL)\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe lacks %q:\n%s", want, text)
		}
	}
	// Nothing of an external service runs: no exec, no log, no start.
	if _, err := p.eng.Exec(ctx, pr.Slug, "auth", engine.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("exec in an external service: %v", err)
	}
	if _, err := p.eng.StartContainer(ctx, pr.Slug, "auth"); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("start of an external service: %v", err)
	}

	// The file is read again at start: a changed env and a new node take effect.
	changed := strings.Replace(withServe(t, twoApps), `"OWN": "web"`, `"OWN": "web2"`, 1)
	changed = strings.Replace(changed, `"apps": {`, withServe(t, `"apps": {"worker": {"directory": ".", "start": "exec sleep 600", "port": 9000},`), 1)
	must(t, p.eng.WriteFile(ctx, pr.Slug, ".tesslate/config.json", strings.NewReader(changed)))
	_, err = p.eng.StopProject(ctx, pr.Slug)
	must(t, err)
	_, err = p.eng.StartProject(ctx, pr.Slug)
	must(t, err)
	res, err = p.eng.Exec(ctx, pr.Slug, "web", engine.ExecRequest{Argv: []string{"sh", "-c", `echo "OWN=$OWN"`}})
	must(t, err)
	if string(res.Stdout) != "OWN=web2\n" {
		t.Errorf("after editing config.json: %q", res.Stdout)
	}
	if _, err := p.eng.Exec(ctx, pr.Slug, "worker", engine.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Errorf("the node added to config.json is not a container: %v", err)
	}
}

// The local runtime runs containers as processes of this machine: a service container of an
// image of its own cannot run there, and start says so before anything starts.
func TestConfigJSONServiceRefusedOnLocal(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test")
	src := writeTree(t, map[string]string{".tesslate/config.json": `{
		"apps": {"web": {"start": "exec sleep 600"}},
		"infrastructure": {"db": {"image": "postgres:16", "env": {"POSTGRES_DB": "app"},
			"exports": {"DATABASE_URL": "postgres://${HOST}:${PORT}/${POSTGRES_DB}"}}},
		"connections": [{"from": "web", "to": "db"}]}`})
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "shop", FromDir: src})
	must(t, err)
	_, views, err := p.eng.Containers(ctx, pr.Slug)
	must(t, err)
	for _, v := range views {
		if v.Name == "db" && (v.Kind != engine.KindService || v.Image != "postgres:16" || v.DataPath != "/var/lib/postgresql/data" || v.Port != 5432) {
			t.Fatalf("service from config.json: %+v", v.Container)
		}
	}
	_, err = p.eng.StartProject(ctx, pr.Slug)
	if err == nil || !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "db (postgres:16)") || !strings.Contains(err.Error(), "docker mode") {
		t.Fatalf("start with a service on local: %v", err)
	}
	_, views, err = p.eng.Containers(ctx, pr.Slug)
	must(t, err)
	for _, v := range views {
		if v.Status.State == engine.ContainerRunning {
			t.Errorf("%s was started although the start was refused", v.Name)
		}
	}
	// Its snapshots still work (there is no service volume to capture here); the wake restores
	// the files and then refuses the start the same way.
	_, err = p.eng.Hibernate(ctx, pr.Slug)
	must(t, err)
	_, err = p.eng.Wake(ctx, pr.ID)
	if err == nil || !strings.Contains(err.Error(), "docker mode") {
		t.Fatalf("wake: %v", err)
	}
	if got, err := p.eng.Project(ctx, pr.Slug); err != nil || got.Status != engine.StatusActive {
		t.Fatalf("after the wake: %+v, %v", got, err)
	}
	var buf bytes.Buffer
	must(t, p.eng.ReadFile(ctx, pr.Slug, ".tesslate/config.json", &buf))
}

// A bad config.json is refused at create, naming the file, the key and what to write, and
// nothing is created.
func TestConfigJSONRefusedAtCreate(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test")
	for _, tc := range []struct{ name, json, want string }{
		{"invalid", `{"apps": {"web": }`, "invalid JSON at line 1"},
		{"unknown type", `{"infrastructure": {"q": {"type": "queue", "image": "x"}}}`, `infrastructure.q.type: unknown type "queue"`},
		{"missing node", `{"apps": {"web": {}}, "connections": [{"from": "web", "to": "db"}]}`, `connections[0].to: no app or infrastructure node is named "db"`},
		{"bad name", `{"apps": {"Web App": {}}}`, `.tesslate/config.json: container name "Web App"`},
		{"bad directory", `{"apps": {"web": {"directory": "../x"}}}`, `.tesslate/config.json: container directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := writeTree(t, map[string]string{".tesslate/config.json": tc.json})
			_, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "bad-" + tc.name, FromDir: src})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ".tesslate/config.json") {
				t.Fatalf("create: %v, want an error containing %q", err, tc.want)
			}
			if !errors.Is(err, engine.ErrBadInput) && !errors.Is(err, engine.ErrBadPath) {
				t.Errorf("%v is not a bad-input error", err)
			}
			if _, err := p.eng.Project(ctx, engine.Slugify("bad-"+tc.name)); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("a refused create left a project: %v", err)
			}
		})
	}
}

// The platform's template ships "**Port**: [Specify: ...]": it does not block a container with a
// port of its own, and still fails one that needs the file's port.
func TestTesslatePortPlaceholder(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test")
	md := withServe(t, "## Framework Configuration\n\n**Port**: [Specify: the port]\n\n## Development Server\n\n```bash\nexec sleep 600\n```\n")
	src := writeTree(t, map[string]string{"TESSLATE.md": md})
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "tpl", FromDir: src})
	must(t, err)
	_, err = p.eng.StartProject(ctx, pr.Slug)
	if err == nil || !strings.Contains(err.Error(), "is not a number") || !strings.Contains(err.Error(), "--port") {
		t.Fatalf("start needing the placeholder port: %v", err)
	}
	must(t, p.eng.RemoveContainer(ctx, pr.Slug, "app"))
	_, err = p.eng.AddContainer(ctx, pr.Slug, engine.ContainerSpec{Name: "app", Directory: ".", Port: 4000, Command: serve(t)})
	must(t, err)
	_, err = p.eng.StartProject(ctx, pr.Slug)
	must(t, err)
}

// While an operation holds a project, what cannot run then says which operation, since when and
// to wait: never advice for the state the operation passes through ("wake it first" during a
// hibernation, "has no hibernation snapshot" during one, which reads like data loss) (issue 17,
// item 2).
func TestRefusalsNameTheOperationInProgress(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test")
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "busy",
		Containers: []engine.ContainerSpec{{Name: "web", Directory: ".", Command: serve(t), Port: 4000}}})
	must(t, err)
	// Another process's hibernation, caught between its claim and its snapshot.
	claimed, err := p.store.ClaimProject(ctx, pr.ID, engine.Claim{OpID: "op-elsewhere", Kind: engine.OpHibernate, Owner: "sweeper@host:1",
		Now: time.Now(), From: []engine.ProjectStatus{engine.StatusActive}, To: engine.StatusHibernating})
	must(t, err)
	must(t, p.store.InsertOp(ctx, engine.Operation{ID: "op-elsewhere", ProjectID: pr.ID, Kind: engine.OpHibernate, Step: "claimed",
		State: engine.OpRunning, Owner: "sweeper@host:1", StartedAt: time.Now(), UpdatedAt: time.Now(), Epoch: claimed.OpEpoch}))
	checks := map[string]error{}
	_, checks["snapshot"] = p.eng.CreateSnapshot(ctx, pr.Slug, "x")
	_, checks["wake"] = p.eng.Wake(ctx, pr.Slug)
	_, checks["exec"] = p.eng.Exec(ctx, pr.Slug, "web", engine.ExecRequest{Argv: []string{"true"}})
	checks["files put"] = p.eng.WriteFile(ctx, pr.Slug, "a.txt", strings.NewReader("a"))
	_, checks["container add"] = p.eng.AddContainer(ctx, pr.Slug, engine.ContainerSpec{Name: "api", Directory: "."})
	for what, err := range checks {
		if err == nil || !errors.Is(err, engine.ErrBusy) || !strings.Contains(err.Error(), "hibernate is in progress (since ") ||
			!strings.Contains(err.Error(), "by sweeper@host:1") || !strings.Contains(err.Error(), "wait for it to finish") ||
			strings.Contains(err.Error(), "wake it first") || strings.Contains(err.Error(), "no hibernation snapshot") {
			t.Errorf("%s during a hibernation: %v", what, err)
		}
	}
}

// servicesRuntime is the local runtime claiming to run services, beside the archive sandwich of
// host directories, which cannot hold service volumes: a mode whose snapshots cannot hold them
// (every shipped mode's can; this guards one that would not).
type servicesRuntime struct{ engine.Runtime }

func (servicesRuntime) RunsServices() bool { return true }

// Where the runtime runs services but the snapshots cannot hold their volumes, a project with a
// service is refused at start, saying so and what to use: run, it could never hibernate.
func TestServiceRefusedWhereSnapshotsCannotHoldIt(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test", func(c *engine.Config) { c.Runtime = servicesRuntime{c.Runtime} })
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "svc", Containers: []engine.ContainerSpec{
		{Name: "db", Directory: ".", Kind: engine.KindService, Image: "postgres:16", DataPath: "/var/lib/postgresql/data", Port: 5432}}})
	must(t, err)
	_, err = p.eng.StartProject(ctx, pr.Slug)
	if err == nil || !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "could never hibernate") || !strings.Contains(err.Error(), "K8S_SNAPSHOT_CLASS") {
		t.Fatalf("start: %v", err)
	}
	// And its snapshots are refused rather than taken without the service's data.
	if _, err := p.eng.CreateSnapshot(ctx, pr.Slug, "x"); err == nil || !strings.Contains(err.Error(), "cannot hold the data volumes") {
		t.Fatalf("snapshot: %v", err)
	}
}

// remoteRuntime is the local runtime as a RemoteFiles runtime whose file process is not there
// (a kubernetes file manager still starting): it counts the reads of config.json.
type remoteRuntime struct {
	engine.Runtime
	configReads *int
}

func (r remoteRuntime) ImportTree(ctx context.Context, p engine.Project, src string) error {
	return r.Runtime.(engine.TreeImporter).ImportTree(ctx, p, src)
}
func (remoteRuntime) FilesNeedProcess() bool                          { return true }
func (remoteRuntime) FilesReady(context.Context, engine.Project) bool { return false }
func (r remoteRuntime) ReadFile(ctx context.Context, p engine.Project, path string, w io.Writer) error {
	if path == ".tesslate/config.json" {
		*r.configReads++
	}
	return r.Runtime.ReadFile(ctx, p, path, w)
}

// A start never waits for the process a remote runtime's file operations need: with none
// running it does not read .tesslate/config.json again and starts from what it read before.
func TestStartDoesNotWaitForRemoteFiles(t *testing.T) {
	ctx := context.Background()
	reads := 0
	p := openTest(t, t.TempDir(), "test", func(c *engine.Config) { c.Runtime = remoteRuntime{c.Runtime, &reads} })
	src := writeTree(t, map[string]string{".tesslate/config.json": withServe(t, `{"apps": {"web": {"start": "exec sleep 600", "port": 4000}}}`)})
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "remote", FromDir: src})
	must(t, err)
	_, err = p.eng.StartProject(ctx, pr.Slug)
	must(t, err)
	if reads != 0 {
		t.Errorf("start read config.json %d times through a file process that is not there", reads)
	}
}

// Issue 31: a command given with container add --command to a container .tesslate/config.json
// names was lost at the next start, which read the file again and took its definition (no
// command). A command the file does not give stands, for an app and a service alike, start
// after start; one the file gives (a service's "start") wins.
func TestOwnCommandSurvivesConfigReread(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test")
	src := writeTree(t, map[string]string{".tesslate/config.json": `{
		"apps": {"web": {"port": 8080}},
		"infrastructure": {"kv": {"image": "busybox", "port": 6379}}}`})
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "shop", FromDir: src})
	must(t, err)
	cmds := map[string]string{"web": serve(t), "kv": "exec httpd -f -p 6379"}
	for name, cmd := range cmds {
		must(t, p.eng.RemoveContainer(ctx, pr.Slug, name))
		s := engine.ContainerSpec{Name: name, Directory: ".", Port: 8080, Command: cmd}
		if name == "kv" {
			s = engine.ContainerSpec{Name: name, Directory: ".", Port: 6379, Command: cmd, Kind: engine.KindService, Image: "busybox", DataPath: "/data"}
		}
		_, err := p.eng.AddContainer(ctx, pr.Slug, s)
		must(t, err)
	}
	commands := func() map[string]string {
		t.Helper()
		_, views, err := p.eng.Containers(ctx, pr.Slug)
		must(t, err)
		got := map[string]string{}
		for _, v := range views {
			got[v.Name] = v.Command
		}
		return got
	}
	for start := 1; start <= 2; start++ {
		// The local runtime runs no service: the start is refused, after the file was read.
		if _, err := p.eng.StartProject(ctx, pr.Slug); err == nil || !strings.Contains(err.Error(), "docker mode") {
			t.Fatalf("start %d: %v, want the refusal of a service on local", start, err)
		}
		if got := commands(); !maps.Equal(got, cmds) {
			t.Fatalf("after start %d the commands are %q, want those given %q", start, got, cmds)
		}
	}
	// The file gives kv a start: it wins over the one given by hand.
	must(t, p.eng.WriteFile(ctx, pr.Slug, ".tesslate/config.json", strings.NewReader(`{
		"apps": {"web": {"port": 8080}},
		"infrastructure": {"kv": {"image": "busybox", "port": 6379, "start": "exec httpd -f -p 6379 -h /data"}}}`)))
	_, _ = p.eng.StartProject(ctx, pr.Slug)
	if got := commands(); got["kv"] != "exec httpd -f -p 6379 -h /data" || got["web"] != cmds["web"] {
		t.Fatalf("after the file gave kv a start: %q", got)
	}
}
