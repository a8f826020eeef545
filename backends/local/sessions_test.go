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
// exec's leftover would be (in a group of its own, as a plain exec's, when group), and kills
// it when the test ends.
func startSession(t *testing.T, secs string, group bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", secs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: !group, Setpgid: group}
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

// run runs argv as an exec in web, on a terminal when terminal.
func (f *fixture) run(terminal bool, argv ...string) engine.ExecResult {
	f.t.Helper()
	c, req := engine.Container{Name: "web", Directory: "."}, engine.ExecRequest{Argv: argv, Timeout: 20 * time.Second}
	var res engine.ExecResult
	var err error
	if terminal {
		res, err = f.r.ExecTerminal(f.t.Context(), f.p, c, req, engine.Terminal{Out: io.Discard})
	} else {
		res, err = f.r.Exec(f.t.Context(), f.p, c, req)
	}
	if err != nil {
		f.t.Fatalf("exec -it %v: %v", argv, err)
	}
	return res
}

// What an exec leaves running on purpose (a nohup'd process), on a terminal or not, runs
// until the project stops, and no longer: it is in no container's group, but its session or
// group is recorded.
func TestExecLeftoverEndsWithStop(t *testing.T) {
	for _, terminal := range []bool{true, false} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			f := newFixture(t)
			line := fmt.Sprintf("sleep 1002.%06d", time.Now().UnixNano()%1_000_000)
			t.Cleanup(func() {
				for _, pid := range cmdlinePIDs(line) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			// The shell waits until nohup has become sleep (it ignores SIGHUP by then): the
			// hangup the kernel sends when a terminal's shell leaves would end nohup itself
			// before that.
			script := "nohup " + line + " >/dev/null 2>&1 & until [ \"$(head -c 6 /proc/$!/cmdline | tr '\\0' ' ')\" = 'sleep ' ]; do sleep 0.05; done; exit 0"
			if res := f.run(terminal, "sh", "-c", script); res.ExitCode != 0 {
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
		})
	}
}

// A session (or a plain exec's group) recorded by a client that died (SIGKILL: it could not
// end it) is ended by the next exec of the project, on a terminal or not; one whose client
// lives is left alone.
func TestExecOrphanEndsAtNextExec(t *testing.T) {
	self := engine.ProcessOwner()
	// This process with another start time: a holder that is gone.
	parts := strings.Split(self, "/")
	gone := parts[0] + "/" + parts[1] + "/1"
	for _, terminal := range []bool{true, false} {
		for _, group := range []bool{true, false} {
			t.Run(fmt.Sprintf("terminal=%v,group=%v", terminal, group), func(t *testing.T) {
				f := newFixture(t)
				orphan, live := startSession(t, "1003", group), startSession(t, "1004", group)
				recs := map[*exec.Cmd]sessionRecord{}
				for cmd, owner := range map[*exec.Cmd]string{orphan: gone, live: self} {
					ticks, err := procStartTicks(cmd.Process.Pid)
					if err != nil {
						t.Fatal(err)
					}
					recs[cmd] = sessionRecord{SID: cmd.Process.Pid, StartTicks: ticks, Group: group, Container: "web", Owner: owner}
					if err := f.r.writeSession(f.p.Slug, recs[cmd]); err != nil {
						t.Fatal(err)
					}
				}
				f.run(terminal, "true")
				if recs[orphan].alive() {
					t.Error("what a dead client's exec left runs on after the next exec")
				}
				if !recs[live].alive() {
					t.Error("what a live client's exec runs was ended by another exec")
				}
			})
		}
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
