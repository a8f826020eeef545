package engine_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// plainExec is a runtime that cannot attach an exec's streams (as kubernetes today): the
// embedded Runtime hides every capability of the one under it, ExecStreamer included.
type plainExec struct{ engine.Runtime }

// Input given to a runtime that cannot pass it is refused before the command runs, saying
// what to do; without input the command runs and its output reaches the streams. A runtime
// that can (local) hands the input to the command to its end.
func TestExecStreamInput(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	plain := openTest(t, state, "plain", func(c *engine.Config) { c.Runtime = plainExec{c.Runtime} }).eng
	p := enginetest.NewProject(t, plain, "piped")
	if _, err := plain.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "web", Directory: ".", Command: "sleep 600"}); err != nil {
		t.Fatal(err)
	}
	argv := []string{"sh", "-c", "echo ran > ran.txt; cat"}
	var out, errs bytes.Buffer
	_, err := plain.ExecStream(ctx, p.Slug, "web", engine.ExecRequest{Argv: argv},
		engine.ExecStreams{Stdin: strings.NewReader("a\nb\n"), Stdout: &out, Stderr: &errs})
	if !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "cannot pass input") || !strings.Contains(err.Error(), "files put") {
		t.Fatalf("input to a runtime that cannot pass it: %v, want ErrBadInput saying so and what to do", err)
	}
	if err := plain.ReadFile(ctx, p.Slug, "ran.txt", &out); err == nil {
		t.Fatal("the refused command ran")
	}
	out.Reset()

	res, err := plain.ExecStream(ctx, p.Slug, "web", engine.ExecRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2"}},
		engine.ExecStreams{Stdout: &out, Stderr: &errs})
	if err != nil || res.ExitCode != 0 || out.String() != "out\n" || errs.String() != "err\n" {
		t.Fatalf("without input: %+v, %v, stdout %q stderr %q", res, err, out.String(), errs.String())
	}

	local := openTest(t, state, "local").eng
	out.Reset()
	res, err = local.ExecStream(ctx, p.Slug, "web", engine.ExecRequest{Argv: []string{"cat"}},
		engine.ExecStreams{Stdin: strings.NewReader("a\nb\n"), Stdout: &out, Stderr: &errs})
	if err != nil || res.ExitCode != 0 || out.String() != "a\nb\n" {
		t.Fatalf("local exec with input: %+v, %v, stdout %q", res, err, out.String())
	}
}
