package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input gets a clear error that says what was wrong and what to do, and loses nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("project", "create", "solid")
	c.ok("files", "put", "solid", "keep.txt")

	cases := []refusal{
		{"unknown project", nil, []string{"project", "wake", "nope"}, 1, []string{`project "nope" not found`, "projects ls"}},
		{"path escape", nil, []string{"files", "get", "solid", "../sailtui.db"}, 2, []string{"../sailtui.db"}},
		{"absolute path", nil, []string{"files", "get", "solid", "/etc/passwd"}, 2, []string{"/etc/passwd"}},
		{"bad sweep", nil, []string{"--headless", "--sweep=everything"}, 2, []string{"hibernate, purge or all"}},
		{"headless without sweep", nil, []string{"--headless"}, 2, []string{"--sweep=hibernate|purge|all"}},
		{"sweep without headless", nil, []string{"--sweep=hibernate"}, 2, []string{"--headless"}},
		{"zero idle minutes", []string{"K8S_HIBERNATION_IDLE_MINUTES=0"}, []string{"sweep", "hibernate"}, 2, []string{"K8S_HIBERNATION_IDLE_MINUTES", "positive"}},
		{"bad as-of", nil, []string{"sweep", "hibernate", "--as-of", "yesterday"}, 2, []string{"RFC3339"}},
		{"bad mode", []string{"DEPLOYMENT_MODE=mainframe"}, []string{"projects", "ls"}, 2, []string{"local, docker or kubernetes"}},
		{"bad output", nil, []string{"projects", "ls", "-o", "yaml"}, 2, []string{"table or json"}},
		{"exec without dash", nil, []string{"exec", "solid", "app", "ls", "-l"}, 2, []string{"--"}},
		{"rm without yes", nil, []string{"project", "rm", "solid"}, 1, []string{"--yes"}},
		{"bad label", nil, []string{"snapshot", "create", "solid", "--label", "two\nlines"}, 2, []string{"one line"}},
		{"name with an OSC 52", nil, []string{"project", "create", "evil\x1b]52;c;eA==\x07"}, 2, []string{`"evil\x1b]52;c;eA==\a"`, "control or bidi character", "printable text only"}},
		{"name too long", nil, []string{"project", "create", strings.Repeat("n", 100_000)}, 2, []string{"100000 characters long", "at most 200"}},
		{"label with a bidi override", nil, []string{"snapshot", "create", "solid", "--label", "v1\u202e2v"}, 2, []string{`"v1\u202e2v"`, "control or bidi character"}},
		{"bad container name", nil, []string{"container", "add", "solid", "Bad_Name", "--dir", "x"}, 2, []string{"lower-case"}},
		{"container dir escapes", nil, []string{"container", "add", "solid", "web", "--dir", "../../etc"}, 2, []string{"leaves the project"}},
		// A file no snapshot could hold would make every hibernation of the project fail.
		{"path too long to snapshot", nil, []string{"files", "put", "solid", strings.Repeat("deep/", 1000) + "f"}, 2, []string{"path too long", "snapshots hold at most 4095"}},
		// Checked at start in every mode, before a hibernation stops containers and then fails.
		{"prefix ..", []string{"S3_PROJECTS_PREFIX=.."}, []string{"project", "hibernate", "solid"}, 2, []string{"S3_PROJECTS_PREFIX", `".."`}},
		{"prefix empty component", []string{"S3_PROJECTS_PREFIX=a//b"}, []string{"projects", "ls"}, 2, []string{"S3_PROJECTS_PREFIX", "empty component"}},
		{"unreachable database", []string{"DATABASE_URL=postgres://sailtui@127.0.0.1:1/sailtui?sslmode=disable&connect_timeout=5"},
			[]string{"project", "hibernate", "solid"}, 2, []string{"DATABASE_URL", "127.0.0.1:1", "nothing was changed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, c.runIn(nil, tc.env, tc.args...))
		})
	}
	// A credential in a template URL never shows, even when the clone fails.
	r := c.run("container", "add", "solid", "web", "--dir", "web", "--git", "https://bob:s3cr3t-token@127.0.0.1:1/tpl.git")
	if r.code == 0 || strings.Contains(r.stderr+r.stdout, "s3cr3t-token") || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Fatalf("clone of an unreachable template: exit %d, output %q", r.code, r.stderr)
	}
	// Nothing was lost along the way, and the project still snapshots.
	if st := c.project("solid").Status; st != "active" {
		t.Fatalf("solid is %s", st)
	}
	c.ok("snapshot", "create", "solid")
	c.ok("files", "get", "solid", "keep.txt")
}

// A broken TESSLATE.md is refused where it is read: at create (naming the file and its line,
// nothing made), and at start when one is put into a project later; the project stays usable.
func TestBrokenTesslate(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	src := t.TempDir()
	broken := "# App\n\n## Development Server\n\n```bash\nnpm run dev\n"
	must(t, os.MkdirAll(filepath.Join(src, "web"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "web", "TESSLATE.md"), []byte(broken), 0o644))
	refusal{"create", nil, nil, 2, []string{"web/TESSLATE.md line 5", "unterminated code fence", "fix it"}}.
		check(t, c.run("project", "create", "broken", "--from", src))
	if r := c.run("project", "describe", "broken"); r.code == 0 {
		t.Fatalf("a refused create left a project: %s", r.stdout)
	}
	c.ok("project", "create", "broken")
	c.runIn(strings.NewReader(broken), nil, "files", "put", "broken", "TESSLATE.md")
	c.ok("container", "add", "broken", "app", "--dir", ".")
	r := c.run("project", "start", "broken")
	if r.code == 0 || !strings.Contains(r.stderr, "line 5") || !strings.Contains(r.stderr, "fence") {
		t.Fatalf("start with an unterminated fence: exit %d, %q", r.code, r.stderr)
	}
	if st := c.project("broken").Status; st != "active" {
		t.Fatalf("project is %s after a refused start", st)
	}
	// Fixing the file is enough.
	fixed := "# App\n\n## Development Server\n\n```bash\n" + selfCommand() + "\n```\n"
	c.runIn(strings.NewReader(fixed), nil, "files", "put", "broken", "TESSLATE.md")
	c.env = []string{}
	c.ok("project", "start", "broken")
	waitHTTP(t, c.containers("broken")["app"].URL, "")
}

// The CronJob form prints one JSON summary line per sweep and nothing else on stdout.
func TestHeadlessSummary(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "sleepy")
	out := c.headless("--sweep=all", "--dry-run", "--idle", "1ns")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want two summary lines (hibernate, purge), got %q", out)
	}
	for i, want := range []string{"hibernate", "purge"} {
		var rep struct {
			Sweep      string
			DryRun     bool `json:"dry_run"`
			Hibernated []struct{ Slug string }
		}
		if err := json.Unmarshal([]byte(lines[i]), &rep); err != nil {
			t.Fatalf("line %d %q: %v", i, lines[i], err)
		}
		if rep.Sweep != want || !rep.DryRun {
			t.Fatalf("line %d: %+v", i, rep)
		}
		if want == "hibernate" && (len(rep.Hibernated) != 1 || rep.Hibernated[0].Slug != "sleepy") {
			t.Fatalf("dry run would hibernate %+v, want sleepy", rep.Hibernated)
		}
	}
	if st := c.project("sleepy").Status; st != "active" {
		t.Fatalf("dry run changed sleepy to %s", st)
	}
	c.headless("--sweep=hibernate", "--idle", "1ns")
	if st := c.project("sleepy").Status; st != "hibernated" {
		t.Fatalf("headless sweep left sleepy %s", st)
	}
}

// The store is deleted (or replaced) under a state directory with projects in it: a new
// project of the same name must not adopt the old files, and the doctor names them.
func TestCreateRefusesOrphanedStorage(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "old")
	c.ok("files", "put", "old", "secret.txt")
	for _, f := range []string{"sailtui.db", "sailtui.db-wal", "sailtui.db-shm"} {
		_ = os.Remove(filepath.Join(c.state, f))
	}
	r := c.run("project", "create", "old")
	if r.code == 0 || !strings.Contains(r.stderr, "belongs to no project") || !strings.Contains(r.stderr, "doctor") {
		t.Fatalf("create over an orphaned directory: exit %d, %s", r.code, r.stderr)
	}
	r = c.run("doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "orphan-environment") || !strings.Contains(r.stdout, filepath.Join(c.state, "projects", "old")) {
		t.Fatalf("doctor: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(c.state, "projects", "old", "secret.txt")); err != nil {
		t.Fatalf("the old files were touched: %v", err)
	}
}

// A state directory on a read-only mount can still be looked at with --readonly: the store is
// opened read-only instead of failing on its first write; actions are refused as read-only.
func TestReadOnlyStateDir(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "frozen")
	c.ok("files", "put", "frozen", "keep.txt")
	if out, err := exec.Command("mount", "--bind", c.state, c.state).CombinedOutput(); err != nil {
		t.Fatalf("bind mount the state directory: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", c.state).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", c.state, err, out)
		}
	})
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", c.state).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	out := c.ok("--readonly", "projects", "ls")
	if !strings.Contains(out, "frozen") {
		t.Fatalf("--readonly projects ls on a read-only state directory:\n%s", out)
	}
	if got := c.ok("--readonly", "files", "get", "frozen", "keep.txt"); got != "" {
		t.Errorf("files get: %q", got)
	}
	if r := c.run("--readonly", "project", "hibernate", "frozen"); r.code == 0 || !strings.Contains(r.stderr, "read-only") {
		t.Errorf("hibernate with --readonly: exit %d: %s", r.code, r.stderr)
	}
}

// A file name with an escape sequence or a newline cannot draw on the operator's terminal or
// break the table: listings quote it (JSON carries it as it is).
func TestListingsQuoteHostileNames(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "names")
	hostile := "evil\x1b[2J\x1b]0;pwned\x07\nname.txt"
	if r := c.runIn(strings.NewReader("x"), nil, "files", "put", "names", hostile); r.code != 0 {
		t.Fatalf("put: exit %d: %s", r.code, r.stderr)
	}
	out := c.ok("files", "ls", "names")
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `"evil\x1b[2J\x1b]0;pwned\a\nname.txt"`) {
		t.Fatalf("files ls printed the name raw or unquoted:\n%q", out)
	}
	var fis []struct {
		Path string `json:"path"`
	}
	c.json(&fis, "files", "ls", "names")
	found := false
	for _, f := range fis {
		found = found || f.Path == hostile
	}
	if !found {
		t.Errorf("JSON does not carry the name as it is: %+v", fis)
	}
}
