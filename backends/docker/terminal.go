package docker

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
)

var _ engine.ExecTerminal = (*Runtime)(nil)

// ExecTerminal implements engine.ExecTerminal as `docker exec -it` does: Exec's command, user,
// directory and environment, on a terminal the engine allocates (its stdout and stderr one raw
// stream), resized with every size t.Resize delivers. A timeout or ctx ending kills the command
// and all it started, job-control jobs included (they carry the exec's marker).
func (r *Runtime) ExecTerminal(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest, t engine.Terminal) (engine.ExecResult, error) {
	x, err := r.target(ctx, p, c, req)
	if err != nil {
		return engine.ExecResult{}, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	stop := make(chan struct{})
	defer close(stop)
	code, timedOut, err := r.run(ctx, x, req, runOptions{
		tty:   true,
		size:  t.StartSize(),
		stdin: t.In,
		copyOut: func(from io.Reader) error {
			_, err := io.Copy(t.Out, from)
			return err
		},
		started: func(id string) { go r.followResize(ctx, id, t.StartSize(), t.Resize, stop) },
	})
	res := engine.ExecResult{ExitCode: code, TimedOut: timedOut}
	if err != nil {
		return res, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	return res, nil
}

// followResize sizes the exec's terminal, then passes it each size from sizes until stop
// closes. The size given at creation does not reach the terminal on every engine version, and
// the first resize may come before the exec runs: it is tried a few times, as docker's own
// CLI does. A later resize that fails (the exec just ended) is dropped.
func (r *Runtime) followResize(ctx context.Context, id string, first engine.TermSize, sizes <-chan engine.TermSize, stop <-chan struct{}) {
	resize := func(sz engine.TermSize) error {
		_, err := r.cli.ExecResize(ctx, id, client.ExecResizeOptions{Height: uint(sz.Rows), Width: uint(sz.Cols)})
		return err
	}
	for range 10 {
		if resize(first) == nil {
			break
		}
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case sz, ok := <-sizes:
			if !ok {
				return
			}
			if sz.Cols > 0 && sz.Rows > 0 {
				_ = resize(sz)
			}
		}
	}
}
