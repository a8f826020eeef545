package engine_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
	"github.com/sailtui/sailtui/engine/runtimetest"
)

// A shell on a terminal is an exec like any: it gets TERM, it holds a use of the project, and
// an operation that needs the project ends it with an error naming the operation; read-only
// mode refuses it.
func TestExecTerminalUnderTheFence(t *testing.T) {
	state := t.TempDir()
	writers := openTest(t, state, "writers").eng
	ops := openTest(t, state, "operator", func(c *engine.Config) { c.UseWait = 3 * time.Second }).eng
	ctx := context.Background()
	p := enginetest.NewProject(t, writers, "shell")
	if _, err := writers.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "web", Directory: ".", Command: "sleep 600"}); err != nil {
		t.Fatal(err)
	}
	in, typed := io.Pipe()
	defer in.Close()
	out := &runtimetest.SyncBuffer{}
	ended := make(chan error, 1)
	go func() {
		_, err := writers.ExecTerminal(ctx, p.Slug, "web", engine.ExecRequest{Argv: []string{"sh"}}, engine.Terminal{In: in, Out: out})
		ended <- err
	}()
	if _, err := io.WriteString(typed, `echo "$TERM-$((6*7))"`+"\r"); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); !strings.Contains(out.String(), "xterm-42"); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the shell did not answer with TERM=xterm: %q", out.String())
		}
	}
	// No timeout of its own: a shell left open past a command's 10 minutes would be cut; this
	// one stays until the hibernation needs the project.
	hib := make(chan error, 1)
	go func() { _, err := ops.Hibernate(ctx, p.Slug); hib <- err }()
	select {
	case err := <-ended:
		if !errors.Is(err, engine.ErrBusy) || !strings.Contains(err.Error(), "hibernate of shell needs the project") {
			t.Errorf("the shell ended by a hibernation: %v, want an error naming it", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the hibernation did not end the shell")
	}
	if err := <-hib; err != nil {
		t.Fatalf("hibernate after ending the shell: %v", err)
	}

	ro := openTest(t, state, "reader", func(c *engine.Config) { c.ReadOnly = true }).eng
	if _, err := ro.ExecTerminal(ctx, p.Slug, "web", engine.ExecRequest{Argv: []string{"sh"}}, engine.Terminal{Out: io.Discard}); !errors.Is(err, engine.ErrReadOnly) {
		t.Errorf("a terminal exec in read-only mode: %v, want ErrReadOnly", err)
	}
	if _, err := writers.ExecTerminal(ctx, p.Slug, "web", engine.ExecRequest{Argv: []string{"sh"}}, engine.Terminal{}); !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("a terminal exec with nowhere to write: %v, want ErrBadInput", err)
	}
}
