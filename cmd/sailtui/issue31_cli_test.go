package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Issue 31, small items of the local runtime, the CLI and the console.

// The refusal of an exec in a hibernated project gives the commands that get it done, in an
// order that works when typed back: the wake, then the exec (project, then container).
func TestCLIExecHibernatedHint(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "sleepy")
	c.ok("container", "add", "sleepy", "web", "--dir", ".", "--command", "exec sleep 600")
	c.ok("project", "start", "sleepy")
	c.ok("project", "hibernate", "sleepy")

	r := c.run("exec", "sleepy", "web", "--", "echo", "hi")
	if r.code == 0 || !strings.HasPrefix(r.stderr, "sailtui: exec sleepy web: project is hibernated") {
		t.Fatalf("exec in a hibernated project: exit %d, stderr %q", r.code, r.stderr)
	}
	hint := regexp.MustCompile(`wake it first: sailtui (project wake \S+), then sailtui (exec \S+ \S+) -- …`).FindStringSubmatch(r.stderr)
	if hint == nil {
		t.Fatalf("the refusal gives no wake-then-exec hint: %q", r.stderr)
	}
	c.ok(strings.Fields(hint[1])...)
	if got := c.ok(append(strings.Fields(hint[2]), "--", "echo", "hi")...); got != "hi\n" {
		t.Fatalf("the hinted exec line printed %q", got)
	}
}

// The console's :undelete of a name no project has points at the list that shows removed
// projects (projects ls --all), not at the live list, where a removed one never shows.
func TestConsoleUndeleteUnknownPointsAtAll(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "kept")
	s := startConsole(t, c)
	s.waitFor("kept")
	s.keys(":undelete nosuch", "Enter")
	scr := s.waitFor(`undelete project "nosuch"`)
	if !strings.Contains(scr, "sailtui projects ls --all") {
		t.Errorf(":undelete of an unknown slug does not point at projects ls --all:\n%s", scr)
	}
	r := c.run("project", "undelete", "nosuch")
	if r.code == 0 || !strings.Contains(r.stderr, "removed ones are listed by: sailtui projects ls --all") {
		t.Errorf("project undelete of an unknown slug: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A Ctrl-C during project hibernate says what the project was left as, read afterwards (the
// engine puts an abandoned hibernation back), not "context canceled", and exits 130. Once
// during the snapshot, once after it: the snapshot that stays is named.
func TestCLIHibernateInterrupted(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "nap")
	c.ok("container", "add", "nap", "web", "--dir", ".", "--command", "exec sleep 600")
	c.ok("container", "add", "nap", "api", "--dir", ".", "--command", "exec sleep 600")
	c.ok("project", "start", "nap")
	c.ok("container", "stop", "nap", "api")

	r := c.runIn(nil, []string{"SAILTUI_TEST_INTERRUPT_AT=hibernate:snapshot-pending"}, "project", "hibernate", "nap")
	want := "sailtui: interrupted: hibernate nap did not finish; the project is active, as before; " +
		"containers running: web (started again); not running: api stopped; sailtui project hibernate nap runs it again\n"
	if r.code != 130 || r.stderr != want {
		t.Fatalf("hibernate interrupted during its snapshot: exit %d, stderr %q\nwant exit 130, %q", r.code, r.stderr, want)
	}
	var rows []containerRow
	c.json(&rows, "containers", "ls", "nap")
	for _, row := range rows {
		if want := map[string]engine.ContainerState{"web": engine.ContainerRunning, "api": engine.ContainerStopped}[row.Name]; row.Status != want {
			t.Errorf("after the interrupted hibernate %s is %s, the report said %s", row.Name, row.Status, want)
		}
	}

	r = c.runIn(nil, []string{"SAILTUI_TEST_INTERRUPT_AT=hibernate:snapshot-ready"}, "project", "hibernate", "nap")
	var snaps []snapshotRow
	c.json(&snaps, "snapshot", "ls", "nap")
	if len(snaps) != 1 || snaps[0].Status != "ready" {
		t.Fatalf("after a hibernate interrupted once its snapshot was ready, the timeline holds %+v", snaps)
	}
	if r.code != 130 || !strings.Contains(r.stderr, "the hibernation snapshot "+snaps[0].ID+" it took stays in the timeline") ||
		strings.Contains(r.stderr, "context canceled") {
		t.Fatalf("hibernate interrupted after its snapshot: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := c.ok("project", "hibernate", "nap"); !strings.Contains(got, "hibernated") {
		t.Fatalf("hibernate after the interrupted ones: %q", got)
	}
}

// The console's - runs the previous command line that worked again, toggling between the last
// two as k9s does; one that failed (an :undelete of no project) is not run again by it.
func TestConsoleLastSkipsFailedCommand(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "alpha")
	c.ok("container", "add", "alpha", "web", "--dir", ".", "--command", "exec sleep 600")
	s := startConsole(t, c)
	s.waitFor("alpha")
	s.keys(":containers alpha", "Enter")
	s.waitFor("alpha  Containers", "web")
	s.keys(":undelete nosuch", "Enter")
	s.waitFor(`undelete project "nosuch"`)
	s.keys(":projects", "Enter")
	s.waitFor("Projects  1")
	// Run again, the :undelete would leave the projects on screen.
	s.keys("-")
	s.waitFor("alpha  Containers", "web")
}

// The console saves a log under the XDG state directory, not where it was started (under
// make run, the source tree), and says the whole path.
func TestConsoleLogSaveGoesToStateDir(t *testing.T) {
	c := newCLI(t)
	stateHome, cwd := t.TempDir(), t.TempDir()
	c.env = append(c.env, "XDG_STATE_HOME="+stateHome)
	c.ok("project", "create", "saver")
	c.ok("container", "add", "saver", "web", "--dir", ".", "--command", "echo line-to-save; exec sleep 600")
	c.ok("project", "start", "saver")
	s := startTerminal(t, c, "cd "+shellQuote(cwd)+" && exec "+sailtuiLine(c))
	s.waitFor("saver")
	s.keys(":containers saver", "Enter")
	s.waitFor("saver  Containers", "web")
	s.keys(":logs web", "Enter")
	s.waitFor("line-to-save")
	s.keys("s")
	dir := filepath.Join(stateHome, "sailtui", "saved-logs")
	s.waitFor("Save log", "to a file in", "/sailtui/saved-") // the dialog wraps the rest
	s.keys("Enter")
	scr := s.waitFor("saved 2 lines to " + dir + "/saver-web-")
	saved, err := filepath.Glob(filepath.Join(dir, "saver-web-*.log"))
	if err != nil || len(saved) != 1 {
		t.Fatalf("saved logs in %s: %v (%v)\n%s", dir, saved, err, scr)
	}
	if got, err := os.ReadFile(saved[0]); err != nil || string(got) != "— started —\nline-to-save\n" {
		t.Errorf("the saved log holds %q (%v)", got, err)
	}
	if left, _ := os.ReadDir(cwd); len(left) != 0 {
		t.Errorf("the save wrote into the directory the console started in: %v", left)
	}
}

// project create and project start print the containers as containers ls shows them, with
// their URLs once they run; -o json gives them as containers ls -o json does, under
// "containers" of the project.
func TestCLIStartPrintsContainers(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "web"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "web", "TESSLATE.md"),
		[]byte("## Development Server\n```bash\n"+selfCommand()+"\n```\n"), 0o644))
	out := c.ok("project", "create", "shown", "--from", src)
	if !regexp.MustCompile(`(?m)^shown +active.*\n\nNAME +KIND +SOURCE +STATUS +PORT +LIVE +URL +UPTIME\nweb +app +web +stopped `).MatchString(out) {
		t.Errorf("project create does not list its containers:\n%s", out)
	}
	out = c.ok("project", "start", "shown")
	var rows []containerRow
	c.json(&rows, "containers", "ls", "shown")
	if len(rows) != 1 || rows[0].URL == "" {
		t.Fatalf("containers ls after the start: %+v", rows)
	}
	if !regexp.MustCompile(`(?m)^web +app +web +running +` + regexp.QuoteMeta(fmt.Sprint(rows[0].Port)) + ` +yes +` + regexp.QuoteMeta(rows[0].URL) + ` `).MatchString(out) {
		t.Errorf("project start does not show web running at %s:\n%s", rows[0].URL, out)
	}
	var started projectRow
	c.json(&started, "project", "start", "shown")
	if started.Status != "active" || len(started.Containers) != 1 || started.Containers[0].URL != rows[0].URL ||
		started.Containers[0].Status != engine.ContainerRunning {
		t.Errorf("project start -o json: %+v", started)
	}
}

// sailtui events on the embedded store says at once, on stderr, that it carries no other
// process's events (it would print nothing, ever), and keeps stdout for events.
func TestCLIEventsOnSQLiteSaysSo(t *testing.T) {
	c := newCLI(t)
	cmd := exec.Command(os.Args[0], "--state-dir", c.state, "events")
	cmd.Env = append(os.Environ(), "SAILTUI_TEST_MAIN=1", "NO_COLOR=1")
	stderr, err := cmd.StderrPipe()
	must(t, err)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		first <- line
	}()
	select {
	case line := <-first:
		if !strings.HasPrefix(line, "note: the embedded SQLite store carries no events between processes") || !strings.Contains(line, "PostgreSQL (DATABASE_URL)") {
			t.Errorf("events on SQLite says %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("events on SQLite said nothing on stderr in 30s")
	}
	must(t, cmd.Process.Signal(os.Interrupt))
	if err := cmd.Wait(); err != nil || stdout.String() != "" {
		t.Errorf("events after an interrupt: %v, stdout %q", err, stdout.String())
	}
}

// sailtui manifests names its own image only for a release (a version number); what make
// build stamps (git describe: a commit, -dirty) is a development build, which nothing builds
// an image of: --image is required there (exit 2), as the README says.
func TestManifestsImageOfDevelopmentBuilds(t *testing.T) {
	was := version
	t.Cleanup(func() { version = was })
	for _, tc := range []struct {
		version, image string // image "": --image required
	}{
		{"dev", ""}, {"e9a209f", ""}, {"e9a209f-dirty", ""}, {"v1.2.0-3-ge9a209f", ""}, {"v1.2.0-3-ge9a209f-dirty", ""},
		{"1.2.0", "sailtui:1.2.0"}, {"v1.2.0", "sailtui:v1.2.0"}, {"v1.2.0-rc.1", "sailtui:v1.2.0-rc.1"},
	} {
		version = tc.version
		root := newRoot()
		var stdout, stderr strings.Builder
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		root.SetArgs([]string{"manifests"})
		err := root.Execute()
		switch {
		case tc.image == "" && (err == nil || exitCodeOf(err) != 2 || !strings.Contains(err.Error(), "development build (version "+tc.version+")") ||
			!strings.Contains(err.Error(), "--image")):
			t.Errorf("version %s: manifests without --image: %v, exit %d, stdout %.80q", tc.version, err, exitCodeOf(err), stdout.String())
		case tc.image != "" && (err != nil || !strings.Contains(stdout.String(), "image: "+tc.image+"\n")):
			t.Errorf("version %s: manifests without --image: %v; want CronJobs on %s, got %.200q", tc.version, err, tc.image, stdout.String())
		}
	}
}

// Before its first start a container shows the port its TESSLATE.md declares, not 0; a
// hibernated one, whose files are in the snapshot, shows none (-). A wake gives each container
// the port it had (local: while that port is free), so the URLs an operator has open work again.
func TestCLILocalPortsDeclaredAndKeptAcrossWake(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "web"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "web", "TESSLATE.md"),
		[]byte("## Development Server\n```bash\n"+selfCommand()+"\n```\n**Port**: 5173\n"), 0o644))
	c.ok("project", "create", "ports", "--from", src)
	port := func() int {
		t.Helper()
		var rows []containerRow
		c.json(&rows, "containers", "ls", "ports")
		if len(rows) != 1 {
			t.Fatalf("containers ls: %+v", rows)
		}
		return rows[0].Port
	}
	if ls := c.ok("containers", "ls", "ports"); !regexp.MustCompile(`\nweb +app +web +stopped +5173 `).MatchString(ls) || port() != 5173 {
		t.Errorf("before the first start, containers ls does not show the declared port 5173:\n%s", ls)
	}
	c.ok("project", "start", "ports")
	first := port()
	if first <= 0 {
		t.Fatalf("a running container's port: %d", first)
	}
	c.ok("project", "hibernate", "ports")
	if ls := c.ok("containers", "ls", "ports"); !regexp.MustCompile(`\nweb +app +web +stopped: hibernated +- `).MatchString(ls) {
		t.Errorf("a hibernated container's port is not -:\n%s", ls)
	}
	c.ok("project", "wake", "ports")
	if again := port(); again != first {
		t.Errorf("the port after the wake is %d, before the hibernation %d", again, first)
	}
}
