//go:build linux

package local

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// startSession runs sleep (with an argument of its own) in a session of its own, as a terminal
// exec's leftover would be, and kills it when the test ends.
func startSession(t *testing.T, secs string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", secs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd
}

func (f *fixture) terminal(argv ...string) engine.ExecResult {
	f.t.Helper()
	res, err := f.r.ExecTerminal(f.t.Context(), f.p, engine.Container{Name: "web", Directory: "."},
		engine.ExecRequest{Argv: argv, Timeout: 20 * time.Second}, engine.Terminal{Out: io.Discard})
	if err != nil {
		f.t.Fatalf("exec -it %v: %v", argv, err)
	}
	return res
}

// What a terminal exec leaves running on purpose (a nohup'd process) runs until the project
// stops, and no longer: it is in no container's group, but its session is recorded.
func TestTerminalLeftoverEndsWithStop(t *testing.T) {
	f := newFixture(t)
	line := fmt.Sprintf("sleep 1002.%06d", time.Now().UnixNano()%1_000_000)
	t.Cleanup(func() {
		for _, pid := range cmdlinePIDs(line) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// The shell waits until nohup has become sleep (it ignores SIGHUP by then): the hangup
	// the kernel sends when the shell leaves would end nohup itself before that.
	script := "nohup " + line + " >/dev/null 2>&1 & until [ \"$(head -c 6 /proc/$!/cmdline | tr '\\0' ' ')\" = 'sleep ' ]; do sleep 0.05; done; exit 0"
	if res := f.terminal("sh", "-c", script); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if len(cmdlinePIDs(line)) == 0 {
		t.Fatalf("%q is not running after the exec returned", line)
	}
	if err := f.r.StopProject(t.Context(), f.p, nil); err != nil {
		t.Fatal(err)
	}
	if pids := cmdlinePIDs(line); len(pids) > 0 {
		t.Errorf("%q (pids %v) runs on after the project stopped", line, pids)
	}
}

// A session recorded by a client that died (SIGKILL: it could not end it) is ended by the next
// terminal exec of the project; one whose client lives is left alone.
func TestTerminalOrphanEndsAtNextExec(t *testing.T) {
	f := newFixture(t)
	orphan, live := startSession(t, "1003"), startSession(t, "1004")
	self := engine.ProcessOwner()
	// This process with another start time: a holder that is gone.
	parts := strings.Split(self, "/")
	gone := parts[0] + "/" + parts[1] + "/1"
	starts := map[*exec.Cmd]uint64{}
	for _, s := range []struct {
		cmd   *exec.Cmd
		owner string
	}{{orphan, gone}, {live, self}} {
		ticks, err := procStartTicks(s.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		starts[s.cmd] = ticks
		if err := f.r.writeSession(f.p.Slug, sessionRecord{SID: s.cmd.Process.Pid, StartTicks: ticks, Container: "web", Owner: s.owner}); err != nil {
			t.Fatal(err)
		}
	}
	f.terminal("true")
	if sessionAlive(orphan.Process.Pid, starts[orphan]) {
		t.Error("the session of a dead client runs on after the next terminal exec")
	}
	if !sessionAlive(live.Process.Pid, starts[live]) {
		t.Error("the session of a live client was ended by another terminal exec")
	}
}

// cmdlinePIDs are the live processes whose command line is line.
func cmdlinePIDs(line string) []int {
	want := strings.ReplaceAll(line, " ", "\x00") + "\x00"
	var out []int
	for _, pid := range liveProcs(func(procStat) bool { return true }) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && string(b) == want {
			out = append(out, pid)
		}
	}
	return out
}
