//go:build linux

package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// With SAILTUI_TEST_PAUSE set the test binary is a sailtui that pauses a project, says so on
// stdout and then hangs until it is killed: what a sailtui killed -9 mid-snapshot leaves behind.
// An init, not a case of TestMain: it runs before anything of the test framework.
func init() {
	spec := os.Getenv("SAILTUI_TEST_PAUSE")
	if spec == "" {
		return
	}
	var job detachJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r, err := New(job.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := r.PauseProject(context.Background(), job.Project, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("paused")
	time.Sleep(time.Hour)
	os.Exit(0)
}

// counterLoop keeps rewriting file c with an increasing counter, as a dev server rewrites its
// build output: while the loop runs, c keeps changing.
const counterLoop = `i=0; while :; do i=$((i+1)); echo $i > c.tmp && mv -f c.tmp c; done`

func (f *fixture) counter() int {
	f.t.Helper()
	for range 100 {
		b, err := os.ReadFile(f.path("c"))
		if n, cerr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && cerr == nil {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.t.Fatal("the counter file never appeared")
	return 0
}

// advancing reports whether the counter moves within d.
func (f *fixture) advancing(d time.Duration) bool {
	f.t.Helper()
	first := f.counter()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if f.counter() != first {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func procState(t *testing.T, pid int) byte {
	t.Helper()
	st, err := readProcStat(pid)
	if err != nil {
		t.Fatalf("read state of %d: %v", pid, err)
	}
	return st.state
}

// frozen is the state of a paused process: T, or D for a shell caught in vfork, whose child is
// stopped before its exec (see unstoppedMember).
func frozen(state byte) bool { return state == 'T' || state == 'D' }

func TestPauseProject(t *testing.T) {
	f := newFixture(t)
	st := f.start("loop", counterLoop)
	idle := f.start("idle", "exec sleep 300")
	if !f.advancing(5 * time.Second) {
		t.Fatal("the counter loop does not run")
	}
	resume, err := f.r.PauseProject(t.Context(), f.p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{st.PID, idle.PID} {
		if s := procState(t, pid); !frozen(s) {
			t.Errorf("process %d is %c while paused, want T", pid, s)
		}
	}
	if f.advancing(300 * time.Millisecond) {
		t.Error("the counter moved while the project was paused")
	}
	got := f.status(f.r, "loop")
	if got.State != engine.ContainerRunning || !strings.Contains(got.Detail, "paused for a snapshot") {
		t.Errorf("status while paused: %+v", got)
	}
	// A second pause of the same project is refused and leaves the first alone.
	if _, err := f.r.PauseProject(t.Context(), f.p, nil); !errors.Is(err, engine.ErrBusy) {
		t.Errorf("second pause: got %v, want ErrBusy", err)
	}
	if err := resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := resume(t.Context()); err != nil {
		t.Fatalf("second resume: %v", err)
	}
	if !f.advancing(5 * time.Second) {
		t.Fatal("the counter does not move after resume")
	}
	if got := f.status(f.r, "loop"); got.State != engine.ContainerRunning || got.Detail != "" {
		t.Errorf("status after resume: %+v", got)
	}
	if _, err := os.Stat(f.r.pausePath(f.p.Slug)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pause record left after resume: %v", err)
	}
	// A pause with a cancelled context is refused before anything is stopped.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.r.PauseProject(ctx, f.p, nil); err == nil {
		t.Error("pause with a cancelled context succeeded")
	}
	if !f.advancing(5 * time.Second) {
		t.Fatal("the counter does not move after a refused pause")
	}
}

func TestPauseNothingRunning(t *testing.T) {
	f := newFixture(t)
	resume, err := f.r.PauseProject(t.Context(), f.p, []engine.Container{{Name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.StartContainer(t.Context(), f.p, engine.Container{Name: "gone", Directory: "."}, engine.StartSpec{Command: "exit 0"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the container to exit", func() bool { return f.status(f.r, "gone").State == engine.ContainerExited })
	if resume, err = f.r.PauseProject(t.Context(), f.p, nil); err != nil {
		t.Fatal(err)
	}
	if err := resume(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// pauseInOtherProcess pauses the fixture's project from a child sailtui and returns it once the
// pause is in place.
func pauseInOtherProcess(t *testing.T, f *fixture) *exec.Cmd {
	t.Helper()
	job, _ := json.Marshal(detachJob{Config: f.cfg, Project: f.p})
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SAILTUI_TEST_PAUSE="+string(job))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "paused\n" {
		t.Fatalf("pausing process said %q, %v", line, err)
	}
	return cmd
}

// TestPauseKilledPauser: a sailtui killed -9 while it holds a pause does not leave the project
// frozen: its watchdog continues the groups at once.
func TestPauseKilledPauser(t *testing.T) {
	f := newFixture(t)
	st := f.start("loop", counterLoop)
	f.counter()
	pauser := pauseInOtherProcess(t, f)
	if s := procState(t, st.PID); !frozen(s) {
		t.Fatalf("container is %c while paused by the other process, want T", s)
	}
	if got := f.status(f.r, "loop"); !strings.Contains(got.Detail, "paused for a snapshot") {
		t.Errorf("status while another process holds the pause: %+v", got)
	}
	if err := pauser.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = pauser.Wait()
	if !f.advancing(5 * time.Second) {
		t.Fatal("the container stays frozen after the pausing process was killed")
	}
	// The record the dead pauser left is cleared by the next look.
	if got := f.status(f.r, "loop"); got.State != engine.ContainerRunning || got.Detail != "" {
		t.Errorf("status after the pauser died: %+v", got)
	}
	if _, err := os.Stat(f.r.pausePath(f.p.Slug)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pause record of a dead pauser left after a status read: %v", err)
	}
}

// TestPauseHealedWithoutWatchdog: when the watchdog is gone too (killed with its sailtui), the
// next sailtui to look at the project's containers continues them.
func TestPauseHealedWithoutWatchdog(t *testing.T) {
	for _, via := range []string{"status", "start", "pause"} {
		t.Run(via, func(t *testing.T) {
			f := newFixture(t)
			st := f.start("loop", counterLoop)
			f.counter()
			pauser := pauseInOtherProcess(t, f)
			watchdog := childOf(t, pauser.Process.Pid)
			_ = syscall.Kill(watchdog, syscall.SIGKILL)
			_ = pauser.Process.Signal(syscall.SIGKILL)
			_ = pauser.Wait()
			waitFor(t, "the watchdog to be gone", func() bool { return !running(watchdog) })
			if f.advancing(300 * time.Millisecond) {
				t.Fatal("the container ran on without anyone continuing it: the test kills nothing")
			}
			switch via {
			case "status":
				if got := f.status(f.r, "loop"); got.State != engine.ContainerRunning || got.Detail != "" {
					t.Errorf("status: %+v", got)
				}
			case "start":
				if got := f.start("loop", counterLoop); got.PID != st.PID {
					t.Errorf("start replaced the container: pid %d, was %d", got.PID, st.PID)
				}
			case "pause":
				resume, err := f.r.PauseProject(t.Context(), f.p, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := resume(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			if !f.advancing(5 * time.Second) {
				t.Fatalf("the container stays frozen after a %s by another sailtui", via)
			}
		})
	}
}

// childOf finds the one child process of ppid.
func childOf(t *testing.T, ppid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(ppid) {
			return pid
		}
	}
	t.Fatalf("process %d has no child", ppid)
	return 0
}

// TestStopPausedContainer: a stopped group gets its SIGTERM at once, not after StopTimeout.
func TestStopPausedContainer(t *testing.T) {
	f := newFixture(t)
	f.cfg.StopTimeout = 20 * time.Second
	f.r = newTestRuntime(t, f.cfg)
	st := f.start("frozen", "exec sleep 300")
	if err := syscall.Kill(-st.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the group to stop", func() bool { return procState(t, st.PID) == 'T' })
	start := time.Now()
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "frozen"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stopping a stopped group took %v: it waited for SIGKILL", took)
	}
}

// TestPauseLeftoverOfThisProcess: a record naming this very process, left by a resume that
// could not remove it, does not hold the project paused for the rest of the process's life.
func TestPauseLeftoverOfThisProcess(t *testing.T) {
	f := newFixture(t)
	st := f.start("loop", counterLoop)
	f.counter()
	resume, err := f.r.PauseProject(t.Context(), f.p, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := os.ReadFile(f.r.pausePath(f.p.Slug))
	if err != nil {
		t.Fatal(err)
	}
	if err := resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Put back what the failed removal would have left, with the group stopped as it was.
	if err := os.WriteFile(f.r.pausePath(f.p.Slug), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-st.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if got := f.status(f.r, "loop"); got.State != engine.ContainerRunning || got.Detail != "" {
		t.Errorf("status with a leftover record of this process: %+v", got)
	}
	if !f.advancing(5 * time.Second) {
		t.Fatal("the leftover pause of this process was not undone")
	}
	resume, err = f.r.PauseProject(t.Context(), f.p, nil)
	if err != nil {
		t.Fatalf("pause after a leftover of this process: %v", err)
	}
	if err := resume(t.Context()); err != nil {
		t.Fatal(err)
	}
}
