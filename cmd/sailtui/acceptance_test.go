package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type jsonContainer struct {
	Name, Directory, Status, URL, Detail string
	Port                                 int
	ExitCode                             *int  `json:"exit_code"`
	Live                                 *bool `json:"live"`
}

type jsonSnapshot struct {
	ID, Label, Type, Status string
	SizeBytes               int64 `json:"size_bytes"`
}

type jsonProject struct {
	ID, Slug, Name, Status string
}

func (c *cli) containers(slug string) map[string]jsonContainer {
	c.t.Helper()
	var cs []jsonContainer
	c.json(&cs, "containers", "ls", slug)
	m := map[string]jsonContainer{}
	for _, x := range cs {
		m[x.Name] = x
	}
	return m
}

func (c *cli) snapshots(slug string, extra ...string) []jsonSnapshot {
	c.t.Helper()
	var s []jsonSnapshot
	c.json(&s, append([]string{"snapshot", "ls", slug}, extra...)...)
	return s
}

func (c *cli) project(slug string) jsonProject {
	c.t.Helper()
	var ps []jsonProject
	c.json(&ps, "projects", "ls")
	for _, p := range ps {
		if p.Slug == slug {
			return p
		}
	}
	c.t.Fatalf("project %s not listed", slug)
	return jsonProject{}
}

// TestAcceptanceLifecycle walks the acceptance path through the command line: create from
// a directory, start, reach it over HTTP, exec, snapshot, hibernate, wake, restore.
func TestAcceptanceLifecycle(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.env = []string{"SAILTUI_DEFAULT_COMMAND=" + selfCommand()}
	src := writeSource(t)

	var p jsonProject
	c.json(&p, "project", "create", "Shop Front", "--from", src)
	if p.Slug != "shop-front" || p.Status != "active" {
		t.Fatalf("create: got %+v", p)
	}
	cs := c.containers("shop-front")
	if len(cs) != 2 || cs["app"].Directory != "." || cs["web"].Directory != "web" {
		t.Fatalf("containers from TESSLATE.md dirs: %+v", cs)
	}
	c.ok("project", "start", "shop-front")
	cs = c.containers("shop-front")
	for _, name := range []string{"app", "web"} {
		if cs[name].Status != "running" || cs[name].URL == "" {
			t.Fatalf("%s after start: %+v", name, cs[name])
		}
	}
	waitHTTP(t, cs["app"].URL, "root app")
	waitHTTP(t, cs["web"].URL, "web container")
	if cs["app"].Port == cs["web"].Port {
		t.Fatalf("two containers share port %d", cs["app"].Port)
	}

	// exec runs in the container's directory and passes the exit code through.
	c.ok("exec", "shop-front", "web", "--", "sh", "-c", "pwd; echo one > note.txt")
	if r := c.run("exec", "shop-front", "web", "--", "sh", "-c", "exit 7"); r.code != 7 {
		t.Fatalf("exec exit code: got %d want 7 (%s)", r.code, r.stderr)
	}
	if got := c.ok("files", "get", "shop-front", "web/note.txt"); got != "one\n" {
		t.Fatalf("exec wrote %q", got)
	}

	var manual jsonSnapshot
	c.json(&manual, "snapshot", "create", "shop-front", "--label", "with note one")
	if manual.Status != "ready" || manual.Type != "manual" || manual.SizeBytes == 0 {
		t.Fatalf("manual snapshot: %+v", manual)
	}
	c.ok("exec", "shop-front", "web", "--", "sh", "-c", "echo two > after.txt")

	projDir := filepath.Join(c.state, "projects", "shop-front")
	before := treeDigest(t, projDir)
	c.ok("project", "hibernate", "shop-front")
	if _, err := os.Stat(projDir); !os.IsNotExist(err) {
		t.Fatalf("project directory still there after hibernate: %v", err)
	}
	if got := c.project("shop-front").Status; got != "hibernated" {
		t.Fatalf("status after hibernate %s", got)
	}
	archives, _ := filepath.Glob(filepath.Join(c.state, "objects", "projects", "*", "*", "hibernation-*.tar.zst"))
	if len(archives) != 1 {
		t.Fatalf("want one hibernation archive, got %v", archives)
	}

	c.ok("project", "wake", "shop-front")
	if d := diffDigests(before, treeDigest(t, projDir)); d != "" {
		t.Fatalf("tree after wake differs:\n%s", d)
	}
	cs = c.containers("shop-front")
	waitHTTP(t, cs["web"].URL, "web container")

	// Restore the manual snapshot: after.txt goes, and a safety snapshot keeps it.
	r := c.run("snapshot", "restore", "shop-front", manual.ID)
	if r.code == 0 || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("restore without --yes off a terminal must refuse and say --yes: %+v", r)
	}
	c.ok("snapshot", "restore", "shop-front", manual.ID, "--yes")
	if _, err := os.Stat(filepath.Join(projDir, "web/after.txt")); !os.IsNotExist(err) {
		t.Fatalf("after.txt survived the restore: %v", err)
	}
	if got := c.ok("files", "get", "shop-front", "web/note.txt"); got != "one\n" {
		t.Fatalf("note.txt after restore %q", got)
	}
	var safety *jsonSnapshot
	for _, s := range c.snapshots("shop-front") {
		if s.Type == "safety" {
			safety = &s
		}
	}
	if safety == nil || safety.Status != "ready" {
		t.Fatalf("no ready safety snapshot after restore: %+v", c.snapshots("shop-front"))
	}
	// Undo the restore through the safety snapshot.
	c.ok("snapshot", "restore", "shop-front", safety.ID, "--yes")
	if got := c.ok("files", "get", "shop-front", "web/after.txt"); got != "two\n" {
		t.Fatalf("undo via safety snapshot: after.txt = %q", got)
	}
	waitHTTP(t, c.containers("shop-front")["web"].URL, "web container")
}

// TestTimelineLimit: the sixth manual snapshot is refused with the limit and the way out.
func TestTimelineLimit(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("project", "create", "limits")
	c.ok("files", "put", "limits", "a.txt")
	var ids []string
	for i := range 5 {
		var s jsonSnapshot
		c.json(&s, "snapshot", "create", "limits", "--label", "n"+string(rune('0'+i)))
		ids = append(ids, s.ID)
	}
	r := c.run("snapshot", "create", "limits")
	if r.code == 0 {
		t.Fatal("sixth manual snapshot was accepted")
	}
	for _, want := range []string{"5 manual snapshots", "snapshot rm limits"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("refusal %q does not mention %q", r.stderr, want)
		}
	}
	if n := len(c.snapshots("limits")); n != 5 {
		t.Fatalf("timeline has %d snapshots after refusal, want 5", n)
	}
	c.ok("snapshot", "rm", "limits", ids[0], "--yes")
	c.ok("snapshot", "create", "limits")
	if n := len(c.snapshots("limits")); n != 5 {
		t.Fatalf("timeline has %d after freeing a slot and taking one, want 5", n)
	}
	if n := len(c.snapshots("limits", "--all")); n != 6 {
		t.Fatalf("with --all the deleted one shows too: got %d, want 6", n)
	}
}

// TestSweepDryRun lists what it would hibernate and changes nothing.
func TestSweepDryRun(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("project", "create", "idle-one")
	c.ok("project", "create", "idle-two")
	out := c.ok("sweep", "hibernate", "--dry-run", "--idle", "1ns", "-o", "json")
	for _, want := range []string{`"dry_run":true`, "idle-one", "idle-two"} {
		if !strings.Contains(out, want) {
			t.Fatalf("dry run summary %s lacks %s", out, want)
		}
	}
	for _, slug := range []string{"idle-one", "idle-two"} {
		if st := c.project(slug).Status; st != "active" {
			t.Fatalf("dry run changed %s to %s", slug, st)
		}
	}
	out = c.ok("sweep", "hibernate", "--idle", "1ns", "-o", "json")
	if !strings.Contains(out, `"lock":"acquired"`) {
		t.Fatalf("real sweep summary: %s", out)
	}
	for _, slug := range []string{"idle-one", "idle-two"} {
		if st := c.project(slug).Status; st != "hibernated" {
			t.Fatalf("sweep left %s %s", slug, st)
		}
	}
}

// Two idle tiers: past the stop timeout the containers stop and the files stay (a start is
// instant); past the idle timeout the project is hibernated.
func TestTwoTierIdle(t *testing.T) {
	c := newCLI(t)
	c.env = []string{"SAILTUI_DEFAULT_COMMAND=" + selfCommand()}
	c.ok("project", "create", "tiers", "--from", writeSource(t))
	c.ok("project", "create", "cold")
	c.ok("project", "start", "tiers")
	dir := filepath.Join(c.state, "projects", "tiers")
	before := treeDigest(t, dir)

	out := c.ok("sweep", "hibernate", "--idle", "1h", "--stop-idle", "1ns", "--dry-run", "-o", "json")
	if !strings.Contains(out, `"stopped":[{"slug":"tiers"`) {
		t.Fatalf("dry run should name tiers (running) and not cold (nothing running) under stopped: %s", out)
	}
	for _, ct := range c.containers("tiers") {
		if ct.Status != "running" {
			t.Fatalf("the dry run stopped %s", ct.Name)
		}
	}
	out = c.ok("sweep", "hibernate", "--idle", "1h", "--stop-idle", "1ns", "-o", "json")
	if !strings.Contains(out, `"stopped":[{"slug":"tiers"`) || !strings.Contains(out, `"hibernated":[]`) {
		t.Fatalf("first tier: %s", out)
	}
	for _, ct := range c.containers("tiers") {
		if ct.Status != "stopped" {
			t.Fatalf("%s is %s after the first tier", ct.Name, ct.Status)
		}
	}
	if st := c.project("tiers").Status; st != "active" {
		t.Fatalf("first tier changed the project to %s", st)
	}
	if d := diffDigests(before, treeDigest(t, dir)); d != "" {
		t.Fatalf("first tier touched files:\n%s", d)
	}
	c.ok("sweep", "hibernate", "--idle", "1ns", "--stop-idle", "1ns")
	if st := c.project("tiers").Status; st != "hibernated" {
		t.Fatalf("second tier left tiers %s", st)
	}
}
