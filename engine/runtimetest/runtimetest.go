// Package runtimetest is the contract every engine.Runtime passes: local now, docker and
// kubernetes later. It uses only the engine.Runtime interface and the Harness, so a runtime
// runs it unchanged from its own test:
//
//	func TestContract(t *testing.T) {
//		runtimetest.Run(t, runtimetest.Harness{New: newRuntime, ServeCommand: serve})
//	}
//
// What the suite assumes of a container's environment: a POSIX sh with cat, ln, rm, test,
// cut, head, yes and sleep (busybox will do), and a /proc that shows the container's processes.
//
// Conventions it pins down, so callers read every runtime alike:
//   - Exec: a command exiting with n gives ExitCode n and a nil error; a command that is not
//     found gives ExitCode 127 and a nil error; a timeout kills the command and everything it
//     started, sets TimedOut and gives ExitCode 124; stdout and stderr are capped separately
//     at MaxOutput and Truncated is set when anything was dropped.
//   - Exec's working directory is the container's directory joined with Dir; the environment
//     has PROJECT_ID, CONTAINER_NAME, PORT and the request's Env.
//   - A container that was never started, or was stopped, is "stopped"; one whose command ended
//     by itself is "exited" with its exit code.
//   - File paths that are absolute, contain "..", contain NUL or lead outside the project root
//     through a symlink are refused with engine.ErrBadPath, and nothing outside is touched.
//     Deleting a symlink removes the link, wherever it points. Missing files give
//     engine.ErrNotFound.
//   - A startup command that is empty is refused with engine.ErrBadInput.
package runtimetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Harness gives the suite a runtime to test.
type Harness struct {
	// New returns a runtime on fresh state. It is called once per test; whatever it starts
	// must be cleaned up through t.Cleanup. The suite destroys every project it creates.
	New func(t *testing.T) engine.Runtime
	// ServeCommand is a shell command that serves the files of its working directory over
	// HTTP on $PORT (a static file server), and runs until stopped.
	ServeCommand string
	// Reach, when set, turns a running container's status into the base URL this test
	// process can fetch it at (a cluster's Ingress host may not route from the test's host,
	// while the pod's own address does). Default: the status's URL.
	Reach func(t *testing.T, p engine.Project, c engine.Container, st engine.ContainerStatus) string
}

type test struct {
	name string
	fn   func(t *testing.T, e *env)
}

// Run runs the whole contract against h.
func Run(t *testing.T, h Harness) {
	if h.New == nil || h.ServeCommand == "" {
		t.Fatal("runtimetest: Harness needs New and ServeCommand")
	}
	groups := []struct {
		name  string
		tests []test
	}{
		{"Lifecycle", lifecycleTests},
		{"Exec", execTests},
		{"Terminal", terminalTests},
		{"Files", fileTests},
		{"Logs", logTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.fn(t, newEnv(t, h))
				})
			}
		})
	}
}

// env is one test's project on one runtime.
type env struct {
	t     *testing.T
	rt    engine.Runtime
	h     Harness
	p     engine.Project
	cs    []engine.Container
	token string
}

// patience bounds every wait of the suite; a runtime that needs longer is broken for an operator.
const patience = 30 * time.Second

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	rt := h.New(t)
	tok := randHex(4)
	e := &env{
		t:     t,
		rt:    rt,
		h:     h,
		token: tok,
		p: engine.Project{
			ID:        "rt-id-" + tok,
			Slug:      "rt" + tok,
			Name:      "runtimetest " + t.Name(),
			Owner:     "runtimetest",
			Status:    engine.StatusActive,
			CreatedAt: time.Now().UTC(),
		},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := rt.DestroyProject(ctx, e.p, e.cs); err != nil {
			t.Errorf("cleanup: DestroyProject: %v", err)
		}
	})
	if err := rt.EnsureProject(t.Context(), e.p); err != nil {
		t.Fatalf("EnsureProject: %v", err)
	}
	return e
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (e *env) ctx() context.Context { return e.t.Context() }

// reach is the base URL the test fetches the running container c at.
func (e *env) reach(c engine.Container, st engine.ContainerStatus) string {
	e.t.Helper()
	if e.h.Reach != nil {
		return e.h.Reach(e.t, e.p, c, st)
	}
	return st.URL
}

// container declares a container of the project (remembered for cleanup).
func (e *env) container(name, dir string) engine.Container {
	c := engine.Container{ProjectID: e.p.ID, Name: name, Directory: dir, CreatedAt: time.Now().UTC()}
	e.cs = append(e.cs, c)
	return c
}

// start starts c with command and fails the test on error.
func (e *env) start(c engine.Container, command string) engine.ContainerStatus {
	e.t.Helper()
	st, err := e.rt.StartContainer(e.ctx(), e.p, c, engine.StartSpec{Command: command, Port: 8080})
	if err != nil {
		e.t.Fatalf("StartContainer %s: %v", c.Name, err)
	}
	return st
}

// shell starts a long-running container (the serve command) in dir, for tests that need a
// container to exec in.
func (e *env) shell(name, dir string) engine.Container {
	e.t.Helper()
	if dir != "." {
		e.write(dir+"/.keep", "")
	}
	c := e.container(name, dir)
	e.start(c, e.h.ServeCommand)
	e.waitState(c, engine.ContainerRunning)
	return c
}

func (e *env) write(path, content string) {
	e.t.Helper()
	if err := e.rt.WriteFile(e.ctx(), e.p, path, strings.NewReader(content)); err != nil {
		e.t.Fatalf("WriteFile %q: %v", path, err)
	}
}

func (e *env) read(path string) string {
	e.t.Helper()
	var b bytes.Buffer
	if err := e.rt.ReadFile(e.ctx(), e.p, path, &b); err != nil {
		e.t.Fatalf("ReadFile %q: %v", path, err)
	}
	return b.String()
}

func (e *env) status(c engine.Container) engine.ContainerStatus {
	e.t.Helper()
	st, err := e.rt.ContainerStatus(e.ctx(), e.p, c)
	if err != nil {
		e.t.Fatalf("ContainerStatus %s: %v", c.Name, err)
	}
	return st
}

func (e *env) waitState(c engine.Container, state engine.ContainerState) engine.ContainerStatus {
	e.t.Helper()
	var st engine.ContainerStatus
	eventually(e.t, fmt.Sprintf("container %s %s", c.Name, state), func() bool {
		st = e.status(c)
		return st.State == state
	}, func() string { return fmt.Sprintf("last status %+v", st) })
	return st
}

// sh runs a shell script in c and fails the test unless it exits 0; it returns stdout.
func (e *env) sh(c engine.Container, script string) string {
	e.t.Helper()
	res, err := e.rt.Exec(e.ctx(), e.p, c, engine.ExecRequest{Argv: []string{"sh", "-c", script}, Timeout: patience})
	if err != nil {
		e.t.Fatalf("Exec %q: %v", script, err)
	}
	if res.ExitCode != 0 {
		e.t.Fatalf("Exec %q: exit code %d, stderr %q", script, res.ExitCode, res.Stderr)
	}
	return string(res.Stdout)
}

// eventually polls cond until it holds or patience runs out.
func eventually(t *testing.T, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			if detail != nil {
				msg = ": " + detail()
			}
			t.Fatalf("timed out after %v waiting for %s%s", patience, what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func wantErr(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: error %v, want one wrapping %q", what, err, sentinel)
	}
}

var httpClient = &http.Client{Timeout: 3 * time.Second}

// get fetches url and returns the status code and body (0 when the request failed).
func get(url string) (int, string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func fileURL(base, name string) string {
	return strings.TrimSuffix(base, "/") + "/" + name
}
