package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// logs -o json prints one JSON object per log line, as every command's -o json promises.
func TestCLILogsJSON(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "talky")
	c.ok("container", "add", "talky", "say", "--dir", ".", "--command", `printf 'first line\n{"not":"json of ours"}\n'; sleep 600`)
	c.ok("project", "start", "talky")
	var out string
	for deadline := time.Now().Add(20 * time.Second); ; {
		out = c.ok("logs", "talky", "say", "-o", "json")
		if strings.Count(out, "\n") >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var lines []logLine
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("logs -o json printed a line that is not JSON: %q (%v)\nall: %s", sc.Text(), err, out)
		}
		if !engine.IsLogMarker(l.Line) { // — started —
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 || lines[0].Project != "talky" || lines[0].Container != "say" || lines[0].Line != "first line" || lines[1].Line != `{"not":"json of ours"}` {
		t.Fatalf("logs -o json: %+v", lines)
	}
	if at := lines[0].Time; at.IsZero() || time.Since(at) > time.Minute || time.Since(at) < 0 {
		t.Errorf("logs -o json: line time %v, want when it was written (just now)", at)
	}
}

// Every list of a sweep summary is a list: [] when empty, never null, in either sweep.
func TestCLISweepJSONLists(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "calm")
	for _, args := range [][]string{
		{"sweep", "hibernate", "--dry-run", "-o", "json"},
		{"sweep", "purge", "-o", "json"},
	} {
		out := c.ok(args...)
		if strings.Contains(out, "null") {
			t.Errorf("%s: %s", strings.Join(args, " "), out)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
		for _, k := range []string{"hibernated", "stopped", "recovered", "skipped", "failed", "deferred", "purged"} {
			if _, ok := rep[k].([]any); !ok {
				t.Errorf("%s: %q is %#v, want a list", strings.Join(args, " "), k, rep[k])
			}
		}
	}
}

// container add refuses a directory the project does not have (its start could only fail),
// says how to go on, and --mkdir makes it.
func TestCLIContainerAddMissingDir(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "tree")
	c.runIn(strings.NewReader("x"), nil, "files", "put", "tree", "there/index.html")
	refusal{"missing dir", nil, []string{"container", "add", "tree", "web", "--dir", "nowhere"}, 2,
		[]string{`"nowhere" does not exist in project tree`, "files put tree nowhere/", "--mkdir"}}.
		check(t, c.run("container", "add", "tree", "web", "--dir", "nowhere"))
	if cs := c.containers("tree"); len(cs) != 0 {
		t.Fatalf("a refused container was added: %+v", cs)
	}
	refusal{"a file", nil, nil, 2, []string{`"there/index.html"`, "must be a directory"}}.
		check(t, c.run("container", "add", "tree", "web", "--dir", "there/index.html"))
	c.ok("container", "add", "tree", "web", "--dir", "there")
	c.ok("container", "add", "tree", "api", "--dir", "made/here", "--mkdir")
	if _, err := os.Stat(filepath.Join(c.state, "projects", "tree", "made", "here")); err != nil {
		t.Fatalf("--mkdir: %v", err)
	}
	if cs := c.containers("tree"); len(cs) != 2 {
		t.Fatalf("containers: %+v", cs)
	}
}

// Argument errors say what the command takes; an unknown command gets "did you mean"; a
// read-only refusal says how to lift it. All are bad input (exit 2) but the last (exit 1).
func TestCLIArgumentErrors(t *testing.T) {
	c := newCLI(t)
	for _, rf := range []refusal{
		{"sweep without a kind", nil, []string{"sweep"}, 2, []string{"sailtui sweep takes hibernate|purge", "got no arguments", "sailtui sweep --help"}},
		{"label without id", nil, []string{"snapshot", "label", "shop"}, 2, []string{"sailtui snapshot label takes SLUG SNAPSHOT --label TEXT", `got 1 argument ("shop")`}},
		{"logs with one", nil, []string{"logs", "shop"}, 2, []string{"sailtui logs takes SLUG CONTAINER"}},
		{"config with one", nil, []string{"config", "x"}, 2, []string{"sailtui config takes no arguments"}},
		{"unknown top command", nil, []string{"projcts"}, 2, []string{`unknown command "projcts"`, "did you mean sailtui project or projects?"}},
		{"unknown subcommand", nil, []string{"snapshot", "lss", "shop"}, 2, []string{`unknown command "lss" for sailtui snapshot`, "did you mean sailtui snapshot ls?", "create, label, ls"}},
		{"unknown, nothing near", nil, []string{"project", "zzzzzz"}, 2, []string{`unknown command "zzzzzz"`, "its commands: create"}},
		{"read-only flag", nil, []string{"--readonly", "project", "create", "x"}, 1, []string{"read-only", "run the command without it"}},
		{"read-only env", []string{"SAILTUI_READONLY=true"}, []string{"project", "create", "x"}, 1, []string{"read-only", "SAILTUI_READONLY=true is set", "unset it"}},
	} {
		t.Run(rf.name, func(t *testing.T) { rf.check(t, c.runIn(nil, rf.env, rf.args...)) })
	}
	// A group alone still shows its help.
	if out := c.ok("snapshot"); !strings.Contains(out, "Available Commands") {
		t.Fatalf("snapshot alone: %s", out)
	}
}

// Snapshot commands take a label or a unique ID prefix as well as the ID; an ambiguous one
// lists the candidates and changes nothing.
func TestCLISnapshotByLabelOrPrefix(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("project", "create", "shop")
	snap := func(args ...string) snapshotRow {
		t.Helper()
		var r snapshotRow
		if err := json.Unmarshal([]byte(c.ok(append(args, "-o", "json")...)), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	c.runIn(strings.NewReader("v1"), nil, "files", "put", "shop", "f.txt")
	good := snap("snapshot", "create", "shop", "--label", "known good")
	c.runIn(strings.NewReader("v2"), nil, "files", "put", "shop", "f.txt")
	a := snap("snapshot", "create", "shop", "--label", "twin")
	b := snap("snapshot", "create", "shop", "--label", "twin")

	refusal{"ambiguous", nil, nil, 2, []string{`"twin" of shop is ambiguous`, a.ID, b.ID}}.check(t, c.run("snapshot", "rm", "shop", "twin", "--yes"))
	refusal{"ambiguous prefix", nil, nil, 2, []string{"ambiguous", good.ID, a.ID, b.ID}}.check(t, c.run("snapshot", "restore", "shop", "manual-", "--yes"))
	refusal{"unknown", nil, nil, 1, []string{`no snapshot "gone"`, "snapshot ls shop --all"}}.check(t, c.run("snapshot", "label", "shop", "gone", "--label", "x"))
	// By a prefix only it has, and by label.
	if r := snap("snapshot", "label", "shop", a.ID[:len(a.ID)-1], "--label", "first twin"); r.ID != a.ID || r.Label != "first twin" {
		t.Fatalf("label by prefix: %+v", r)
	}
	if r := snap("snapshot", "rm", "shop", "twin", "--yes"); r.ID != b.ID || r.Status != "deleted" {
		t.Fatalf("rm by label: %+v", r)
	}
	c.ok("snapshot", "restore", "shop", "known good", "--yes")
	if got := c.ok("files", "get", "shop", "f.txt"); got != "v1" {
		t.Fatalf("restore by label: f.txt is %q", got)
	}
}

// sailtui config shows each setting's effective value (a default as what it amounts to, never
// 0, 0s or blank) and where it came from: default, env or flag (a flag over the environment).
func TestCLIConfigSources(t *testing.T) {
	c := newCLI(t)
	var rows []struct{ Env, Value, Source string }
	out := c.runIn(nil, []string{"SAILTUI_USE_WAIT=45s", "SAILTUI_READONLY=false",
		"SAILTUI_DB_POOL_SIZE=", "SAILTUI_DB_STATEMENT_TIMEOUT=", "K8S_PVC_SIZE=", "K8S_INGRESS_CLASS=", "K8S_FILE_MANAGER_IMAGE=", "DEVSERVER_IMAGE=img:1"},
		"config", "--readonly", "-o", "json")
	if out.code != 0 {
		t.Fatalf("config: exit %d: %s", out.code, out.stderr)
	}
	must(t, json.Unmarshal([]byte(out.stdout), &rows))
	got := map[string][2]string{}
	for _, r := range rows {
		got[r.Env] = [2]string{r.Value, r.Source}
	}
	for env, want := range map[string][2]string{
		"SAILTUI_STATE_DIR":            {c.state, "flag"},
		"SAILTUI_READONLY":             {"true", "flag"},
		"SAILTUI_USE_WAIT":             {"45s", "env"},
		"DEVSERVER_IMAGE":              {"img:1", "env"},
		"K8S_FILE_MANAGER_IMAGE":       {"img:1", "default"},
		"SAILTUI_DB_STATEMENT_TIMEOUT": {"30s", "default"},
		"K8S_PVC_SIZE":                 {"5Gi", "default"},
		"K8S_INGRESS_CLASS":            {"nginx", "default"},
		"SAILTUI_OP_TIMEOUT":           {"10m0s", "default"},
	} {
		if got[env] != want {
			t.Errorf("%s: value %q from %q, want %q from %q", env, got[env][0], got[env][1], want[0], want[1])
		}
	}
	if v := got["SAILTUI_DB_POOL_SIZE"]; v[0] == "" || v[0] == "0" || strings.Contains(v[0], "max") || v[1] != "default" {
		t.Errorf("SAILTUI_DB_POOL_SIZE: %q from %q, want the number max(4, CPUs) gives here", v[0], v[1])
	}
	if table := c.ok("config"); !strings.Contains(table, "SOURCE") {
		t.Errorf("config table has no SOURCE column:\n%s", table)
	}
}

// A deleted snapshot comes back with snapshot undelete; a removed project with project
// undelete (hibernated on its final snapshot), and a wake restores its files.
func TestCLIUndelete(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.runIn(strings.NewReader("v1"), nil, "files", "put", "shop", "f.txt")
	c.ok("snapshot", "create", "shop", "--label", "one")
	c.ok("snapshot", "rm", "shop", "one", "--yes")
	if out := c.ok("snapshot", "ls", "shop", "--all"); !strings.Contains(out, "KEPT UNTIL") || !strings.Contains(out, "deleted") {
		t.Errorf("snapshot ls --all does not say until when a deleted one is kept:\n%s", out)
	}
	var s snapshotRow
	must(t, json.Unmarshal([]byte(c.ok("snapshot", "undelete", "shop", "one", "-o", "json")), &s))
	if s.Label != "one" || s.Status != "ready" || s.DeletedAt != "" {
		t.Fatalf("snapshot undelete: %+v", s)
	}
	refusal{"not deleted", nil, nil, 1, []string{"is ready, not deleted"}}.check(t, c.run("snapshot", "undelete", "shop", "one"))
	refusal{"unknown", nil, nil, 1, []string{`no snapshot "two"`}}.check(t, c.run("snapshot", "undelete", "shop", "two"))

	if out := c.ok("project", "rm", "shop", "--yes"); !strings.Contains(out, "sailtui project undelete shop") {
		t.Errorf("project rm does not say how to undo it: %s", out)
	}
	refusal{"deleted project's snapshot", nil, nil, 1, []string{"project undelete shop"}}.check(t, c.run("snapshot", "undelete", "shop", "one"))
	if out := c.ok("project", "undelete", "shop"); !strings.Contains(out, "hibernated") || !strings.Contains(out, "project wake shop") {
		t.Fatalf("project undelete: %s", out)
	}
	refusal{"not deleted", nil, nil, 1, []string{"not deleted"}}.check(t, c.run("project", "undelete", "shop"))
	c.ok("project", "wake", "shop")
	if got := c.ok("files", "get", "shop", "f.txt"); got != "v1" {
		t.Fatalf("after undelete and wake f.txt is %q", got)
	}
	// Its other snapshots stay deleted until each is brought back.
	c.ok("snapshot", "undelete", "shop", "one")
}

// On the real binary in a terminal: the timeline shows a deleted snapshot on a and brings it
// back on u; a read-only console answers a blocked key with why instead of ignoring it.
func TestConsoleUndeleteAndReadOnlyKeys(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.ok("snapshot", "create", "shop", "--label", "keep me")
	c.ok("snapshot", "rm", "shop", "keep me", "--yes")

	ro := startConsole(t, c, "--readonly")
	ro.waitFor("shop", "READ-ONLY")
	ro.keys("h")
	ro.waitFor("hibernate: the console is read-only", "without it")
	ro.keys("q")

	s := startConsole(t, c)
	s.waitFor("shop", "active")
	s.keys("t")
	s.waitFor("Projects › shop › Timeline", "manual 0/5", "no snapshots yet")
	s.keys("a")
	s.waitFor("keep me", "deleted", "deleted shown", "u undelete")
	s.keys("u")
	s.waitFor("is back in the timeline of shop", "manual 1/5")
	var rows []snapshotRow
	c.json(&rows, "snapshot", "ls", "shop")
	if len(rows) != 1 || rows[0].Label != "keep me" || rows[0].Status != "ready" {
		t.Fatalf("after u in the console: %+v", rows)
	}
}
