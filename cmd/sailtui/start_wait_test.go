package main

import (
	"strings"
	"testing"
	"time"
)

// A container that dies at once fails `project start` and `container start` (exit 1, its name,
// exit code and last log lines); the project no longer reads active, and `containers ls`
// shows the exit code. (issue 17, item 1)
func TestCLIStartFailsWhenContainerExits(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.ok("container", "add", "shop", "web", "--dir", ".", "--port", "8080", "--command", "echo listening soon; echo 'sh: vite: not found' >&2; exit 127")
	begun := time.Now()
	r := c.run("project", "start", "shop")
	if r.code != 1 {
		t.Fatalf("project start of a container that exits: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"start shop/web: it exited at once with code 127", "sh: vite: not found", "listening soon", "sailtui logs shop web"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("project start's error does not say %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "active") {
		t.Errorf("a failed start printed %q", r.stdout)
	}
	if took := time.Since(begun); took > 30*time.Second {
		t.Errorf("a container that exits at once took %s to fail the start", took)
	}
	ls := c.ok("projects", "ls")
	if !strings.Contains(ls, "start failed") || !strings.Contains(ls, "shop: start failed: web: it exited at once with code 127") {
		t.Errorf("projects ls after the failed start:\n%s", ls)
	}
	var ps []projectRow
	c.json(&ps, "projects", "ls")
	if len(ps) != 1 || ps[0].Status != "active" || !strings.HasPrefix(ps[0].StatusReason, "start failed: ") {
		t.Errorf("projects ls -o json after the failed start: %+v", ps)
	}
	row := c.containers("shop")["web"]
	if row.Status != "exited" || row.ExitCode == nil || *row.ExitCode != 127 || row.Live != nil {
		t.Errorf("containers ls -o json: %+v", row)
	}
	if table := c.ok("containers", "ls", "shop"); !strings.Contains(table, "exited (127)") || !strings.Contains(table, "LIVE") {
		t.Errorf("containers ls:\n%s", table)
	}

	r = c.run("container", "start", "shop", "web")
	if r.code != 1 || !strings.Contains(r.stderr, "start shop/web: it exited at once with code 127") || !strings.Contains(r.stderr, "vite: not found") {
		t.Fatalf("container start of a container that exits: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

// A container that runs but does not listen on its port fails the start at the start timeout
// (SAILTUI_START_TIMEOUT or --start-timeout), and `containers ls` says its port does not
// answer; one that listens starts, and its URL is live.
func TestCLIStartWaitsForPort(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.ok("container", "add", "shop", "mute", "--dir", ".", "--port", "8080", "--command", "echo npm install; exec sleep 600")
	c.ok("container", "add", "shop", "web", "--dir", ".", "--port", "8080", "--command", selfCommand())
	begun := time.Now()
	r := c.runIn(nil, []string{"SAILTUI_START_TIMEOUT=2s"}, "project", "start", "shop")
	took := time.Since(begun)
	if r.code != 1 {
		t.Fatalf("project start of a container that never listens: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"start shop/mute: it did not accept connections on port 8080 within the start timeout 2s", "npm install",
		"the project's other containers run (web)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("project start's error does not say %q:\n%s", want, r.stderr)
		}
	}
	if took < 2*time.Second || took > 30*time.Second {
		t.Errorf("the start gave up after %s, want about the 2s timeout", took)
	}
	rows := c.containers("shop")
	if m := rows["mute"]; m.Status != "running" || m.Live == nil || *m.Live {
		t.Errorf("a running container that does not listen: %+v", m)
	}
	if w := rows["web"]; w.Status != "running" || w.Live == nil || !*w.Live || w.URL == "" {
		t.Errorf("a listening container: %+v", w)
	}
	table := c.ok("containers", "ls", "shop")
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "mute" && !strings.Contains(line, " no "):
			t.Errorf("containers ls shows mute's port as answering: %q", line)
		case len(f) > 0 && f[0] == "web" && !strings.Contains(line, " yes "):
			t.Errorf("containers ls does not show web's port as answering: %q", line)
		}
	}

	// The flag is the same setting; `sailtui config` shows it.
	r = c.run("--start-timeout", "1s", "container", "start", "shop", "mute")
	if r.code != 1 || !strings.Contains(r.stderr, "within the start timeout 1s") {
		t.Fatalf("container start --start-timeout 1s: exit %d\n%s", r.code, r.stderr)
	}
	if r := c.run("--start-timeout", "0s", "projects", "ls"); r.code != 2 || !strings.Contains(r.stderr, "--start-timeout") {
		t.Errorf("--start-timeout 0s: exit %d %s", r.code, r.stderr)
	}
	if cfg := c.runIn(nil, []string{"SAILTUI_START_TIMEOUT=3m"}, "config"); !strings.Contains(cfg.stdout, "SAILTUI_START_TIMEOUT") || !strings.Contains(cfg.stdout, "3m0s") {
		t.Errorf("sailtui config does not show the start timeout:\n%s", cfg.stdout)
	}

	// A start that succeeds clears the failure: the container that did not listen is gone.
	c.ok("container", "rm", "shop", "mute")
	c.ok("project", "start", "shop")
	if ls := c.ok("projects", "ls"); strings.Contains(ls, "start failed") || !strings.Contains(ls, "active") {
		t.Errorf("projects ls after a start that succeeded:\n%s", ls)
	}
}

// In docker mode a published port is accepted by Docker's proxy whatever the container does:
// a container that runs but does not listen still fails the start at the timeout, and
// containers ls tells it from one that serves.
func TestDockerStartNeverListens(t *testing.T) {
	t.Parallel()
	slug := "mute-" + randSuffix(t)
	c, _ := dockerCLI(t, slug)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "mute", "--dir", ".", "--port", "9100", "--command", "echo compiling; exec sleep 600")
	c.ok("container", "add", slug, "web", "--dir", ".", "--port", "8080", "--command", `exec sailtui devserver --dir . --port "$PORT"`)
	r := c.runIn(nil, []string{"SAILTUI_START_TIMEOUT=5s"}, "project", "start", slug)
	if r.code != 1 || !strings.Contains(r.stderr, "start "+slug+"/mute: it did not accept connections on port 9100 within the start timeout 5s") ||
		!strings.Contains(r.stderr, "| compiling") || strings.Contains(r.stderr, slug+"/web:") {
		t.Fatalf("start with a container that never listens: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	rows := c.containers(slug)
	if m := rows["mute"]; m.Status != "running" || m.Live == nil || *m.Live {
		t.Errorf("docker container that does not listen: %+v", m)
	}
	if w := rows["web"]; w.Status != "running" || w.Live == nil || !*w.Live {
		t.Errorf("docker container that listens: %+v", w)
	}
}

// The console shows what the command line shows: a project whose start failed reads "start
// failed", its containers pane shows the exit code and which ports do not answer, and a
// start from the console that fails says why. (issue 17, item 1)
func TestConsoleStartFailure(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.ok("container", "add", "shop", "web", "--dir", ".", "--port", "8080", "--command", "echo boom; exit 3")
	c.ok("container", "add", "shop", "mute", "--dir", ".", "--port", "8081", "--command", "exec sleep 600")
	c.ok("container", "add", "shop", "serves", "--dir", ".", "--port", "8082", "--command", selfCommand())
	if r := c.runIn(nil, []string{"SAILTUI_START_TIMEOUT=2s"}, "project", "start", "shop"); r.code != 1 {
		t.Fatalf("project start: exit %d %s", r.code, r.stderr)
	}
	s := startConsole(t, c, "--start-timeout", "2s")
	s.waitFor("shop", "start failed")
	s.keys("Enter")
	scr := s.waitFor("exited 3", "not answering")
	seen := 0
	for _, line := range strings.Split(scr, "\n") {
		row := strings.TrimLeft(line, " >")
		if strings.HasPrefix(row, "mute ") || strings.HasPrefix(row, "serves ") {
			seen++
		}
		switch {
		case strings.HasPrefix(row, "mute ") && !strings.Contains(line, "not answering"):
			t.Errorf("mute's port does not answer, but its row says nothing of it: %q", line)
		case strings.HasPrefix(row, "serves ") && (strings.Contains(line, "not answering") || !strings.Contains(line, "http://")):
			t.Errorf("serves answers on its URL, but its row does not show it live: %q", line)
		}
	}
	if seen != 2 {
		t.Fatalf("the containers pane does not show mute and serves:\n%s", scr)
	}
	s.keys("/", "web", "Enter")
	s.waitFor("/web")
	s.keys("s")
	s.waitFor("start shop/web: it exited at once with code 3", "boom")
}
