package runtimetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// The terminal exec (engine.ExecTerminal) is part of the contract: a console's shell in a
// container works the same on every runtime. What it assumes besides the rest: stty.
var terminalTests = []test{
	{"Shell", testTerminalShell},
	{"Resize", testTerminalResize},
	{"NoInput", testTerminalNoInput},
	{"NotFound", testTerminalNotFound},
	{"Timeout", testTerminalTimeout},
	{"CancelKillsJobs", testTerminalCancelKillsJobs},
	{"LeftBehind", testTerminalLeftBehind},
}

// SyncBuffer collects what something writes (a terminal exec, a program's renderer) for a
// test that reads it while it is being written.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *SyncBuffer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// String is what was written so far.
func (o *SyncBuffer) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// session is one running terminal exec.
type session struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *SyncBuffer
	resize chan engine.TermSize
	cancel context.CancelFunc
	done   chan struct{}
	res    engine.ExecResult
	err    error
}

// terminal starts req on a terminal of size in c; with input the test types through s.typeln.
func (e *env) terminal(c engine.Container, req engine.ExecRequest, size engine.TermSize, input bool) *session {
	e.t.Helper()
	tr, ok := e.rt.(engine.ExecTerminal)
	if !ok {
		e.t.Fatalf("the %s runtime offers no engine.ExecTerminal: the console's shell would not work there", e.rt.Mode())
	}
	ctx, cancel := context.WithCancel(e.ctx())
	s := &session{t: e.t, out: &SyncBuffer{}, resize: make(chan engine.TermSize, 4), cancel: cancel, done: make(chan struct{})}
	term := engine.Terminal{Out: s.out, Size: size, Resize: s.resize}
	if input {
		var r *io.PipeReader
		r, s.in = io.Pipe()
		term.In = r
		e.t.Cleanup(func() { _ = r.Close() })
	}
	go func() {
		defer close(s.done)
		s.res, s.err = tr.ExecTerminal(ctx, e.p, c, req, term)
	}()
	e.t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// typeln types line and a return.
func (s *session) typeln(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\r"); err != nil {
		s.t.Fatalf("type %q: %v (output so far %q)", line, err, s.out.String())
	}
}

// waitFor waits until the terminal showed want.
func (s *session) waitFor(want string) {
	s.t.Helper()
	eventually(s.t, fmt.Sprintf("%q on the terminal", want), func() bool {
		return strings.Contains(s.out.String(), want)
	}, func() string { return fmt.Sprintf("the terminal shows %q", s.out.String()) })
}

// wait waits for the exec to end and returns its result.
func (s *session) wait() (engine.ExecResult, error) {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(patience):
		s.t.Fatalf("the terminal exec did not end within %v; it shows %q", patience, s.out.String())
	}
	return s.res, s.err
}

func testTerminalShell(t *testing.T, e *env) {
	c := e.shell("x", "app")
	s := e.terminal(c, engine.ExecRequest{Argv: []string{"sh"}}, engine.TermSize{Cols: 100, Rows: 30}, true)
	// What is echoed is the command as typed; only its output has the computed number.
	s.typeln(`test -t 0 && test -t 1 && test -t 2 && echo "tty-$((6*7))"`)
	s.waitFor("tty-42")
	s.typeln(`echo "err-$((2*3))" >&2; echo "$PROJECT_ID"`)
	s.waitFor("err-6")
	s.waitFor(e.p.ID)
	s.typeln("exit 5")
	res, err := s.wait()
	if err != nil || res.ExitCode != 5 || res.TimedOut {
		t.Errorf("shell that typed exit 5: %+v, %v; want exit code 5", res, err)
	}
	if len(res.Stdout)+len(res.Stderr) != 0 {
		t.Errorf("a terminal exec's output is on the terminal only; the result has %q / %q", res.Stdout, res.Stderr)
	}
}

func testTerminalResize(t *testing.T, e *env) {
	c := e.shell("x", "app")
	s := e.terminal(c, engine.ExecRequest{Argv: []string{"sh"}}, engine.TermSize{Cols: 101, Rows: 31}, true)
	// A runtime may size the terminal only once the exec runs (docker's API 1.41): a command
	// typed before that reads 0x0. Ask until the start size shows.
	eventually(t, "stty size to say 31 101", func() bool {
		s.typeln("stty size")
		time.Sleep(200 * time.Millisecond)
		return strings.Contains(s.out.String(), "31 101")
	}, func() string { return s.out.String() })
	s.resize <- engine.TermSize{Cols: 132, Rows: 43}
	// The resize reaches the terminal on its own path; ask until it shows.
	eventually(t, "stty size to say 43 132 after the resize", func() bool {
		s.typeln("stty size")
		time.Sleep(200 * time.Millisecond)
		return strings.Contains(s.out.String(), "43 132")
	}, func() string { return s.out.String() })
	s.typeln("exit")
	if res, err := s.wait(); err != nil || res.ExitCode != 0 {
		t.Errorf("shell that typed exit: %+v, %v", res, err)
	}
}

func testTerminalNoInput(t *testing.T, e *env) {
	c := e.shell("x", "app")
	// The wait: an engine older than API 1.42 sizes an exec's terminal only once it runs
	// (docker's CLI resizes it then too), and a kubelet applies the size its stream sends
	// when it gets to it (a loaded node: over a second), so a command must not read its size
	// at once. It asks until the terminal has one (stty fails or says "0 0" before), for up
	// to 30 s; what it then says is the size under test.
	script := `test -t 1 && echo "out-tty-$((3*3))"
i=0; while [ $i -lt 150 ]; do sz=$(stty size 2>/dev/null) && [ -n "$sz" ] && [ "$sz" != "0 0" ] && break; sleep 0.2; i=$((i+1)); done
stty size; exit 3`
	s := e.terminal(c, engine.ExecRequest{Argv: []string{"sh", "-c", script}}, engine.TermSize{}, false)
	res, err := s.wait()
	if err != nil || res.ExitCode != 3 {
		t.Errorf("sh -c '...; exit 3' on a terminal: %+v, %v; want exit code 3", res, err)
	}
	out := s.out.String()
	if !strings.Contains(out, "out-tty-9") {
		t.Errorf("the command's stdout is not a terminal: it wrote %q", out)
	}
	if !strings.Contains(out, "24 80") {
		t.Errorf("a terminal nobody sized is not %v: stty size says %q", engine.DefaultTermSize, out)
	}
	// A terminal ends its lines with a carriage return too: the output was not a pipe's.
	if !strings.Contains(out, "\r\n") {
		t.Errorf("terminal output without carriage returns: %q", out)
	}
}

func testTerminalNotFound(t *testing.T, e *env) {
	c := e.shell("x", "app")
	s := e.terminal(c, engine.ExecRequest{Argv: []string{"sailtui-no-such-command-" + e.token}}, engine.TermSize{}, false)
	res, err := s.wait()
	if err != nil || res.ExitCode != engine.ExitNotFound {
		t.Errorf("a missing command on a terminal: %+v, %v; want exit code 127", res, err)
	}
}

func testTerminalTimeout(t *testing.T, e *env) {
	c := e.shell("x", "app")
	start := time.Now()
	s := e.terminal(c, engine.ExecRequest{Argv: []string{"sleep", "60"}, Timeout: time.Second}, engine.TermSize{}, true)
	res, err := s.wait()
	if err != nil || !res.TimedOut || res.ExitCode != engine.ExitTimedOut {
		t.Errorf("sleep 60 on a terminal with a 1s timeout: %+v, %v; want timed out, 124", res, err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("sleep 60 with a 1s timeout took %v", took)
	}
}

// An interactive shell puts each job in a process group of its own: ending the session must
// still end them all.
func testTerminalCancelKillsJobs(t *testing.T, e *env) {
	c := e.shell("x", "app")
	s := e.terminal(c, engine.ExecRequest{Argv: []string{"sh"}}, engine.TermSize{}, true)
	s.typeln(`sleep 300 & echo $! > job.pid; echo $$ > shell.pid; echo "started-$((2+3))"`)
	s.waitFor("started-5")
	s.typeln("sleep 301")
	time.Sleep(300 * time.Millisecond) // the foreground job has started
	start := time.Now()
	s.cancel()
	_, err := s.wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled terminal exec returned %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the cancelled terminal exec took %v to end", took)
	}
	e.waitGone(c, "the shell and its background job", "job.pid", "shell.pid")
}

// A process the command leaves behind on the terminal (one that ignores the hangup) must not
// keep the exec from ending with the command.
func testTerminalLeftBehind(t *testing.T, e *env) {
	c := e.shell("x", "app")
	start := time.Now()
	s := e.terminal(c, engine.ExecRequest{Argv: []string{"sh", "-c", `(trap "" HUP; exec sleep 60) & echo $! > left.pid; echo "left-$((4+4))"; exit 4`}}, engine.TermSize{}, true)
	res, err := s.wait()
	defer e.exec(c, engine.ExecRequest{Argv: []string{"sh", "-c", `kill "$(cat left.pid)"`}})
	if err != nil || res.ExitCode != 4 {
		t.Errorf("a command that left a process on its terminal: %+v, %v; want exit code 4", res, err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the exec took %v to end after its command: the process left behind held it", took)
	}
	if !strings.Contains(s.out.String(), "left-8") {
		t.Errorf("the command's output before it ended is lost: %q", s.out.String())
	}
}
