package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
