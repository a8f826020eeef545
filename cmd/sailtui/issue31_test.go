package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Issue 31, item 2: in local mode piped input reaches the command (it was dropped, exit 0), and
// a command that reads nothing still works, with input or without.
func TestCLIExecPipedInputLocal(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "piped")
	c.ok("container", "add", "piped", "web", "--dir", ".", "--command", "sleep 600")
	c.ok("project", "start", "piped")

	r := c.runIn(strings.NewReader("a\nb\n"), nil, "exec", "piped", "web", "--", "cat")
	if r.code != 0 || r.stdout != "a\nb\n" {
		t.Fatalf("printf 'a\\nb\\n' | exec -- cat: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = c.runIn(strings.NewReader("ignored\n"), nil, "exec", "piped", "web", "--", "echo", "hi")
	if r.code != 0 || r.stdout != "hi\n" {
		t.Fatalf("exec of a command that reads nothing, with input: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := c.ok("exec", "piped", "web", "--", "echo", "hi"); got != "hi\n" {
		t.Fatalf("exec without input: %q", got)
	}
	if r := c.runIn(strings.NewReader("x\n"), nil, "exec", "piped", "web", "--", "no-such-command"); r.code != 127 || !strings.Contains(r.stderr, "no-such-command: command not found") {
		t.Fatalf("exec of a missing command: exit %d, stderr %q", r.code, r.stderr)
	}
	// -o json passes it too, the output in the JSON.
	r = c.runIn(strings.NewReader("x\n"), nil, "exec", "-o", "json", "piped", "web", "--", "cat")
	var j struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); r.code != 0 || err != nil || j.Stdout != "x\n" || j.ExitCode != 0 {
		t.Fatalf("exec -o json with input: exit %d, %q (%v), stderr %q", r.code, r.stdout, err, r.stderr)
	}
}

// What counts as input: a pipe or a file is, the null device (a cron job's stdin, < /dev/null)
// is not, so a run without input works on a runtime that cannot pass it.
func TestExecInput(t *testing.T) {
	null, err := os.Open(os.DevNull)
	must(t, err)
	defer null.Close()
	if in := execInput(null, false); in != nil {
		t.Errorf("the null device is input: %v", in)
	}
	if in := execInput(null, true); in != nil {
		t.Errorf("the null device with -i is input: %v", in)
	}
	pr, pw, err := os.Pipe()
	must(t, err)
	defer pr.Close()
	defer pw.Close()
	if in := execInput(pr, false); in != pr {
		t.Errorf("a pipe is not input: %v", in)
	}
	file, err := os.Create(filepath.Join(t.TempDir(), "dump.sql"))
	must(t, err)
	defer file.Close()
	if in := execInput(file, false); in != file {
		t.Errorf("a file is not input: %v", in)
	}
	r := strings.NewReader("x")
	if in := execInput(r, false); in != r {
		t.Errorf("a reader is not input: %v", in)
	}
}

// Issue 31, item 3: connect wires a container's exports into another's environment at its
// next start, containers ls and project describe show it, disconnect takes it out, and bad
// input is refused with exit 2, changing nothing.
func TestCLIConnect(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "wired")
	c.ok("container", "add", "wired", "api", "--dir", ".", "--command", "exec sleep 600",
		"--export", "GREETING=hi there", "--export", "API_HOST=${HOST}")
	c.ok("container", "add", "wired", "web", "--dir", ".", "--command", "env > env.txt; exec sleep 600")
	c.ok("project", "start", "wired")
	env := func() string {
		t.Helper()
		var got string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if r := c.run("files", "get", "wired", "env.txt"); r.code == 0 && r.stdout != "" {
				got = r.stdout
				break
			}
		}
		return got
	}
	restartWeb := func() string {
		t.Helper()
		c.ok("container", "stop", "wired", "web")
		c.ok("exec", "wired", "web", "--", "rm", "-f", "env.txt")
		c.ok("container", "start", "wired", "web")
		return env()
	}
	if got := env(); got == "" || strings.Contains(got, "GREETING=") {
		t.Fatalf("web's environment before any connection: %q", got)
	}

	out := c.ok("connect", "wired", "web", "api")
	for _, want := range []string{"connected wired/web to api", "API_HOST, GREETING", "next start"} {
		if !strings.Contains(out, want) {
			t.Errorf("connect says %q; want it to mention %q", out, want)
		}
	}
	ls := c.ok("containers", "ls", "wired")
	if !strings.Contains(ls, "CONNECTION") || !regexp.MustCompile(`web → api +API_HOST, GREETING\n`).MatchString(ls) {
		t.Errorf("containers ls does not show the connection and what it gives:\n%s", ls)
	}
	var rows []containerRow
	c.json(&rows, "containers", "ls", "wired")
	for _, r := range rows {
		if want := map[string]string{"web": "[api]", "api": "[]"}[r.Name]; fmt.Sprint(r.ConnectsTo) != want {
			t.Errorf("containers ls -o json: %s connects to %v, want %s", r.Name, r.ConnectsTo, want)
		}
	}
	if d := c.ok("project", "describe", "wired"); !strings.Contains(d, "web → api (API_HOST, GREETING)") {
		t.Errorf("project describe does not show the connection:\n%s", d)
	}
	if got := restartWeb(); !strings.Contains(got, "GREETING=hi there\n") || !strings.Contains(got, "API_HOST=") {
		t.Fatalf("web's environment at its start after connect lacks api's exports:\n%s", got)
	}

	for _, rf := range []refusal{
		{"again", nil, []string{"connect", "wired", "web", "api"}, 2, []string{"already connected", "containers ls wired"}},
		{"itself", nil, []string{"connect", "wired", "web", "web"}, 2, []string{"web to itself"}},
		{"unknown to", nil, []string{"connect", "wired", "web", "nope"}, 2, []string{`no container "nope"`, "container add"}},
		{"unknown from", nil, []string{"connect", "wired", "nope", "api"}, 2, []string{`no container "nope"`}},
		{"not connected", nil, []string{"disconnect", "wired", "api", "web"}, 2, []string{"api is not connected to web", "connected to: none"}},
		{"missing arg", nil, []string{"connect", "wired", "web"}, 2, nil},
	} {
		t.Run(rf.name, func(t *testing.T) { rf.check(t, c.run(rf.args...)) })
	}
	c.json(&rows, "containers", "ls", "wired")
	for _, r := range rows {
		if want := map[string]string{"web": "[api]", "api": "[]"}[r.Name]; fmt.Sprint(r.ConnectsTo) != want {
			t.Errorf("after the refusals: %s connects to %v, want %s", r.Name, r.ConnectsTo, want)
		}
	}

	out = c.ok("disconnect", "wired", "web", "api")
	if !strings.Contains(out, "disconnected wired/web from api") || !strings.Contains(out, "next start") {
		t.Errorf("disconnect says %q", out)
	}
	if ls := c.ok("containers", "ls", "wired"); strings.Contains(ls, "CONNECTION") || strings.Contains(ls, "→") {
		t.Errorf("containers ls after disconnect still shows a connection:\n%s", ls)
	}
	if got := restartWeb(); got == "" || strings.Contains(got, "GREETING=") {
		t.Fatalf("web's environment at its start after disconnect: %q", got)
	}
}

// A connection .tesslate/config.json declares comes back at every start (the file is read
// again): disconnect refuses it, saying where to take it out, rather than seem to work.
func TestCLIDisconnectDeclaredInConfig(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, ".tesslate"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, ".tesslate", "config.json"), []byte(`{
  "apps": {"web": {"start": "exec sleep 600"}, "api": {"start": "exec sleep 600", "exports": {"API": "x"}}},
  "connections": [{"from": "web", "to": "api"}]
}`), 0o644))
	c.ok("project", "create", "declared", "--from", src)
	refusal{"declared", nil, []string{"disconnect", "declared", "web", "api"}, 2,
		[]string{".tesslate/config.json declares this connection", `"connections"`, "files put"}}.
		check(t, c.run("disconnect", "declared", "web", "api"))
	if ls := c.ok("containers", "ls", "declared"); !strings.Contains(ls, "web → api") {
		t.Errorf("the refused disconnect removed the connection:\n%s", ls)
	}
}

// Issue 31, item 6: a CSI driver reports a snapshot's volume capacity (restoreSize), not the
// data it holds. The timeline labels it as volume, JSON keeps it apart from size_bytes and
// total_bytes, and a purge does not count it as bytes freed.
func TestCLISnapshotCapacityIsNotData(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "vol")
	obs := openTest(t, c.state, "observer")
	ctx := t.Context()
	p, err := obs.eng.Project(ctx, "vol")
	if err != nil {
		t.Fatal(err)
	}
	taken := time.Now().Add(-40 * 24 * time.Hour)
	snap := engine.Snapshot{ID: "csi-made", ProjectID: p.ID, Owner: p.Owner, Type: engine.SnapshotManual, Label: "on csi",
		Status: engine.SnapshotReady, CreatedAt: taken, ReadyAt: taken, CapacityBytes: 5 << 30, Backend: "csi",
		Location: "proj-x/snap-csi-made/content-x"}
	if err := obs.store.InsertSnapshot(ctx, snap, 0, engine.Hold{}); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("snapshot", "ls", "vol"); !strings.Contains(out, "5.0 GiB volume") {
		t.Errorf("snapshot ls shows a capacity as if it were data:\n%s", out)
	}
	var rows []struct {
		SizeBytes          int64 `json:"size_bytes"`
		TotalBytes         int64 `json:"total_bytes"`
		TotalCapacityBytes int64 `json:"total_capacity_bytes"`
	}
	c.json(&rows, "snapshot", "ls", "vol")
	if len(rows) != 1 || rows[0].SizeBytes != 0 || rows[0].TotalBytes != 0 || rows[0].TotalCapacityBytes != 5<<30 {
		t.Errorf("snapshot ls -o json: %+v, want sizes 0 and total_capacity_bytes %d", rows, 5<<30)
	}
	snap.Status, snap.DeletedAt = engine.SnapshotDeleted, taken.Add(time.Hour)
	if err := obs.store.UpdateSnapshot(ctx, snap, engine.Hold{}); err != nil {
		t.Fatal(err)
	}
	out := c.ok("sweep", "purge", "--dry-run")
	if !regexp.MustCompile(`would free +- *\n`).MatchString(out) || !strings.Contains(out, "5.0 GiB of volume capacity") {
		t.Errorf("sweep purge --dry-run counts a capacity as freed data, or says nothing of it:\n%s", out)
	}
	var rep struct {
		FreedBytes         int64 `json:"freed_bytes"`
		FreedCapacityBytes int64 `json:"freed_capacity_bytes"`
	}
	c.json(&rep, "sweep", "purge", "--dry-run")
	if rep.FreedBytes != 0 || rep.FreedCapacityBytes != 5<<30 {
		t.Errorf("sweep purge --dry-run -o json: %+v, want freed_bytes 0, freed_capacity_bytes %d", rep, 5<<30)
	}
}
