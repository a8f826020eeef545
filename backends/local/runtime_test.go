//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs/hostfstest"
	"github.com/sailtui/sailtui/engine/runtimetest"
)

// The test binary doubles as the helpers the tests need on any machine: with
// SAILTUI_TEST_SERVE set it is a static file server on $HOST:$PORT (the contract's
// ServeCommand); with SAILTUI_TEST_DETACH set it starts a container and exits at once.
func TestMain(m *testing.M) {
	switch {
	case os.Getenv("SAILTUI_TEST_SERVE") != "":
		serveForTest()
	case os.Getenv("SAILTUI_TEST_DETACH") != "":
		os.Exit(detachForTest(os.Getenv("SAILTUI_TEST_DETACH")))
	case os.Getenv("SAILTUI_TEST_ALLOC_MIB") != "":
		allocForTest(os.Getenv("SAILTUI_TEST_ALLOC_MIB"))
	}
	os.Exit(m.Run())
}

func serveForTest() {
	addr := net.JoinHostPort(os.Getenv("HOST"), os.Getenv("PORT"))
	fmt.Println("serving . on", addr)
	err := http.ListenAndServe(addr, http.FileServer(http.Dir(".")))
	fmt.Fprintln(os.Stderr, "serve:", err)
	os.Exit(1)
}

type detachJob struct {
	Config  Config
	Project engine.Project
	C       engine.Container
	Command string
}

func detachForTest(spec string) int {
	var job detachJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r, err := New(job.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st, err := r.StartContainer(context.Background(), job.Project, job.C, engine.StartSpec{Command: job.Command})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(st.PID)
	return 0
}

func serveCommand(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return "SAILTUI_TEST_SERVE=1 exec " + shellQuote(exe)
}

func testConfig(t *testing.T) Config {
	base := t.TempDir()
	return Config{
		ProjectsDir: filepath.Join(base, "projects"),
		RunDir:      filepath.Join(base, "run"),
		LogDir:      filepath.Join(base, "logs"),
		StopTimeout: 2 * time.Second,
	}
}

func newTestRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestContract(t *testing.T) {
	runtimetest.Run(t, runtimetest.Harness{
		New:          func(t *testing.T) engine.Runtime { return newTestRuntime(t, testConfig(t)) },
		ServeCommand: serveCommand(t),
	})
}

// fixture is one project on a fresh runtime, destroyed (all its processes stopped) at the end.
type fixture struct {
	t   *testing.T
	cfg Config
	r   *Runtime
	p   engine.Project
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := testConfig(t)
	f := &fixture{t: t, cfg: cfg, r: newTestRuntime(t, cfg), p: engine.Project{ID: "id-demo", Slug: "demo"}}
	t.Cleanup(func() {
		if err := f.r.DestroyProject(context.Background(), f.p, nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := f.r.EnsureProject(t.Context(), f.p); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) start(name, command string) engine.ContainerStatus {
	f.t.Helper()
	st, err := f.r.StartContainer(f.t.Context(), f.p, engine.Container{Name: name, Directory: "."}, engine.StartSpec{Command: command, Port: 5173})
	if err != nil {
		f.t.Fatalf("start %s: %v", name, err)
	}
	if st.State != engine.ContainerRunning {
		f.t.Fatalf("start %s: %+v", name, st)
	}
	return st
}

func (f *fixture) status(r *Runtime, name string) engine.ContainerStatus {
	f.t.Helper()
	st, err := r.ContainerStatus(f.t.Context(), f.p, engine.Container{Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *fixture) path(rel string) string { return filepath.Join(f.r.StorageDir(f.p), rel) }

// running reports whether pid is a live process (a zombie is not).
func running(pid int) bool {
	st, err := readProcStat(pid)
	return err == nil && !dead(st.state)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPidFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

func TestFoundAgainByNewRuntime(t *testing.T) {
	f := newFixture(t)
	st := f.start("web", serveCommand(t))

	r2 := newTestRuntime(t, f.cfg)
	st2 := f.status(r2, "web")
	if st2.State != engine.ContainerRunning || st2.PID != st.PID || st2.URL != st.URL {
		t.Fatalf("second runtime sees %+v, first started %+v", st2, st)
	}
	if err := r2.StopContainer(t.Context(), f.p, engine.Container{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	if got := f.status(f.r, "web"); got.State != engine.ContainerStopped {
		t.Errorf("first runtime sees %+v after the second stopped it", got)
	}
	waitFor(t, "the process to be gone", func() bool { return !running(st.PID) })
}

// TestOutlivesStarter starts a container from another process that exits at once: the
// container keeps running, in a session of its own, and this process finds and stops it.
func TestOutlivesStarter(t *testing.T) {
	f := newFixture(t)
	job, _ := json.Marshal(detachJob{Config: f.cfg, Project: f.p, C: engine.Container{Name: "orphan", Directory: "."}, Command: "exec sleep 300"})
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SAILTUI_TEST_DETACH="+string(job))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("starter process: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	st := f.status(f.r, "orphan")
	if st.State != engine.ContainerRunning || st.PID != pid {
		t.Fatalf("after the starter exited: %+v, want running pid %d", st, pid)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if fields[2] != strconv.Itoa(pid) || fields[3] != strconv.Itoa(pid) {
		t.Errorf("container pgrp %s session %s, want both %d", fields[2], fields[3], pid)
	}
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "orphan"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the orphan to be gone", func() bool { return !running(pid) })
}

// TestPidReuseGuard: a record whose pid now belongs to another process (other start time) is
// not running, and stopping it leaves that process alone.
func TestPidReuseGuard(t *testing.T) {
	f := newFixture(t)
	stranger := exec.Command("sleep", "60")
	stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group leader, like a container
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stranger.Process.Kill(); _ = stranger.Wait() })
	ticks, err := procStartTicks(stranger.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.r.runDir("demo"), 0o700); err != nil {
		t.Fatal(err)
	}
	rec := &record{PID: stranger.Process.Pid, StartTicks: ticks + 1, Port: 1, Command: "sleep 60", StartedAt: time.Now()}
	if err := f.r.writeRecord("demo", "old", rec); err != nil {
		t.Fatal(err)
	}
	if st := f.status(f.r, "old"); st.State == engine.ContainerRunning {
		t.Fatalf("record with a reused pid reads as %+v", st)
	}
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "old"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if !running(stranger.Process.Pid) {
		t.Fatalf("StopContainer signalled a process that only reused the recorded pid")
	}
	// With the right start time it is ours: running, and stopped for real.
	rec.StartTicks = ticks
	rec.StoppedAt = time.Time{}
	if err := f.r.writeRecord("demo", "old", rec); err != nil {
		t.Fatal(err)
	}
	if st := f.status(f.r, "old"); st.State != engine.ContainerRunning {
		t.Fatalf("record with the right start time reads as %+v", st)
	}
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "old"}); err != nil {
		t.Fatal(err)
	}
	_ = stranger.Wait()
}

func TestStopKillsWholeGroup(t *testing.T) {
	f := newFixture(t)
	st := f.start("family", "sleep 300 & echo $! > child.pid; echo $$ > leader.pid; sleep 300")
	child := readPidFile(t, f.path("child.pid"))
	leader := readPidFile(t, f.path("leader.pid"))
	if leader != st.PID || !running(child) {
		t.Fatalf("leader %d (status pid %d), child %d running %v", leader, st.PID, child, running(child))
	}
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "family"}); err != nil {
		t.Fatal(err)
	}
	// StopContainer returns once the group is gone.
	if running(child) || running(leader) {
		t.Errorf("after StopContainer: child running %v, leader running %v", running(child), running(leader))
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	f := newFixture(t)
	f.cfg.StopTimeout = 300 * time.Millisecond
	f.r = newTestRuntime(t, f.cfg)
	st := f.start("stubborn", `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	waitFor(t, "the trap to be set", func() bool {
		b, _ := os.ReadFile(f.r.logPath("demo", "stubborn"))
		return strings.Contains(string(b), "ready")
	})
	start := time.Now()
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "stubborn"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("stop took %v, want about the 300ms stop timeout", took)
	}
	if running(st.PID) {
		t.Errorf("process ignoring SIGTERM survived the stop")
	}
	if got := f.status(f.r, "stubborn"); got.State != engine.ContainerStopped {
		t.Errorf("status %+v", got)
	}
}

func TestStopProjectStopsUnlisted(t *testing.T) {
	f := newFixture(t)
	a := f.start("a", "exec sleep 300")
	b := f.start("b", "exec sleep 300")
	if err := f.r.StopProject(t.Context(), f.p, nil); err != nil {
		t.Fatal(err)
	}
	for _, st := range []engine.ContainerStatus{a, b} {
		if running(st.PID) || f.status(f.r, st.Name).State != engine.ContainerStopped {
			t.Errorf("%s still running after StopProject", st.Name)
		}
	}
}

// output is what the container wrote to its log, without times and markers.
func (f *fixture) output(name string) string {
	f.t.Helper()
	rc, err := f.r.Logs(f.t.Context(), f.p, engine.Container{Name: name}, engine.LogOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		f.t.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !engine.IsLogMarker(line) {
			out.WriteString(line)
		}
	}
	return out.String()
}

func TestEnvAndPort(t *testing.T) {
	t.Setenv("SAILTUI_SECRET_FOR_TEST", "leaked")
	t.Setenv("SAILTUI_PASS_FOR_TEST", "passed")
	f := newFixture(t)
	f.cfg.PassEnv = []string{"SAILTUI_PASS_*"}
	f.r = newTestRuntime(t, f.cfg)
	st := f.start("envy", `echo "$PORT|$HOST|$SAILTUI_DECLARED_PORT|$PROJECT_ID|$CONTAINER_NAME|$SAILTUI_SECRET_FOR_TEST|$SAILTUI_PASS_FOR_TEST|${PATH:+path}|${HOME:+home}"; exec sleep 300`)
	want := fmt.Sprintf("%d|127.0.0.1|5173|id-demo|envy||passed|path|home\n", st.HostPort)
	var got string
	waitFor(t, "the env line", func() bool {
		got = f.output("envy")
		return got != ""
	})
	if got != want {
		t.Errorf("container env %q, want %q", got, want)
	}
	if st.URL != fmt.Sprintf("http://127.0.0.1:%d/", st.HostPort) || st.LocalURL != st.URL {
		t.Errorf("URLs %q %q for port %d", st.URL, st.LocalURL, st.HostPort)
	}
	// The port survives a restart when it is still free.
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "envy"}); err != nil {
		t.Fatal(err)
	}
	again := f.start("envy", "exec sleep 300")
	if again.HostPort != st.HostPort {
		t.Errorf("port after restart %d, was %d", again.HostPort, st.HostPort)
	}
	// Two containers never share a port.
	other := f.start("other", "exec sleep 300")
	if other.HostPort == again.HostPort {
		t.Errorf("two running containers got port %d", other.HostPort)
	}
}

func TestStartErrors(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	_, err := f.r.StartContainer(ctx, f.p, engine.Container{Name: "x", Directory: "missing"}, engine.StartSpec{Command: "true"})
	if !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("start in a missing directory: %v", err)
	}
	_, err = f.r.StartContainer(ctx, f.p, engine.Container{Name: "x", Directory: "../elsewhere"}, engine.StartSpec{Command: "true"})
	if !errors.Is(err, engine.ErrBadPath) {
		t.Errorf("start in ../elsewhere: %v", err)
	}
	_, err = f.r.StartContainer(ctx, f.p, engine.Container{Name: "a/b", Directory: "."}, engine.StartSpec{Command: "true"})
	if !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("start with a container name holding a slash: %v", err)
	}
	_, err = f.r.StartContainer(ctx, engine.Project{Slug: "nope"}, engine.Container{Name: "x"}, engine.StartSpec{Command: "true"})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("start in a project without storage: %v", err)
	}
	_, err = f.r.StartContainer(ctx, f.p, engine.Container{Name: "x"}, engine.StartSpec{Command: ""})
	if !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "demo/x") {
		t.Errorf("start with no command: %v", err)
	}
	for _, slug := range []string{"", ".", "..", "../x", "a/b", ".hidden"} {
		if err := f.r.EnsureProject(ctx, engine.Project{Slug: slug}); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("EnsureProject(%q): %v", slug, err)
		}
		if d := f.r.StorageDir(engine.Project{Slug: slug}); d != "" {
			t.Errorf("StorageDir(%q) = %q, want empty", slug, d)
		}
	}
	if d := f.r.StorageDir(f.p); d != filepath.Join(f.cfg.ProjectsDir, "demo") {
		t.Errorf("StorageDir = %q", d)
	}
}

func TestExecDetails(t *testing.T) {
	f := newFixture(t)
	c := engine.Container{Name: "x", Directory: "."}
	run := func(req engine.ExecRequest) engine.ExecResult {
		t.Helper()
		res, err := f.r.Exec(t.Context(), f.p, c, req)
		if err != nil {
			t.Fatalf("Exec %q: %v", req.Argv, err)
		}
		return res
	}
	// Exec needs no running container here.
	if res := run(engine.ExecRequest{Argv: []string{"no-such-cmd-xyz"}}); res.ExitCode != engine.ExitNotFound || !strings.Contains(string(res.Stderr), "not found") {
		t.Errorf("missing command: %+v", res)
	}
	if res := run(engine.ExecRequest{Argv: []string{"./nope.sh"}}); res.ExitCode != engine.ExitNotFound {
		t.Errorf("missing relative command: %+v", res)
	}
	if err := os.WriteFile(f.path("plain.sh"), []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(engine.ExecRequest{Argv: []string{"./plain.sh"}}); res.ExitCode != engine.ExitCannotExecute {
		t.Errorf("non-executable command: %+v", res)
	}
	if err := os.Chmod(f.path("plain.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res := run(engine.ExecRequest{Argv: []string{"./plain.sh"}}); res.ExitCode != 0 || string(res.Stdout) != "hi\n" {
		t.Errorf("relative command: %+v", res)
	}
	// PATH from the request is where the command is looked up.
	if err := os.MkdirAll(f.path("bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path("bin/only-here"), []byte("#!/bin/sh\necho found\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res := run(engine.ExecRequest{Argv: []string{"only-here"}, Env: map[string]string{"PATH": f.path("bin") + ":/usr/bin:/bin"}}); string(res.Stdout) != "found\n" {
		t.Errorf("lookup in the request's PATH: %+v", res)
	}
	if res := run(engine.ExecRequest{Argv: []string{"sh", "-c", "kill -9 $$"}}); res.ExitCode != 128+9 {
		t.Errorf("killed by SIGKILL: exit code %d, want 137", res.ExitCode)
	}
	// A background process holding the pipes does not hold up the result.
	start := time.Now()
	res := run(engine.ExecRequest{Argv: []string{"sh", "-c", "sleep 30 & echo $! > bg.pid; echo started"}})
	if res.ExitCode != 0 || string(res.Stdout) != "started\n" || time.Since(start) > 10*time.Second {
		t.Errorf("command leaving a background process: %+v after %v", res, time.Since(start))
	}
	bg := readPidFile(t, f.path("bg.pid"))
	_ = syscall.Kill(bg, syscall.SIGKILL)

	// Cancelling the context kills the command and reports the context's error.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err := f.r.Exec(ctx, f.p, c, engine.ExecRequest{Argv: []string{"sh", "-c", "echo $$ > cancelled.pid; sleep 60"}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("cancelled exec: %v after %v", err, time.Since(start))
	}
	if pid := readPidFile(t, f.path("cancelled.pid")); running(pid) {
		t.Errorf("cancelled exec left its process running")
	}
	_, err = f.r.Exec(t.Context(), f.p, c, engine.ExecRequest{Argv: []string{"true"}, Dir: "nodir"})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("exec in a missing dir: %v", err)
	}
	_, err = f.r.Exec(t.Context(), f.p, c, engine.ExecRequest{Argv: []string{"echo", "a\x00b"}})
	if !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("exec with NUL in argv: %v", err)
	}
}

// TestResolve: the runtime's file operations refuse what hostfs refuses, in its words
// (hostfstest.Resolve).
func TestResolve(t *testing.T) {
	f := newFixture(t)
	hostfstest.Resolve(t, f.r.StorageDir(f.p), projectFiles{f.r, f.p})
}

// projectFiles is the file API of one project of a runtime.
type projectFiles struct {
	r *Runtime
	p engine.Project
}

func (pf projectFiles) ReadFile(ctx context.Context, name string, w io.Writer) error {
	return pf.r.ReadFile(ctx, pf.p, name, w)
}

func (pf projectFiles) WriteFile(ctx context.Context, name string, r io.Reader) error {
	return pf.r.WriteFile(ctx, pf.p, name, r)
}

func TestLogsFollowTruncateRotate(t *testing.T) {
	f := newFixture(t)
	c := engine.Container{Name: "rot"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The log does not exist yet: following waits for it.
	rc, err := f.r.Logs(ctx, f.p, c, engine.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := rc.Read(buf)
			if n > 0 {
				got <- string(buf[:n])
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	expect := func(want string) {
		t.Helper()
		var have string
		timeout := time.After(10 * time.Second)
		for have != want {
			select {
			case s, ok := <-got:
				if !ok {
					t.Fatalf("stream ended; have %q, want %q", have, want)
				}
				have += s
			case <-timeout:
				t.Fatalf("have %q, want %q", have, want)
			}
		}
	}
	path := f.r.logPath("demo", "rot")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	appendLog := func(s string) {
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		fh.WriteString(s)
		fh.Close()
	}
	appendLog("one\n")
	expect("one\n")
	appendLog("two\n")
	expect("two\n")
	// Truncated in place (copytruncate), then written again.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * followPoll)
	appendLog("3\n")
	expect("3\n")
	// Rotated: a new file under the same name.
	appendLog("last of old\n")
	expect("last of old\n")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendLog("first of new\n")
	expect("first of new\n")
	cancel()
	select {
	case _, ok := <-got:
		for ok {
			_, ok = <-got
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with its context")
	}
	// Without follow, a missing log is empty.
	rc2, err := f.r.Logs(t.Context(), f.p, engine.Container{Name: "never"}, engine.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rc2); len(b) != 0 {
		t.Errorf("missing log reads %q", b)
	}
	rc2.Close()
}

func TestDescribe(t *testing.T) {
	f := newFixture(t)
	st := f.start("web", "exec sleep 300")
	cs := []engine.Container{{Name: "web"}, {Name: "api"}}
	out, err := f.r.Describe(t.Context(), f.p, cs)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	for _, want := range []string{"demo", "web", "running", strconv.Itoa(st.PID), strconv.Itoa(st.HostPort), "app 5173", st.URL, "sleep 300", "api", "stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("Describe lacks %q:\n%s", want, out)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestCloneInto(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed for this test: %v", err)
	}
	f := newFixture(t)
	src := t.TempDir()
	git(t, src, "init", "-q")
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("# template\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, src, "add", ".")
	git(t, src, "commit", "-q", "-m", "one")
	git(t, src, "checkout", "-q", "-b", "feature")
	if err := os.WriteFile(filepath.Join(src, "feature.txt"), []byte("feature\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, src, "add", ".")
	git(t, src, "commit", "-q", "-m", "two")
	git(t, src, "checkout", "-q", "main")
	bare := filepath.Join(t.TempDir(), "repo.git")
	git(t, src, "clone", "-q", "--bare", src, bare)
	url := "file://" + bare
	ctx := t.Context()

	if err := f.r.CloneInto(ctx, f.p, "app", url, ""); err != nil {
		t.Fatalf("CloneInto: %v", err)
	}
	if b, err := os.ReadFile(f.path("app/README.md")); err != nil || string(b) != "# template\n" {
		t.Errorf("cloned README: %q, %v", b, err)
	}
	if _, err := os.Stat(f.path("app/feature.txt")); err == nil {
		t.Errorf("default clone has the feature branch's file")
	}
	if _, err := os.Stat(f.path("app/.git")); err != nil {
		t.Errorf("clone has no .git: %v", err)
	}
	err := f.r.CloneInto(ctx, f.p, "app", url, "")
	if !errors.Is(err, engine.ErrExists) {
		t.Errorf("second CloneInto into a full dir: %v, want ErrExists", err)
	}
	if err := os.MkdirAll(f.path("nested/empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.r.CloneInto(ctx, f.p, "nested/empty", url, "feature"); err != nil {
		t.Fatalf("CloneInto an empty dir with a branch: %v", err)
	}
	if _, err := os.Stat(f.path("nested/empty/feature.txt")); err != nil {
		t.Errorf("branch clone lacks feature.txt: %v", err)
	}
	if err := f.r.CloneInto(ctx, f.p, "../out", url, ""); !errors.Is(err, engine.ErrBadPath) {
		t.Errorf("CloneInto ../out: %v", err)
	}
	if err := f.r.CloneInto(ctx, f.p, "x", url, "--upload-pack=evil"); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("CloneInto with an option as branch: %v", err)
	}
	if err := f.r.CloneInto(ctx, f.p, "x", "--upload-pack=evil", ""); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("CloneInto with an option as URL: %v", err)
	}
	if err := f.r.CloneInto(ctx, f.p, "broken", "file://"+filepath.Join(t.TempDir(), "none.git"), ""); err == nil {
		t.Errorf("CloneInto of a missing repository succeeded")
	}
	// Into the project root of another (empty) project.
	p2 := engine.Project{ID: "id-root", Slug: "rootclone"}
	if err := f.r.EnsureProject(ctx, p2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.r.DestroyProject(context.Background(), p2, nil) })
	if err := f.r.CloneInto(ctx, p2, ".", url, ""); err != nil {
		t.Fatalf("CloneInto the project root: %v", err)
	}
	ents, _ := os.ReadDir(f.r.StorageDir(p2))
	var rootNames []string
	for _, e := range ents {
		rootNames = append(rootNames, e.Name())
	}
	if strings.Join(rootNames, ",") != ".git,README.md" {
		t.Errorf("project root after the clone holds %v", rootNames)
	}
	// Failed clones leave nothing behind.
	ents, _ = os.ReadDir(f.r.StorageDir(f.p))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "app,nested" {
		t.Errorf("project holds %v after the clones", names)
	}
}

func TestCloneRedactsCredentials(t *testing.T) {
	f := newFixture(t)
	// Port 1 on loopback: refused at once, no network needed.
	err := f.r.CloneInto(t.Context(), f.p, "app", "https://user:s3cr3t-token@127.0.0.1:1/repo.git", "")
	if err == nil {
		t.Fatal("clone from a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error shows the credential: %v", err)
	}
	if !strings.Contains(err.Error(), "***@127.0.0.1:1") {
		t.Errorf("error does not name the (redacted) URL: %v", err)
	}
	if _, serr := os.Stat(f.path("app")); serr == nil {
		t.Errorf("failed clone left the directory")
	}
	err = f.r.CloneInto(t.Context(), f.p, "app", "https://user:s3cr3t@bad host/x", "")
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("unparsable URL: %v", err)
	}
}

// TestCloneCredentialPath checks how the credential reaches git, with a fake git on PATH: not
// in its arguments, but through GIT_ASKPASS; and a git that prints it anyway is redacted.
func TestCloneCredentialPath(t *testing.T) {
	f := newFixture(t)
	bin := t.TempDir()
	trace := filepath.Join(bin, "trace")
	fake := `#!/bin/sh
printf '%s\n' "$@" > "` + trace + `.args"
"$GIT_ASKPASS" "Username for 'https://127.0.0.1': " > "` + trace + `.user"
"$GIT_ASKPASS" "Password for 'https://127.0.0.1': " > "` + trace + `.pass"
echo "fatal: unable to access 'https://tok:s3cr3t@127.0.0.1/r.git/': s3cr3t rejected" >&2
exit 128
`
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	err := f.r.CloneInto(t.Context(), f.p, "app", "https://tok:s3cr3t@127.0.0.1/r.git", "main")
	if err == nil {
		t.Fatal("clone with a failing git succeeded")
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error shows the credential: %v", err)
	}
	args, _ := os.ReadFile(trace + ".args")
	if strings.Contains(string(args), "s3cr3t") || strings.Contains(string(args), "tok") {
		t.Errorf("credential in git's arguments:\n%s", args)
	}
	if !strings.Contains(string(args), "https://127.0.0.1/r.git") || !strings.Contains(string(args), "credential.helper=") {
		t.Errorf("git arguments:\n%s", args)
	}
	user, _ := os.ReadFile(trace + ".user")
	pass, _ := os.ReadFile(trace + ".pass")
	if string(user) != "tok\n" || string(pass) != "s3cr3t\n" {
		t.Errorf("askpass answered %q / %q", user, pass)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:token@github.com/o/r.git":          "https://***@github.com/o/r.git",
		"https://ghp_abc@github.com/o/r":                 "https://***@github.com/o/r",
		"https://github.com/o/r":                         "https://github.com/o/r",
		"git@github.com:o/r.git":                         "git@github.com:o/r.git",
		"fatal: 'https://a:b@h/x' and http://c:d@e/ too": "fatal: 'https://***@h/x' and http://***@e/ too",
		"https://u:p@ss@host/path?q=a@b":                 "https://***@host/path?q=a@b",
		"HTTPS://U:P@HOST/x":                             "HTTPS://***@HOST/x",
		"no url here, just mail@example.com and a:b@c.d": "no url here, just mail@example.com and a:b@c.d",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A command the table shortens (a long line, a script of several) is written out whole.
func TestDescribeWholeCommand(t *testing.T) {
	f := newFixture(t)
	long := "# start the dev server\nexport GREETING=" + strings.Repeat("x", 70) + "\nexec sleep 300"
	f.start("web", long)
	out, err := f.r.Describe(t.Context(), f.p, []engine.Container{{Name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "command of web:\n  # start the dev server\n  export GREETING=" + strings.Repeat("x", 70) + "\n  exec sleep 300\n"
	if !strings.Contains(out, want) {
		t.Errorf("Describe does not show the whole command:\n%s", out)
	}
}
