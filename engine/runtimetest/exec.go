package runtimetest

import (
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var execTests = []test{
	{"ExitCode", testExecExitCode},
	{"StdoutStderr", testExecStdoutStderr},
	{"WorkingDir", testExecWorkingDir},
	{"Env", testExecEnv},
	{"Stdin", testExecStdin},
	{"NotFound", testExecNotFound},
	{"Timeout", testExecTimeout},
	{"TimeoutKillsGroup", testExecTimeoutKillsGroup},
	{"OutputCap", testExecOutputCap},
	{"BadInput", testExecBadInput},
}

func (e *env) exec(c engine.Container, req engine.ExecRequest) engine.ExecResult {
	e.t.Helper()
	if req.Timeout == 0 {
		req.Timeout = patience
	}
	res, err := e.rt.Exec(e.ctx(), e.p, c, req)
	if err != nil {
		e.t.Fatalf("Exec %q: %v", req.Argv, err)
	}
	return res
}

func testExecExitCode(t *testing.T, e *env) {
	c := e.shell("x", "app")
	for _, code := range []int{0, 1, 3, 42} {
		res := e.exec(c, engine.ExecRequest{Argv: []string{"sh", "-c", "exit " + strconv.Itoa(code)}})
		if res.ExitCode != code || res.TimedOut {
			t.Errorf("exit %d: got exit code %d, timed out %v", code, res.ExitCode, res.TimedOut)
		}
	}
}

func testExecStdoutStderr(t *testing.T, e *env) {
	c := e.shell("x", "app")
	res := e.exec(c, engine.ExecRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2; echo out2; exit 5"}})
	if string(res.Stdout) != "out\nout2\n" || string(res.Stderr) != "err\n" || res.ExitCode != 5 {
		t.Errorf("got stdout %q stderr %q exit %d; want %q %q 5", res.Stdout, res.Stderr, res.ExitCode, "out\nout2\n", "err\n")
	}
	if res.Truncated {
		t.Errorf("small output marked truncated")
	}
	// argv goes to the command as given: no shell splits or expands it.
	res = e.exec(c, engine.ExecRequest{Argv: []string{"sh", "-c", `printf '%s|' "$@"`, "sh", "a b", "$HOME", "*"}})
	if got := string(res.Stdout); got != "a b|$HOME|*|" {
		t.Errorf("argv reached the command as %q, want %q", got, "a b|$HOME|*|")
	}
}

func testExecWorkingDir(t *testing.T, e *env) {
	e.write("app/marker.txt", "in app\n")
	e.write("app/sub/marker.txt", "in sub\n")
	c := e.shell("x", "app")
	res := e.exec(c, engine.ExecRequest{Argv: []string{"cat", "marker.txt"}})
	if string(res.Stdout) != "in app\n" {
		t.Errorf("cat marker.txt in the container dir: %q (stderr %q)", res.Stdout, res.Stderr)
	}
	res = e.exec(c, engine.ExecRequest{Argv: []string{"pwd"}})
	if got := path.Base(strings.TrimSpace(string(res.Stdout))); got != "app" {
		t.Errorf("pwd = %q, want a directory named app", res.Stdout)
	}
	res = e.exec(c, engine.ExecRequest{Argv: []string{"cat", "marker.txt"}, Dir: "sub"})
	if string(res.Stdout) != "in sub\n" {
		t.Errorf("cat marker.txt with Dir sub: %q (stderr %q)", res.Stdout, res.Stderr)
	}
	// What a command leaves behind is a project file.
	e.exec(c, engine.ExecRequest{Argv: []string{"sh", "-c", "echo made by exec > made.txt"}, Dir: "sub"})
	if got := e.read("app/sub/made.txt"); got != "made by exec\n" {
		t.Errorf("file written by exec reads %q", got)
	}
}

func testExecEnv(t *testing.T, e *env) {
	c := e.shell("x", "app")
	res := e.exec(c, engine.ExecRequest{
		Argv: []string{"sh", "-c", `echo "$PROJECT_ID|$CONTAINER_NAME|$FOO|${PORT:+port}"`},
		Env:  map[string]string{"FOO": "bar baz"},
	})
	want := e.p.ID + "|x|bar baz|port\n"
	if string(res.Stdout) != want {
		t.Errorf("env seen by exec: %q, want %q", res.Stdout, want)
	}
}

func testExecStdin(t *testing.T, e *env) {
	c := e.shell("x", "app")
	res := e.exec(c, engine.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("hello\nworld\n")})
	if string(res.Stdout) != "hello\nworld\n" {
		t.Errorf("cat with stdin: %q", res.Stdout)
	}
	// Without Stdin a command reading stdin sees its end at once rather than hanging.
	start := time.Now()
	res = e.exec(c, engine.ExecRequest{Argv: []string{"cat"}, Timeout: 10 * time.Second})
	if res.TimedOut || len(res.Stdout) != 0 || res.ExitCode != 0 {
		t.Errorf("cat without stdin: %+v after %v", res, time.Since(start))
	}
}

func testExecNotFound(t *testing.T, e *env) {
	c := e.shell("x", "app")
	res, err := e.rt.Exec(e.ctx(), e.p, c, engine.ExecRequest{Argv: []string{"sailtui-no-such-command-" + e.token}, Timeout: patience})
	if err != nil {
		t.Fatalf("Exec of a missing command: error %v, want exit code 127", err)
	}
	if res.ExitCode != engine.ExitNotFound {
		t.Errorf("Exec of a missing command: exit code %d, want 127 (stderr %q)", res.ExitCode, res.Stderr)
	}
}

func testExecTimeout(t *testing.T, e *env) {
	c := e.shell("x", "app")
	start := time.Now()
	res := e.exec(c, engine.ExecRequest{Argv: []string{"sleep", "60"}, Timeout: 500 * time.Millisecond})
	took := time.Since(start)
	if !res.TimedOut || res.ExitCode != engine.ExitTimedOut {
		t.Errorf("sleep 60 with a 500ms timeout: timed out %v, exit code %d; want true, 124", res.TimedOut, res.ExitCode)
	}
	if took > 10*time.Second {
		t.Errorf("sleep 60 with a 500ms timeout took %v", took)
	}
	// A command that finishes in time is not marked.
	res = e.exec(c, engine.ExecRequest{Argv: []string{"true"}, Timeout: 10 * time.Second})
	if res.TimedOut || res.ExitCode != 0 {
		t.Errorf("true with a 10s timeout: %+v", res)
	}
}

// aliveScript prints "<file> alive" for each pid file whose process still runs (a zombie
// counts as gone: nothing runs any more, it only waits to be reaped).
const aliveScript = `for f in "$@"; do
	p=$(cat "$f") || exit 2
	s=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)
	if [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]; then echo "$f alive"; fi
done`

func testExecTimeoutKillsGroup(t *testing.T, e *env) {
	c := e.shell("x", "app")
	start := time.Now()
	res := e.exec(c, engine.ExecRequest{
		Argv:    []string{"sh", "-c", "sleep 60 & echo $! > child.pid; echo $$ > leader.pid; wait"},
		Timeout: 2 * time.Second,
	})
	if !res.TimedOut || res.ExitCode != engine.ExitTimedOut {
		t.Fatalf("timed-out command: timed out %v, exit code %d; want true, 124", res.TimedOut, res.ExitCode)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("timed-out command took %v", took)
	}
	for _, f := range []string{"app/child.pid", "app/leader.pid"} {
		if strings.TrimSpace(e.read(f)) == "" {
			t.Fatalf("%s is empty: the command did not get to run", f)
		}
	}
	e.waitGone(c, "the timed-out command and its child", "child.pid", "leader.pid")
}

// waitGone waits until none of the processes whose pids pidFiles (in c's directory) hold runs.
func (e *env) waitGone(c engine.Container, what string, pidFiles ...string) {
	e.t.Helper()
	var alive string
	eventually(e.t, what+" to be gone", func() bool {
		r := e.exec(c, engine.ExecRequest{Argv: append([]string{"sh", "-c", aliveScript, "sh"}, pidFiles...)})
		alive = string(r.Stdout) + string(r.Stderr)
		return r.ExitCode == 0 && alive == ""
	}, func() string { return alive })
}

func testExecOutputCap(t *testing.T, e *env) {
	c := e.shell("x", "app")
	res := e.exec(c, engine.ExecRequest{
		Argv:      []string{"sh", "-c", "yes | head -c 100000; yes e | head -c 50000 >&2; echo done >&2"},
		MaxOutput: 1000,
	})
	if len(res.Stdout) != 1000 || len(res.Stderr) != 1000 || !res.Truncated {
		t.Errorf("capped output: %d bytes stdout, %d stderr, truncated %v; want 1000, 1000, true", len(res.Stdout), len(res.Stderr), res.Truncated)
	}
	if res.ExitCode != 0 || res.TimedOut {
		t.Errorf("capped command: exit code %d, timed out %v; the command must run to its end", res.ExitCode, res.TimedOut)
	}
	if !strings.HasPrefix(string(res.Stdout), "y\ny\n") {
		t.Errorf("capped stdout does not keep the beginning: %q", res.Stdout[:min(20, len(res.Stdout))])
	}
	// Under the cap nothing is marked.
	res = e.exec(c, engine.ExecRequest{Argv: []string{"sh", "-c", "yes | head -c 1000"}, MaxOutput: 1000})
	if len(res.Stdout) != 1000 || res.Truncated {
		t.Errorf("output exactly at the cap: %d bytes, truncated %v; want 1000, false", len(res.Stdout), res.Truncated)
	}
}

func testExecBadInput(t *testing.T, e *env) {
	c := e.shell("x", "app")
	_, err := e.rt.Exec(e.ctx(), e.p, c, engine.ExecRequest{})
	wantErr(t, "Exec without argv", err, engine.ErrBadInput)
	for _, dir := range []string{"../x", "/etc", "a/../../x", "a\x00b"} {
		_, err := e.rt.Exec(e.ctx(), e.p, c, engine.ExecRequest{Argv: []string{"pwd"}, Dir: dir})
		wantErr(t, "Exec with Dir "+strconv.Quote(dir), err, engine.ErrBadPath)
	}
}
