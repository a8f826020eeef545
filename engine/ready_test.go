package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// With SAILTUI_TEST_LISTEN set, the test binary is a container that accepts connections on
// $HOST:$PORT after that long, as a dev server does once it has compiled.
func TestMain(m *testing.M) {
	if d := os.Getenv("SAILTUI_TEST_LISTEN"); d != "" {
		listenForTest(d)
	}
	os.Exit(m.Run())
}

func listenForTest(after string) {
	d, err := time.ParseDuration(after)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("compiling")
	time.Sleep(d)
	l, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("HOST"), os.Getenv("PORT")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening on", l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		_ = c.Close()
	}
}

// serve is a container command that listens on its PORT at once and runs until stopped: the
// command of every test container with a port, which a start waits to answer.
func serve(t *testing.T) string { return listenCommand(t, 0) }

// listenCommand is a container command that listens on its PORT after delay.
func listenCommand(t *testing.T, delay time.Duration) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("SAILTUI_TEST_LISTEN=%s exec '%s'", delay, exe)
}

// startOne creates a project of one container running command and starts it.
func startOne(t *testing.T, p *parts, name, command string) (engine.Project, error) {
	t.Helper()
	pr, err := p.eng.CreateProject(t.Context(), engine.CreateRequest{Name: name, Owner: "alice",
		Containers: []engine.ContainerSpec{{Name: "web", Directory: ".", Command: command, Port: 8080}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.eng.StartProject(t.Context(), pr.Slug)
	got, gerr := p.eng.Project(t.Context(), pr.Slug)
	if gerr != nil {
		t.Fatal(gerr)
	}
	return got, err
}

// A container whose command exits at once fails the start: the error names it, its exit code
// and its last log lines, and the project does not read as active.
func TestStartFailsWhenContainerExits(t *testing.T) {
	p := openTest(t, t.TempDir(), "me")
	begun := time.Now()
	pr, err := startOne(t, p, "quits", "echo first words; echo missing-binary: not found >&2; exit 3")
	if !errors.Is(err, engine.ErrNotUp) {
		t.Fatalf("start of a container that exits: %v, want ErrNotUp", err)
	}
	for _, want := range []string{"start quits/web", "exited at once with code 3", "first words", "missing-binary: not found", "sailtui logs quits web"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if took := time.Since(begun); took > 30*time.Second {
		t.Errorf("a container that exits at once took %s to be reported", took)
	}
	if pr.Status != engine.StatusActive || !engine.StartFailed(pr) || engine.DisplayStatus(pr) != "start failed" ||
		!strings.Contains(pr.StatusReason, "web: it exited at once with code 3") || strings.Contains(pr.StatusReason, "\n") {
		t.Fatalf("project after the failed start: %s %q (shown %q)", pr.Status, pr.StatusReason, engine.DisplayStatus(pr))
	}
	_, cs, err := p.eng.ProbeContainers(t.Context(), pr.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if st := cs[0].Status; st.State != engine.ContainerExited || st.ExitCode != 3 || st.PortAnswers != nil {
		t.Fatalf("container after the failed start: %+v", st)
	}
}

// A container that runs but never listens on its port fails the start at the start timeout.
func TestStartFailsWhenPortNeverAnswers(t *testing.T) {
	p := openTest(t, t.TempDir(), "me", func(c *engine.Config) { c.StartTimeout = 2 * time.Second })
	begun := time.Now()
	pr, err := startOne(t, p, "mute", "echo still installing; exec sleep 600")
	took := time.Since(begun)
	if !errors.Is(err, engine.ErrNotUp) {
		t.Fatalf("start of a container that never listens: %v, want ErrNotUp", err)
	}
	for _, want := range []string{"start mute/web", "did not accept connections on port 8080 within the start timeout 2s", "still installing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if took < 2*time.Second || took > 20*time.Second {
		t.Errorf("the start gave up after %s, want the 2s timeout", took)
	}
	if !engine.StartFailed(pr) {
		t.Fatalf("project after the failed start: %s %q", pr.Status, pr.StatusReason)
	}
	_, cs, err := p.eng.ProbeContainers(t.Context(), pr.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if st := cs[0].Status; st.State != engine.ContainerRunning || st.PortAnswers == nil || *st.PortAnswers {
		t.Fatalf("a running container whose port does not answer: %+v", st)
	}
}

// A container that listens after a while (a dev server compiling) is waited for: the start
// returns once its port answers, and the project is active with no reason. A start that then
// succeeds clears the reason a failed one left.
func TestStartWaitsForPort(t *testing.T) {
	p := openTest(t, t.TempDir(), "me")
	begun := time.Now()
	pr, err := startOne(t, p, "slow", listenCommand(t, 1500*time.Millisecond))
	if err != nil {
		t.Fatalf("start of a container that listens: %v", err)
	}
	if took := time.Since(begun); took < 1500*time.Millisecond {
		t.Errorf("the start returned after %s, before the container listened", took)
	}
	if pr.Status != engine.StatusActive || engine.StartFailed(pr) || pr.StatusReason != "" {
		t.Fatalf("project after the start: %s %q", pr.Status, pr.StatusReason)
	}
	_, cs, err := p.eng.ProbeContainers(t.Context(), pr.Slug)
	if err != nil {
		t.Fatal(err)
	}
	st := cs[0].Status
	if st.State != engine.ContainerRunning || st.PortAnswers == nil || !*st.PortAnswers {
		t.Fatalf("a listening container: %+v", st)
	}
	if _, plain, err := p.eng.Containers(t.Context(), pr.Slug); err != nil || plain[0].Status.PortAnswers != nil {
		t.Fatalf("Containers probed the port (only ProbeContainers does): %+v %v", plain, err)
	}
}

// A container started on its own is waited for in the same way, and a dependency that does
// not come up keeps what depends on it from starting.
func TestStartContainerWaitsAndDependencies(t *testing.T) {
	p := openTest(t, t.TempDir(), "me")
	ctx := t.Context()
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "deps", Owner: "alice", Containers: []engine.ContainerSpec{
		{Name: "db", Directory: ".", Command: "echo db cannot start; exit 7", Port: 5432},
		{Name: "app", Directory: ".", Command: listenCommand(t, 0), Port: 3000},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.eng.Connect(ctx, pr.Slug, "app", "db"); err != nil {
		t.Fatal(err)
	}
	_, err = p.eng.StartProject(ctx, pr.Slug)
	if !errors.Is(err, engine.ErrNotUp) || !strings.Contains(err.Error(), "start deps/db: it exited at once with code 7") ||
		!strings.Contains(err.Error(), "start deps/app: not started: it depends on db, which did not come up") {
		t.Fatalf("start with a failing dependency: %v", err)
	}
	if _, err := p.eng.StartContainer(ctx, pr.Slug, "db"); !errors.Is(err, engine.ErrNotUp) || !strings.Contains(err.Error(), "with code 7") {
		t.Fatalf("container start of one that exits: %v", err)
	}
	st, err := p.eng.StartContainer(ctx, pr.Slug, "app")
	if err != nil || st.State != engine.ContainerRunning {
		t.Fatalf("container start of one that listens: %+v %v", st, err)
	}
	got, err := p.eng.Project(ctx, pr.Slug)
	if err != nil || engine.StartFailed(got) {
		t.Fatalf("after a container start that succeeded: %+v %v", got, err)
	}
}

// A dependency that fails to start at all (docker: its create fails; here: its directory is
// missing) keeps what depends on it from starting, and what depends on that, as one that
// exits does: each is named with the container it waits for and why that one is not up.
func TestStartSkipsDependentsOfFailedStart(t *testing.T) {
	p := openTest(t, t.TempDir(), "me")
	ctx := t.Context()
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "chain", Owner: "alice", Containers: []engine.ContainerSpec{
		{Name: "kv", Directory: "kv", Command: serve(t), Port: 6379},
		{Name: "api", Directory: ".", Command: serve(t), Port: 8000},
		{Name: "web", Directory: ".", Command: serve(t), Port: 3000},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, cn := range [][2]string{{"api", "kv"}, {"web", "api"}} {
		if err := p.eng.Connect(ctx, pr.Slug, cn[0], cn[1]); err != nil {
			t.Fatal(err)
		}
	}
	_, err = p.eng.StartProject(ctx, pr.Slug)
	if !errors.Is(err, engine.ErrNotUp) {
		t.Fatalf("start with a dependency that cannot start: %v, want ErrNotUp", err)
	}
	for _, want := range []string{
		"start chain/kv: ",
		"start chain/api: not started: it depends on kv, which failed to start (",
		"start chain/web: not started: it depends on api, which was not started (it depends on kv)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	t.Logf("the start's error:\n%v", err)
	_, cs, err := p.eng.Containers(ctx, pr.Slug)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Status.State == engine.ContainerRunning {
			t.Errorf("%s runs after its dependency failed to start: %+v", c.Name, c.Status)
		}
	}
}

// A container without a declared port (only the fallback default) is up once it has run a
// moment without exiting; one that ends at once, even with code 0, fails the start.
func TestStartWithoutPortSettles(t *testing.T) {
	p := openTest(t, t.TempDir(), "me")
	ctx := t.Context()
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "workers", Owner: "alice", Containers: []engine.ContainerSpec{
		{Name: "worker", Directory: ".", Command: "exec sleep 600"},
		{Name: "oneshot", Directory: ".", Command: "true"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.eng.StartProject(ctx, pr.Slug)
	if !errors.Is(err, engine.ErrNotUp) || !strings.Contains(err.Error(), "start workers/oneshot: it exited at once with code 0") ||
		strings.Contains(err.Error(), "start workers/worker") || !strings.Contains(err.Error(), "other containers run (worker); sailtui project stop workers stops them") {
		t.Fatalf("start of a worker and a command that ends: %v", err)
	}
	if _, err := p.eng.StartContainer(ctx, pr.Slug, "worker"); err != nil {
		t.Fatalf("start of a running worker: %v", err)
	}
}

// restartingRuntime reports the container named flaky as running again, a new run at each
// look, for its first window after the first look: a command that exits at once under a
// restart policy, each look landing on one of its short runs. Then it tells the truth.
type restartingRuntime struct {
	engine.Runtime
	window time.Duration
	first  *time.Time
}

func (r restartingRuntime) ContainerStatus(ctx context.Context, p engine.Project, c engine.Container) (engine.ContainerStatus, error) {
	if c.Name == "flaky" {
		if r.first.IsZero() {
			*r.first = time.Now()
		}
		if time.Since(*r.first) < r.window {
			return engine.ContainerStatus{Name: c.Name, State: engine.ContainerRunning, StartedAt: time.Now()}, nil
		}
	}
	return r.Runtime.ContainerStatus(ctx, p, c)
}

// A container seen running at every look, but a new run each time, has not stayed up: the
// start keeps looking, and fails once it sees the container exited, with its code (docker's
// unless-stopped restarts a command that ends within the second a start waits).
func TestStartSeesRestartsAsExits(t *testing.T) {
	var first time.Time
	p := openTest(t, t.TempDir(), "me", func(c *engine.Config) {
		c.Runtime = restartingRuntime{Runtime: c.Runtime, window: 2*engine.DefaultStartSettle + 500*time.Millisecond, first: &first}
	})
	ctx := t.Context()
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "restarts", Owner: "alice", Containers: []engine.ContainerSpec{
		{Name: "flaky", Directory: ".", Command: "true"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.eng.StartProject(ctx, pr.Slug)
	if !errors.Is(err, engine.ErrNotUp) || !strings.Contains(err.Error(), "start restarts/flaky: it exited") || !strings.Contains(err.Error(), "with code 0") {
		t.Fatalf("start of a container that restarts between looks: %v", err)
	}
}

// One that keeps being restarted until the start timeout fails it saying so.
func TestStartTimeoutNamesRestarts(t *testing.T) {
	var first time.Time
	p := openTest(t, t.TempDir(), "me", func(c *engine.Config) {
		c.StartTimeout = 2 * time.Second
		c.Runtime = restartingRuntime{Runtime: c.Runtime, window: time.Hour, first: &first}
	})
	ctx := t.Context()
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "loop", Owner: "alice", Containers: []engine.ContainerSpec{
		{Name: "flaky", Directory: ".", Command: "exec sleep 600"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.eng.StartProject(ctx, pr.Slug)
	if !errors.Is(err, engine.ErrNotUp) || !strings.Contains(err.Error(), "start loop/flaky: it kept exiting: its runtime started it again at least") {
		t.Fatalf("start of a container restarted until the timeout: %v", err)
	}
}
