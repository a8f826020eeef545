package runtimetest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

var lifecycleTests = []test{
	{"ProjectLifecycle", testProjectLifecycle},
	{"StartStop", testStartStop},
	{"ServeAndStop", testServeAndStop},
	{"StartIdempotent", testStartIdempotent},
	{"NeverStarted", testNeverStarted},
	{"ExitedContainer", testExitedContainer},
	{"EmptyCommand", testEmptyCommand},
	{"ContainerEnv", testContainerEnv},
	{"DestroyRemovesStorage", testDestroyRemovesStorage},
}

// testStartStop checks the states a runtime reports without looking at what runs: a started
// container is not stopped, a second start is accepted, a stop makes it stopped.
func testStartStop(t *testing.T, e *env) {
	c := e.container("sleeper", ".")
	spec := engine.StartSpec{Command: "exec sleep 1000", Port: 3000}
	for i := range 2 {
		st, err := e.rt.StartContainer(e.ctx(), e.p, c, spec)
		if err != nil {
			t.Fatalf("StartContainer #%d: %v", i+1, err)
		}
		if st.State == engine.ContainerStopped {
			t.Fatalf("StartContainer #%d reports stopped: %+v", i+1, st)
		}
	}
	if st := e.status(c); st.State == engine.ContainerStopped {
		t.Fatalf("status after start: %+v", st)
	}
	if err := e.rt.StopContainer(e.ctx(), e.p, c); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if st := e.status(c); st.State != engine.ContainerStopped {
		t.Errorf("status after stop: %+v, want stopped", st)
	}
	if _, err := e.rt.StartContainer(e.ctx(), e.p, c, spec); err != nil {
		t.Fatalf("StartContainer after stop: %v", err)
	}
	if err := e.rt.StopProject(e.ctx(), e.p, e.cs); err != nil {
		t.Fatalf("StopProject: %v", err)
	}
	if st := e.status(c); st.State != engine.ContainerStopped {
		t.Errorf("status after StopProject: %+v, want stopped", st)
	}
}

func testProjectLifecycle(t *testing.T, e *env) {
	ctx := e.ctx()
	other := e.p
	other.ID, other.Slug = "rt-id-other-"+e.token, "rto"+e.token
	t.Cleanup(func() { _ = e.rt.DestroyProject(context.Background(), other, nil) })

	exists, err := e.rt.ProjectExists(ctx, other)
	if err != nil || exists {
		t.Fatalf("ProjectExists before EnsureProject = %v, %v; want false, nil", exists, err)
	}
	for i := range 2 {
		if err := e.rt.EnsureProject(ctx, other); err != nil {
			t.Fatalf("EnsureProject #%d: %v", i+1, err)
		}
	}
	exists, err = e.rt.ProjectExists(ctx, other)
	if err != nil || !exists {
		t.Fatalf("ProjectExists after EnsureProject = %v, %v; want true, nil", exists, err)
	}
	files, err := e.rt.ListFiles(ctx, other, "")
	if err != nil || len(files) != 0 {
		t.Fatalf("ListFiles of a new project = %v, %v; want empty", files, err)
	}
	for i := range 2 {
		if err := e.rt.DestroyProject(ctx, other, nil); err != nil {
			t.Fatalf("DestroyProject #%d: %v", i+1, err)
		}
	}
	exists, err = e.rt.ProjectExists(ctx, other)
	if err != nil || exists {
		t.Fatalf("ProjectExists after DestroyProject = %v, %v; want false, nil", exists, err)
	}
	// The suite's own project was untouched by all that.
	if exists, err := e.rt.ProjectExists(ctx, e.p); err != nil || !exists {
		t.Fatalf("another project's ProjectExists = %v, %v; want true, nil", exists, err)
	}
}

// waitServing polls url until it answers 200 with body.
func waitServing(t *testing.T, url, body string) {
	t.Helper()
	var code int
	var got string
	eventually(t, "GET "+url, func() bool {
		code, got = get(url)
		return code == 200 && got == body
	}, func() string { return "last answer: " + strings.TrimSpace(got) })
}

func testServeAndStop(t *testing.T, e *env) {
	const page = "<h1>hello from sailtui</h1>\n"
	e.write("web/index.html", page)
	c := e.container("web", "web")
	st := e.start(c, e.h.ServeCommand)
	if st.State != engine.ContainerRunning && st.State != engine.ContainerStarting {
		t.Fatalf("StartContainer state %q, want running (or starting)", st.State)
	}
	st = e.waitState(c, engine.ContainerRunning)
	if st.URL == "" {
		t.Fatalf("running container has no URL: %+v", st)
	}
	base := e.reach(c, st)
	waitServing(t, fileURL(base, "index.html"), page)

	// Files written while it runs are the files it serves.
	e.write("web/late.txt", "written later\n")
	waitServing(t, fileURL(base, "late.txt"), "written later\n")

	for i := range 2 {
		if err := e.rt.StopContainer(e.ctx(), e.p, c); err != nil {
			t.Fatalf("StopContainer #%d: %v", i+1, err)
		}
		if got := e.status(c); got.State != engine.ContainerStopped {
			t.Fatalf("status after StopContainer #%d: %+v, want stopped", i+1, got)
		}
	}
	eventually(t, "the stopped container to stop serving", func() bool {
		code, body := get(fileURL(base, "index.html"))
		return code != 200 || body != page
	}, nil)

	// And it comes back.
	st = e.start(c, e.h.ServeCommand)
	st = e.waitState(c, engine.ContainerRunning)
	waitServing(t, fileURL(e.reach(c, st), "index.html"), page)
}

func testStartIdempotent(t *testing.T, e *env) {
	c := e.shell("svc", "svc")
	first := e.status(c)
	for i := range 2 {
		st, err := e.rt.StartContainer(e.ctx(), e.p, c, engine.StartSpec{Command: e.h.ServeCommand, Port: 8080})
		if err != nil {
			t.Fatalf("StartContainer again #%d: %v", i+1, err)
		}
		if st.State != engine.ContainerRunning {
			t.Errorf("StartContainer on a running container: state %q, want running", st.State)
		}
		if st.URL != first.URL || st.HostPort != first.HostPort {
			t.Errorf("StartContainer on a running container moved it: %+v, was %+v", st, first)
		}
		if st.PID != 0 && first.PID != 0 && st.PID != first.PID {
			t.Errorf("StartContainer on a running container started another process: pid %d, was %d", st.PID, first.PID)
		}
	}
	// A different command does not replace a running container either.
	st, err := e.rt.StartContainer(e.ctx(), e.p, c, engine.StartSpec{Command: "sleep 1000", Port: 8080})
	if err != nil {
		t.Fatalf("StartContainer with another command: %v", err)
	}
	if st.PID != 0 && first.PID != 0 && st.PID != first.PID {
		t.Errorf("StartContainer with another command replaced the running one")
	}
}

func testNeverStarted(t *testing.T, e *env) {
	c := e.container("ghost", ".")
	if st := e.status(c); st.State != engine.ContainerStopped {
		t.Errorf("status of a container never started: %+v, want stopped", st)
	}
	for i := range 2 {
		if err := e.rt.StopContainer(e.ctx(), e.p, c); err != nil {
			t.Errorf("StopContainer of a container never started #%d: %v", i+1, err)
		}
	}
	if err := e.rt.StopProject(e.ctx(), e.p, e.cs); err != nil {
		t.Errorf("StopProject with nothing running: %v", err)
	}
}

func testExitedContainer(t *testing.T, e *env) {
	c := e.container("quitter", ".")
	e.start(c, "echo bye; exit 3")
	st := e.waitState(c, engine.ContainerExited)
	if st.ExitCode != 3 {
		t.Errorf("exited container: exit code %d, want 3 (%+v)", st.ExitCode, st)
	}
	// Stopping an exited container is allowed and makes it stopped.
	if err := e.rt.StopContainer(e.ctx(), e.p, c); err != nil {
		t.Fatalf("StopContainer of an exited container: %v", err)
	}
	if st := e.status(c); st.State != engine.ContainerStopped {
		t.Errorf("status after stopping an exited container: %+v, want stopped", st)
	}
	// It can be started again.
	e.start(c, "exit 0")
	e.waitState(c, engine.ContainerExited)
}

func testEmptyCommand(t *testing.T, e *env) {
	c := e.container("empty", ".")
	for _, cmd := range []string{"", "   \n\t"} {
		_, err := e.rt.StartContainer(e.ctx(), e.p, c, engine.StartSpec{Command: cmd, Port: 3000})
		wantErr(t, "StartContainer with an empty command", err, engine.ErrBadInput)
	}
	if st := e.status(c); st.State == engine.ContainerRunning {
		t.Errorf("refused container is running: %+v", st)
	}
}

// testContainerEnv checks what a started container's command sees: the caller's env, the
// container's env, and the runtime's PORT / PROJECT_ID / CONTAINER_NAME.
func testContainerEnv(t *testing.T, e *env) {
	e.write("app/.keep", "")
	c := e.container("envy", "app")
	c.Env = map[string]string{"FROM_CONTAINER": "c-value"}
	e.cs[len(e.cs)-1] = c
	spec := engine.StartSpec{
		Command: `echo "spec=$FROM_SPEC container=$FROM_CONTAINER project=$PROJECT_ID name=$CONTAINER_NAME port=${PORT:+set}"; exec sleep 1000`,
		Port:    4321,
		Env:     map[string]string{"FROM_SPEC": "s-value"},
	}
	if _, err := e.rt.StartContainer(e.ctx(), e.p, c, spec); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	want := "spec=s-value container=c-value project=" + e.p.ID + " name=envy port=set\n"
	var got string
	eventually(t, "the container's env line in its log", func() bool {
		got = readLogs(t, e, c, engine.LogOptions{})
		return got == want
	}, func() string { return "log: " + got })
}

func testDestroyRemovesStorage(t *testing.T, e *env) {
	e.write("keep/me.txt", "precious\n")
	c := e.shell("busy", "keep")
	if err := e.rt.DestroyProject(e.ctx(), e.p, e.cs); err != nil {
		t.Fatalf("DestroyProject: %v", err)
	}
	if exists, err := e.rt.ProjectExists(e.ctx(), e.p); err != nil || exists {
		t.Fatalf("ProjectExists after DestroyProject = %v, %v; want false, nil", exists, err)
	}
	if st := e.status(c); st.State == engine.ContainerRunning {
		t.Errorf("container still running after DestroyProject: %+v", st)
	}
	var b bytes.Buffer
	err := e.rt.ReadFile(e.ctx(), e.p, "keep/me.txt", &b)
	if err == nil {
		t.Errorf("ReadFile after DestroyProject succeeded: %q", b.String())
	}
	if err := e.rt.DestroyProject(e.ctx(), e.p, e.cs); err != nil {
		t.Fatalf("DestroyProject again: %v", err)
	}
	// A project made again under the same slug starts empty.
	if err := e.rt.EnsureProject(e.ctx(), e.p); err != nil {
		t.Fatalf("EnsureProject after DestroyProject: %v", err)
	}
	files, err := e.rt.ListFiles(e.ctx(), e.p, ".")
	if err != nil || len(files) != 0 {
		t.Fatalf("ListFiles of the recreated project = %v, %v; want empty", files, err)
	}
}
