package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker"
	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// The docker mode as operators meet it on day two (issue 20): things changed behind sailtui's
// back, names that collide.

// dockerPrefix is the network prefix dockerCLI gave c, and the test token inside it.
func dockerPrefix(t testing.TB, c *cli) (prefix, tok string) {
	t.Helper()
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "SAILTUI_DOCKER_NETWORK_PREFIX="); ok {
			return v, strings.TrimPrefix(v, "sailtui-")
		}
	}
	t.Fatal("no network prefix in the cli's environment")
	return "", ""
}

// sleeper starts a container of the test image that only sleeps, labelled with the test's token
// (its cleanup removes it) and labels.
func sleeper(t *testing.T, dcli *client.Client, img, name, tok string, labels map[string]string) string {
	t.Helper()
	ctx := t.Context()
	l := map[string]string{dockertest.Label: tok}
	for k, v := range labels {
		l[k] = v
	}
	res, err := dcli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   name,
		Config: &container.Config{Image: img, User: "1000:1000", Entrypoint: []string{"sleep", "3600"}, Labels: l},
	})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	// Removed before the project cleanups registered earlier run: a container on a project
	// network would keep that network from being removed.
	t.Cleanup(func() {
		_, _ = dcli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := dcli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	return res.ID
}

// networksOf names the networks a container is on.
func networksOf(t *testing.T, dcli *client.Client, name string) []string {
	t.Helper()
	ins, err := dcli.ContainerInspect(t.Context(), name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect %s: %v", name, err)
	}
	var out []string
	for n := range ins.Container.NetworkSettings.Networks {
		out = append(out, n)
	}
	return out
}

func onNetwork(t *testing.T, dcli *client.Client, name, network string) bool {
	t.Helper()
	for _, n := range networksOf(t, dcli, name) {
		if n == network {
			return true
		}
	}
	return false
}

// TestDockerStartReconciles (issue 20, item 1): after the project network was removed by hand
// (its running containers and the router disconnected first, as docker requires), start brings
// back the network, every container's place on it (under its name) and the router's connection.
func TestDockerStartReconciles(t *testing.T) {
	t.Parallel()
	slug := "recon-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	prefix, tok := dockerPrefix(t, c)
	img := dockertest.Image(t, dcli)
	router := "router-" + tok
	sleeper(t, dcli, img, router, tok, nil)
	c.env = append(c.env, "SAILTUI_TRAEFIK_CONTAINER="+router)
	ctx := t.Context()

	c.ok("project", "create", slug, "--from", writeDockerSource(t), "--owner", "tester")
	c.ok("project", "start", slug)
	net := prefix + "-" + slug
	members := []string{slug + "-app", slug + "-web", router}
	for _, m := range members {
		if !onNetwork(t, dcli, m, net) {
			t.Fatalf("%s is not on %s after start: %v", m, net, networksOf(t, dcli, m))
		}
	}

	// Behind sailtui's back: everything off the network, and the network gone.
	for _, m := range members {
		if _, err := dcli.NetworkDisconnect(ctx, net, client.NetworkDisconnectOptions{Container: m, Force: true}); err != nil {
			t.Fatalf("disconnect %s: %v", m, err)
		}
	}
	if _, err := dcli.NetworkRemove(ctx, net, client.NetworkRemoveOptions{}); err != nil {
		t.Fatalf("remove network %s: %v", net, err)
	}

	c.ok("project", "start", slug)
	if _, err := dcli.NetworkInspect(ctx, net, client.NetworkInspectOptions{}); err != nil {
		t.Fatalf("network %s after start: %v", net, err)
	}
	for _, m := range members {
		if !onNetwork(t, dcli, m, net) {
			t.Errorf("%s is not on %s after the second start: %v", m, net, networksOf(t, dcli, m))
		}
	}
	// The containers reach each other by name again.
	if r := c.run("exec", slug, "app", "--", "sh", "-c", dockertest.Fetch, "sh", "web", "5173", "/"); r.code != 0 || !strings.Contains(r.stdout, "web container") {
		t.Errorf("app cannot reach web by name after start: %+v", r)
	}
	for name, x := range c.dockerContainers(slug) {
		if x.Status != "running" {
			t.Errorf("%s after start: %+v", name, x)
		}
	}

	// Wake of the active project converges the same way, here with a container gone as well.
	for _, m := range members {
		if _, err := dcli.NetworkDisconnect(ctx, net, client.NetworkDisconnectOptions{Container: m, Force: true}); err != nil {
			t.Fatalf("disconnect %s: %v", m, err)
		}
	}
	if _, err := dcli.NetworkRemove(ctx, net, client.NetworkRemoveOptions{}); err != nil {
		t.Fatalf("remove network %s: %v", net, err)
	}
	if _, err := dcli.ContainerRemove(ctx, slug+"-web", client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatalf("remove %s-web: %v", slug, err)
	}
	c.ok("project", "wake", slug)
	for _, m := range members {
		if !onNetwork(t, dcli, m, net) {
			t.Errorf("%s is not on %s after wake: %v", m, net, networksOf(t, dcli, m))
		}
	}
	if r := c.run("exec", slug, "app", "--", "sh", "-c", dockertest.Fetch, "sh", "web", "5173", "/"); r.code != 0 || !strings.Contains(r.stdout, "web container") {
		t.Errorf("app cannot reach web by name after wake: %+v", r)
	}
}

// TestDockerNamesNeverCollide (issue 20, item 2): project X-a's container b and project X's
// container a-b would both be the Docker container X-a-b. The second is refused at add (and at
// create) with a message naming the first; a Docker container of that name whose labels say it
// is another project's is neither advised for removal nor touched, whatever the command.
func TestDockerNamesNeverCollide(t *testing.T) {
	t.Parallel()
	x := "nc" + randSuffix(t)
	xa := x + "-a"
	c, dcli := dockerCLI(t, x, xa)
	_, tok := dockerPrefix(t, c)
	ctx := t.Context()

	c.ok("project", "create", x)
	c.ok("container", "add", x, "a-b", "--dir", ".", "--port", "8080")
	c.ok("project", "create", xa)
	r := c.run("container", "add", xa, "b", "--dir", ".", "--port", "8080")
	if r.code == 0 || !strings.Contains(r.stderr, x+"-a-b") || !strings.Contains(r.stderr, `"a-b"`) || !strings.Contains(r.stderr, "project "+x) {
		t.Fatalf("add of a container whose Docker name is taken: exit %d, %q", r.code, r.stderr)
	}
	// The other way round: the first project's name space is taken the same way.
	c.ok("container", "add", xa, "c", "--dir", ".", "--port", "8080")
	if r := c.run("container", "add", x, "a-c", "--dir", ".", "--port", "8080"); r.code == 0 || !strings.Contains(r.stderr, "project "+xa) {
		t.Errorf("add of a-c to %s while %s has c: exit %d, %q", x, xa, r.code, r.stderr)
	}
	c.ok("project", "start", x)

	// A container named as one of ours but labelled as another sailtui project's (made before
	// the names were checked, or by another sailtui): refused without advice, left running.
	foreign := xa + "-d"
	sleeper(t, dcli, dockertest.Image(t, dcli), foreign, tok, map[string]string{
		docker.LabelManaged: "true", docker.LabelProjectID: "someone-else", docker.LabelProject: "elsewhere", docker.LabelContainer: "d",
	})
	c.ok("container", "add", xa, "d", "--dir", ".", "--port", "8080")
	r = c.run("project", "start", xa)
	if r.code == 0 || !strings.Contains(r.stderr, foreign) || !strings.Contains(r.stderr, `project "elsewhere"`) || strings.Contains(r.stderr, "rm -f") {
		t.Errorf("start over another project's container: exit %d, %q", r.code, r.stderr)
	}
	c.ok("project", "stop", xa)
	r = c.run("project", "hibernate", xa)
	t.Logf("hibernate %s: exit %d %s", xa, r.code, r.stderr)
	ins, err := dcli.ContainerInspect(ctx, foreign, client.ContainerInspectOptions{})
	if err != nil || !ins.Container.State.Running {
		t.Fatalf("the other project's container after start, stop and hibernate of %s: %v", xa, err)
	}
	// The Docker name X-a-b is the first project's container, running, untouched by all of it.
	ins, err = dcli.ContainerInspect(ctx, x+"-a-b", client.ContainerInspectOptions{})
	if err != nil || !ins.Container.State.Running || ins.Container.Config.Labels[docker.LabelProject] != x {
		t.Errorf("%s-a-b: %v", x, err)
	}
}

// TestDockerMissingImage (issue 20, item 6): a DEVSERVER_IMAGE that does not exist fails the
// start once for the whole project, naming `make image`, without a doubled "start" prefix;
// the log of a container it could not create holds no start (issue 31).
func TestDockerMissingImage(t *testing.T) {
	slug := "noimg-" + randSuffix(t)
	c, _ := dockerCLI(t, slug)
	_, tok := dockerPrefix(t, c)
	c.env = append(c.env, "DEVSERVER_IMAGE=sailtui-no-such-image:"+tok)
	c.ok("project", "create", slug, "--from", writeDockerSource(t))
	r := c.run("project", "start", slug)
	if r.code == 0 || strings.Count(r.stderr, "make image") != 1 || !strings.Contains(r.stderr, "sailtui-no-such-image:"+tok) {
		t.Fatalf("start without the image: exit %d, %q; want one error naming the image and make image", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "start "+slug+"/app: start "+slug+"/app") || strings.Contains(r.stderr, "start "+slug+"/web: start "+slug+"/web") {
		t.Errorf("doubled prefix: %q", r.stderr)
	}
	if !strings.Contains(r.stderr, slug+"/app") || !strings.Contains(r.stderr, slug+"/web") {
		t.Errorf("the error does not name the containers it failed: %q", r.stderr)
	}
	// Issue 31: no container was made, so its log says nothing started.
	if out := c.ok("logs", slug, "web"); strings.Contains(out, "started") {
		t.Errorf("the log of a container whose create failed: %q", out)
	}
}

// runWithin is c.runIn that fails the test when the command is not done within d.
func (c *cli) runWithin(d time.Duration, stdin io.Reader, args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), d)
	defer cancel()
	return c.runCtx(ctx, fmt.Sprintf("still running after %s", d), stdin, nil, args...)
}

// TestDockerLogsOutliveStop (issue 20, item 4): a stop removes the Docker container, and its
// log stays readable: logs prints it (--tail too), logs -f prints it and returns with a note.
func TestDockerLogsOutliveStop(t *testing.T) {
	t.Parallel()
	slug := "logs-" + randSuffix(t)
	c, _ := dockerCLI(t, slug)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "talk", "--dir", ".", "--port", "8080",
		"--command", `echo first-line; echo hello-from-talk; exec sailtui devserver --dir . --port "$PORT"`)
	c.ok("project", "start", slug)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.ok("logs", slug, "talk"), "devserver: serving") {
		if time.Now().After(deadline) {
			t.Fatalf("no devserver line in the log: %q", c.ok("logs", slug, "talk"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.ok("container", "stop", slug, "talk")

	if out := c.ok("logs", slug, "talk"); !strings.Contains(out, "first-line\nhello-from-talk\n") {
		t.Errorf("logs after stop: %q", out)
	}
	// The last three: hello, the devserver's line and the stop's marker (issue 17).
	if out := c.ok("logs", slug, "talk", "--tail", "3"); strings.Contains(out, "first-line") || !strings.Contains(out, "hello-from-talk") || !strings.HasSuffix(out, "— stopped —\n") {
		t.Errorf("logs --tail 3 after stop: %q", out)
	}
	r := c.runWithin(30*time.Second, nil, "logs", slug, "talk", "-f")
	if r.code != 0 || !strings.Contains(r.stdout, "hello-from-talk") || !strings.Contains(r.stderr, "stopped") || !strings.Contains(r.stderr, "not following") {
		t.Errorf("logs -f after stop: %+v", r)
	}

	// Started again, the new container's output follows what the one before said (issue 17:
	// the kept log is the container's whole history, with a marker where it stopped).
	c.ok("project", "start", slug)
	out := c.ok("logs", slug, "talk")
	if strings.Count(out, "hello-from-talk") != 2 || !strings.Contains(out, "— stopped —\n— started —\nfirst-line\n") {
		t.Errorf("logs after the restart: %q", out)
	}
}

// TestDockerLogsKeptAcrossHibernation (issue 17, item 4): hibernation removes the containers;
// their log is kept beside the state (not in the project's files), goes on after the wake
// with markers, is in no snapshot and goes with the project.
func TestDockerLogsKeptAcrossHibernation(t *testing.T) {
	t.Parallel()
	dcli := dockertest.Client(t)
	img := dockertest.Image(t, dcli)
	prefix := "sailtui-" + dockertest.Token(t, dcli)
	state := t.TempDir()
	de := openDockerEngine(t, state, img, prefix, nil)
	slug := "keeplog-" + randSuffix(t)
	t.Cleanup(func() { dockertest.RemoveLabelled(t, dcli, "sailtui.project="+slug) })
	enginetest.LogsAcrossHibernation(t, de.eng, slug, filepath.Join(state, "objects"), func(p engine.Project) []string {
		files, _ := filepath.Glob(filepath.Join(state, "docker-logs", p.Slug, "*"))
		return files
	})
}

// TestDockerExecStreams (issue 20, item 5): exec's output arrives as the command writes it,
// piped input reaches the command (to its end), and --help says what happens to stdin and TTYs.
func TestDockerExecStreams(t *testing.T) {
	t.Parallel()
	slug := "exec-" + randSuffix(t)
	c, _ := dockerCLI(t, slug)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "sh", "--dir", ".", "--port", "8080")
	c.ok("project", "start", slug)

	// The first line is there while the command still sleeps.
	cmd := exec.Command(os.Args[0], "--state-dir", c.state, "exec", slug, "sh", "--", "sh", "-c", "echo first; sleep 8; echo second")
	cmd.Env = append(append(os.Environ(), "SAILTUI_TEST_MAIN=1", "NO_COLOR=1"), c.env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := out.Read(b)
		line <- string(b[:n])
	}()
	// Measured from the first line, not from the start: on a loaded machine the exec itself
	// may take seconds, the 8 s between the lines does not shrink.
	var firstAt time.Time
	select {
	case l := <-line:
		firstAt = time.Now()
		if l != "first\n" {
			t.Errorf("first output %q", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no output 60 s into a command that printed at once")
	}
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil || string(rest) != "second\n" {
		t.Errorf("the rest: %q, %v", rest, err)
	}
	if gap := time.Since(firstAt); gap < 4*time.Second {
		t.Errorf("the first line came %s before the last, written 8 s apart: held back", gap)
	}

	// Piped input, larger than any pipe buffer, reaches the command and ends for it.
	in := strings.Repeat("0123456789abcdef\n", 1<<16) // 1 MiB
	r := c.runWithin(time.Minute, strings.NewReader(in), "exec", slug, "sh", "--", "sh", "-c", "wc -c; echo done >&2")
	if r.code != 0 || strings.TrimSpace(r.stdout) != strconv.Itoa(len(in)) || r.stderr != "done\n" {
		t.Errorf("exec with 1 MiB on stdin: %+v", r)
	}
	r = c.runWithin(time.Minute, strings.NewReader("world\n"), "exec", slug, "sh", "--", "sh", "-c", "read x; echo hello $x; exit 3")
	if r.code != 3 || r.stdout != "hello world\n" {
		t.Errorf("exec reading a line: %+v", r)
	}
	// A command that reads nothing is not held up by input that never ends.
	pr, pw, err := os.Pipe() // a file, so that the command's stdin is the pipe itself
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	defer pr.Close()
	if r := c.runWithin(30*time.Second, pr, "exec", slug, "sh", "--", "echo", "quick"); r.code != 0 || r.stdout != "quick\n" {
		t.Errorf("exec with an open stdin it does not read: %+v", r)
	}

	help := c.ok("exec", "--help")
	for _, want := range []string{"stdin", "TTY", "-i"} {
		if !strings.Contains(help, want) {
			t.Errorf("exec --help does not say %q:\n%s", want, help)
		}
	}
}

// localPort is the port of a container's local URL (0 when it has none).
func localPort(t *testing.T, x jsonDockerContainer) int {
	t.Helper()
	u, err := url.Parse(x.LocalURL)
	if err != nil || u.Port() == "" {
		return 0
	}
	n, _ := strconv.Atoi(u.Port())
	return n
}

// TestDockerStablePorts (issue 20, item 3): a container keeps its host port across a stop and
// start, a restore and a hibernate + wake while the port is free, and gets another when it is
// taken; with no router configured the table shows the local URL, which works.
func TestDockerStablePorts(t *testing.T) {
	slug := "ports-" + randSuffix(t)
	c, _ := dockerCLI(t, slug)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "web", "--dir", ".", "--port", "8080")
	c.ok("files", "put", slug, "index.html")
	c.ok("project", "start", slug)
	first := c.dockerContainers(slug)["web"]
	port := localPort(t, first)
	if port == 0 {
		t.Fatalf("no local URL after start: %+v", first)
	}
	same := func(when string) {
		t.Helper()
		x := c.dockerContainers(slug)["web"]
		if got := localPort(t, x); got != port {
			t.Fatalf("after %s the host port is %d, was %d", when, got, port)
		}
		waitHTTP(t, x.LocalURL, "")
	}
	c.ok("container", "stop", slug, "web")
	c.ok("project", "start", slug)
	same("stop and start")

	var snap jsonSnapshot
	c.json(&snap, "snapshot", "create", slug, "--label", "ports")
	c.ok("snapshot", "restore", slug, snap.ID, "--yes")
	c.ok("project", "start", slug)
	same("restore")

	c.ok("project", "hibernate", slug)
	c.ok("project", "wake", slug)
	same("hibernate and wake")

	// No router configured: the table's URL is the local one.
	table := c.ok("containers", "ls", slug)
	if !strings.Contains(table, first.LocalURL) || strings.Contains(table, ".localhost") {
		t.Errorf("containers ls without a router shows no working URL:\n%s", table)
	}

	// Taken by someone else meanwhile: another port, and the container runs.
	c.ok("container", "stop", slug, "web")
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("take port %d: %v", port, err)
	}
	defer l.Close()
	c.ok("project", "start", slug)
	x := c.dockerContainers(slug)["web"]
	if x.Status != "running" || localPort(t, x) == port || localPort(t, x) == 0 {
		t.Fatalf("start with its port taken: %+v", x)
	}
	waitHTTP(t, x.LocalURL, "")
}

// TestDockerPortAndExitCode (issue 20, item 8): port is the port the service listens on, the
// same before a start, while it runs and once it is stopped again; host_port is where this
// machine reaches it while it runs; an exited container shows its exit code (0 too), in the
// table and in JSON.
func TestDockerPortAndExitCode(t *testing.T) {
	t.Parallel()
	slug := "port-" + randSuffix(t)
	c, _ := dockerCLI(t, slug)
	c.ok("project", "create", slug, "--from", writeDockerSource(t))
	c.ok("container", "add", slug, "fails", "--dir", "scripts", "--port", "9000", "--command", "echo bye; exit 3")
	c.ok("container", "add", slug, "done", "--dir", "scripts", "--command", "true")
	type row struct {
		Name     string `json:"name"`
		Status   string `json:"status"`
		Port     int    `json:"port"`
		HostPort int    `json:"host_port"`
		ExitCode *int   `json:"exit_code"`
	}
	rows := func() map[string]row {
		var rs []row
		c.json(&rs, "containers", "ls", slug)
		m := map[string]row{}
		for _, r := range rs {
			m[r.Name] = r
		}
		return m
	}
	want := map[string]int{"app": 8080, "web": 5173, "fails": 9000, "done": 3000}
	check := func(when string, running bool) map[string]row {
		t.Helper()
		rs := rows()
		for name, port := range want {
			if rs[name].Port != port {
				t.Errorf("%s: %s port %d, want %d (%+v)", when, name, rs[name].Port, port, rs[name])
			}
		}
		for _, name := range []string{"app", "web"} {
			if got := rs[name].HostPort; running == (got == 0) || got == want[name] {
				t.Errorf("%s: %s host_port %d", when, name, got)
			}
		}
		return rs
	}
	check("before start", false)
	// The start fails, at once, for the two that end: each named with its exit code and its
	// log; the two that serve are up and their ports answer (issue 17).
	begun := time.Now()
	r := c.run("project", "start", slug)
	if r.code != 1 {
		t.Fatalf("start of a project whose containers exit: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"start " + slug + "/fails: it exited", "with code 3", "| bye", "start " + slug + "/done: it exited", "with code 0",
		"the project's other containers run (app, web)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("start's error does not say %q:\n%s", want, r.stderr)
		}
	}
	if took := time.Since(begun); took > time.Minute {
		t.Errorf("containers that exit at once took %s to fail the start", took)
	}
	for name, x := range c.containers(slug) {
		if (name == "app" || name == "web") && (x.Live == nil || !*x.Live) {
			t.Errorf("%s is up but its port does not answer: %+v", name, x)
		}
	}
	// Every container of a project has restart: unless-stopped (a daemon restart must not
	// leave it down), so the two that end are started again after a growing delay: each is
	// seen exited with its code between runs, in JSON and in the table.
	deadline := time.Now().Add(30 * time.Second)
	seen := map[string]bool{}
	for len(seen) < 4 && time.Now().Before(deadline) {
		rs := check("after start", true)
		for name, code := range map[string]int{"fails": 3, "done": 0} {
			if r := rs[name]; r.Status == "exited" && r.ExitCode != nil && *r.ExitCode == code {
				seen[name] = true
			}
		}
		if r := rs["app"]; r.ExitCode != nil {
			t.Fatalf("a running container has an exit code: %+v", r)
		}
		table := c.ok("containers", "ls", slug)
		for _, s := range []string{"exited (3)", "exited (0)"} {
			if strings.Contains(table, s) {
				seen[s] = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, w := range []string{"fails", "done", "exited (3)", "exited (0)"} {
		if !seen[w] {
			t.Errorf("never saw %s exited with its exit code (seen: %v)", w, seen)
		}
	}
	c.ok("project", "stop", slug)
	check("after stop", false)
}

// TestDockerFailedHibernationNextStep (issue 20, item 7): a foreign container on the project
// network blocks the teardown of a hibernation and leaves the project failed. Text output, JSON
// and the console show what to do next, hibernate again says why it still cannot finish, and
// once the network is free hibernate finishes the teardown from the snapshot it took, leaving the
// foreign container alone; wake then brings the project back.
func TestDockerFailedHibernationNextStep(t *testing.T) {
	t.Parallel()
	slug := "fail-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	prefix, tok := dockerPrefix(t, c)
	ctx := t.Context()
	c.ok("project", "create", slug, "--from", writeDockerSource(t), "--owner", "tester")
	c.ok("project", "start", slug)
	c.ok("exec", slug, "web", "--", "sh", "-c", "echo kept > note.txt")

	net := prefix + "-" + slug
	foreign := "foreign-" + tok
	sleeper(t, dcli, dockertest.Image(t, dcli), foreign, tok, nil)
	if _, err := dcli.NetworkConnect(ctx, net, client.NetworkConnectOptions{Container: foreign}); err != nil {
		t.Fatalf("connect %s to %s: %v", foreign, net, err)
	}
	if r := c.run("project", "hibernate", slug); r.code == 0 {
		t.Fatalf("hibernate with a foreign container on the network succeeded: %+v", r)
	}
	var p projectRow
	var ps []projectRow
	c.json(&ps, "projects", "ls")
	for _, x := range ps {
		if x.Slug == slug {
			p = x
		}
	}
	if p.Status != "failed" || !strings.Contains(p.NextStep, "sailtui project hibernate "+slug) || !strings.Contains(p.NextStep, "sailtui project wake "+slug) {
		t.Fatalf("failed project in JSON: %+v", p)
	}
	if out := c.ok("projects", "ls"); !strings.Contains(out, "next: sailtui project hibernate "+slug) {
		t.Errorf("projects ls shows no next step:\n%s", out)
	}
	s := startConsole(t, c, "--mode", "docker")
	s.waitFor(slug, "next: sailtui project hibernate "+slug)
	s.keys("q")

	// Still blocked: the error is the teardown's, not "not allowed in this state".
	r := c.run("project", "hibernate", slug)
	if r.code == 0 || strings.Contains(r.stderr, "not allowed in this state") || !strings.Contains(r.stderr, "teardown") {
		t.Errorf("hibernate of the failed project while still blocked: %+v", r)
	}

	if _, err := dcli.NetworkDisconnect(ctx, net, client.NetworkDisconnectOptions{Container: foreign, Force: true}); err != nil {
		t.Fatalf("disconnect %s: %v", foreign, err)
	}
	out := c.ok("project", "hibernate", slug)
	if !strings.Contains(out, "hibernated") {
		t.Fatalf("hibernate of the failed project: %q", out)
	}
	if _, err := dcli.NetworkInspect(ctx, net, client.NetworkInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("network %s after the finished hibernation: %v", net, err)
	}
	if ins, err := dcli.ContainerInspect(ctx, foreign, client.ContainerInspectOptions{}); err != nil || !ins.Container.State.Running {
		t.Errorf("the foreign container after the hibernation: %v", err)
	}
	c.ok("project", "wake", slug)
	if got := c.ok("files", "get", slug, "web/note.txt"); got != "kept\n" {
		t.Errorf("note after wake: %q", got)
	}
}

// jsonFinding is a doctor finding as -o json gives it.
type jsonFinding struct {
	Check   string `json:"check"`
	Project string `json:"project"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix"`
	Fixable bool   `json:"fixable"`
	Fixed   bool   `json:"fixed"`
	Error   string `json:"error"`
}

// doctorFindings runs doctor (with args) and returns its findings of project slug.
func (c *cli) doctorFindings(slug string, args ...string) []jsonFinding {
	c.t.Helper()
	r := c.run(append([]string{"doctor", "-o", "json"}, args...)...)
	var rep struct {
		Findings []jsonFinding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		c.t.Fatalf("doctor %v: %v\n%+v", args, err, r)
	}
	var out []jsonFinding
	for _, f := range rep.Findings {
		if f.Project == slug {
			out = append(out, f)
		}
	}
	return out
}

// Issue 31, docker item 2: a container removed by hand (docker rm -f) is missing, not stopped:
// containers ls says so with what brings it back, the doctor reports it, and --fix (or the
// start it names) recreates it. A container sailtui stopped stays stopped, and is no finding.
func TestDockerRemovedContainerMissing(t *testing.T) {
	t.Parallel()
	slug := "gone-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	ctx := t.Context()
	c.ok("project", "create", slug, "--from", writeDockerSource(t))
	c.ok("project", "start", slug)
	if fs := c.doctorFindings(slug); len(fs) != 0 {
		t.Fatalf("doctor on a project that runs: %+v", fs)
	}
	removeByHand := func() {
		t.Helper()
		if _, err := dcli.ContainerRemove(ctx, slug+"-web", client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatalf("docker rm -f %s-web: %v", slug, err)
		}
	}
	removeByHand()

	var rows []containerRow
	c.json(&rows, "containers", "ls", slug)
	for _, r := range rows {
		switch r.Name {
		case "web":
			if r.Status != "missing" || !strings.Contains(r.Detail, "removed outside sailtui") || !strings.Contains(r.Detail, "sailtui project start "+slug) {
				t.Errorf("web after docker rm -f: status %q, detail %q; want missing, saying why and what recreates it", r.Status, r.Detail)
			}
		case "app":
			if r.Status != "running" {
				t.Errorf("app, left alone: %+v", r)
			}
		}
	}
	if out := c.ok("containers", "ls", slug); !strings.Contains(out, "missing: its Docker container "+slug+"-web") {
		t.Errorf("containers ls does not show web as missing:\n%s", out)
	}
	if r := c.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "missing-container") {
		t.Errorf("doctor with a missing container: %+v, want exit 1 and the finding", r)
	}
	fs := c.doctorFindings(slug)
	if len(fs) != 1 || fs[0].Check != "missing-container" || !strings.Contains(fs[0].Detail, "container web") ||
		!strings.Contains(fs[0].Fix, "sailtui project start "+slug) || !fs[0].Fixable {
		t.Fatalf("doctor findings of %s: %+v, want one fixable missing-container of web naming project start", slug, fs)
	}
	if fs := c.doctorFindings(slug, "--fix"); len(fs) != 1 || !fs[0].Fixed || fs[0].Error != "" {
		t.Fatalf("doctor --fix: %+v, want the missing container recreated", fs)
	}
	if st := c.dockerContainers(slug)["web"].Status; st != "running" {
		t.Fatalf("web after doctor --fix: %s, want running", st)
	}
	if fs := c.doctorFindings(slug); len(fs) != 0 {
		t.Errorf("doctor after --fix: %+v", fs)
	}

	// The start the finding names brings it back as well.
	removeByHand()
	c.ok("project", "start", slug)
	if st := c.dockerContainers(slug)["web"].Status; st != "running" {
		t.Fatalf("web after project start: %s, want running", st)
	}

	// Stopped by sailtui: stopped, and nothing for the doctor; so also after a stop of a
	// missing one.
	c.ok("container", "stop", slug, "web")
	if st := c.dockerContainers(slug)["web"].Status; st != "stopped" {
		t.Errorf("web after container stop: %s, want stopped", st)
	}
	c.ok("container", "start", slug, "web")
	removeByHand()
	c.ok("project", "stop", slug)
	for name, x := range c.dockerContainers(slug) {
		if x.Status != "stopped" {
			t.Errorf("%s after project stop: %s, want stopped", name, x.Status)
		}
	}
	if fs := c.doctorFindings(slug); len(fs) != 0 {
		t.Errorf("doctor after project stop: %+v", fs)
	}
}
