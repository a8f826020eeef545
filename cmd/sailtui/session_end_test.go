package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine/enginetest"
)

// A terminal session's processes end with it (issue 30, item 4): what the shell left running
// in the background, nohup'd or as a job in a group of its own, goes when its client does.

// sessionSleeps types into the remote shell a nohup'd sleep and a background job, each with
// an argument no other test uses, waits for both to run and returns their command lines. The
// test kills whatever of them is left when it ends.
func sessionSleeps(t *testing.T, s *tmuxSession) []string {
	t.Helper()
	n := time.Now().UnixNano() % 1_000_000
	lines := []string{fmt.Sprintf("sleep 1000.%06d", n), fmt.Sprintf("sleep 1001.%06d", n)}
	t.Cleanup(func() {
		for _, l := range lines {
			for _, pid := range procsByCmdline(l) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	s.keys(fmt.Sprintf("nohup %s >/dev/null 2>&1 & %s & echo started-$((6*7))", lines[0], lines[1]), "Enter")
	s.waitFor("started-42")
	for _, l := range lines {
		for deadline := time.Now().Add(10 * time.Second); len(procsByCmdline(l)) == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%q never ran:\n%s", l, s.screen())
			}
		}
	}
	return lines
}

// procsByCmdline are the live processes (not zombies) whose command line is line.
func procsByCmdline(line string) []int {
	want := []byte(strings.ReplaceAll(line, " ", "\x00") + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Equal(b, want) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// panePID is the pid of the pane's process: the client, when the line exec'd it.
func (s *tmuxSession) panePID() int {
	s.t.Helper()
	out, err := exec.Command("tmux", "display-message", "-p", "-t", s.name, "#{pane_pid}").Output()
	if err != nil {
		s.t.Fatalf("pane pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		s.t.Fatalf("pane pid %q: %v", out, err)
	}
	return pid
}

// waitExited waits for the pane's process to end.
func (s *tmuxSession) waitExited() {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !s.exited(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("the client never exited:\n%s", s.screen())
		}
	}
}

// checkGone fails t for each of lines still running.
func checkGone(t *testing.T, lines []string) {
	t.Helper()
	for _, l := range lines {
		if pids := procsByCmdline(l); len(pids) > 0 {
			t.Errorf("%q still runs (pids %v) after its session's client went", l, pids)
		}
	}
}

// A closed terminal (SIGHUP of sailtui exec -it) ends the session: the shell's nohup'd and
// background processes are gone by the time the client has exited, and so is its use.
func TestCLIExecTerminalHangupEndsSession(t *testing.T) {
	c := shellProject(t)
	s := startTerminal(t, c, "exec "+sailtuiLine(c, "exec", "-it", "shop", "web", "--", "sh"))
	lines := sessionSleeps(t, s)
	if err := syscall.Kill(s.panePID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.waitExited()
	checkGone(t, lines)
	obs := openTest(t, c.state, "observer")
	p, err := obs.eng.Project(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if uses, err := obs.store.ListUses(context.Background(), p.ID); err != nil || len(uses) > 0 {
		t.Errorf("after the client's hangup, uses %+v (%v), want none", uses, err)
	}
}

// A client killed outright (SIGKILL) cannot end its session; the hibernation that comes next
// does: no process of the session is left, in the deleted tree or anywhere.
func TestCLIExecTerminalKilledClientHibernate(t *testing.T) {
	c := shellProject(t)
	s := startTerminal(t, c, "exec "+sailtuiLine(c, "exec", "-it", "shop", "web", "--", "sh"))
	lines := sessionSleeps(t, s)
	if err := syscall.Kill(s.panePID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.waitExited()
	obs := openTest(t, c.state, "observer")
	p, err := obs.eng.Project(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	// The projects directory, where the hibernated tree goes to the trash too.
	dir := filepath.Dir(enginetest.DirsOf(obs.runtime)(p))
	c.ok("project", "hibernate", "shop")
	checkGone(t, lines)
	if pids := procsIn(dir); len(pids) > 0 {
		t.Errorf("processes %v still run in the projects' trees under %s", pids, dir)
	}
	if uses, err := obs.store.ListUses(context.Background(), p.ID); err != nil || len(uses) > 0 {
		t.Errorf("after the hibernation, uses %+v (%v), want none", uses, err)
	}
}

// procsIn are the processes whose working directory is dir or below it (deleted or not).
func procsIn(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil {
			continue
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			out = append(out, pid)
		}
	}
	return out
}

// In docker mode a hangup of the client ends what the exec started in the container too, the
// background processes that ignore SIGHUP included.
func TestDockerExecTerminalHangupEndsSession(t *testing.T) {
	t.Parallel()
	slug := "hup-" + randSuffix(t)
	c, _ := dockerCLI(t, slug)
	c.ok("project", "create", slug, "--from", writeDockerSource(t), "--owner", "tester")
	c.ok("project", "start", slug)
	s := startTerminal(t, c, "exec "+sailtuiLine(c, "exec", "-it", slug, "web", "--", "sh"))
	s.waitFor("/app/web $")
	// The image's busybox has no nohup: a subshell that ignores SIGHUP is one.
	s.keys(`(trap '' HUP; exec sleep 1000) & sleep 1001 & echo started-$((6*7))`, "Enter")
	s.waitFor("started-42")
	sleeps := func() []string {
		var found []string
		for _, l := range strings.Split(c.ok("exec", slug, "web", "--", "ps"), "\n") {
			if strings.HasSuffix(l, "sleep 1000") || strings.HasSuffix(l, "sleep 1001") {
				found = append(found, strings.TrimSpace(l))
			}
		}
		return found
	}
	for deadline := time.Now().Add(10 * time.Second); len(sleeps()) < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sleeps never ran in the container: %q", sleeps())
		}
	}
	if err := syscall.Kill(s.panePID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.waitExited()
	if left := sleeps(); len(left) > 0 {
		t.Errorf("after the client's hangup, the container still runs %q", left)
	}
}
