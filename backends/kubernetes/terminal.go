package kubernetes

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/sailtui/sailtui/engine"
)

// ttyExecutor is an executor that can also run argv on a terminal: its stdin from stdin, its
// terminal's output to out, the terminal sized by sizes (as kubectl exec -it does).
type ttyExecutor interface {
	runTTY(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, out io.Writer, sizes remotecommand.TerminalSizeQueue) (int, error)
}

func (x *podExecutor) runTTY(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, out io.Writer, sizes remotecommand.TerminalSizeQueue) (int, error) {
	return x.stream(ctx, ns, pod, container, argv, remotecommand.StreamOptions{Stdin: stdin, Stdout: out, Tty: true, TerminalSizeQueue: sizes})
}

var _ engine.ExecTerminal = (*Runtime)(nil)

// ExecTerminal implements engine.ExecTerminal in the container's dev pod, as Exec runs a
// command there, on a terminal the kubelet allocates and resizes with every size t.Resize
// delivers. A timeout or ctx ending kills the command and all it started (found by the
// exec's marker variable, which job-control jobs inherit too).
func (r *Runtime) ExecTerminal(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest, t engine.Terminal) (engine.ExecResult, error) {
	tx, ok := r.exec.(ttyExecutor)
	if !ok {
		return engine.ExecResult{}, fmt.Errorf("exec in %s/%s: this runtime's executor cannot give a command a terminal: %w", p.Slug, c.Name, engine.ErrBadInput)
	}
	code, timedOut, err := r.runInDev(ctx, p, c, req, func(ctx context.Context, ns, pod string, argv []string) (int, error) {
		return tx.runTTY(ctx, ns, pod, "dev", argv, t.In, t.Out, &sizeQueue{first: t.StartSize(), sizes: t.Resize, done: ctx.Done()})
	})
	res := engine.ExecResult{ExitCode: code, TimedOut: timedOut}
	if err != nil {
		return res, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	return res, nil
}

// sizeQueue is a remotecommand.TerminalSizeQueue over a terminal's sizes: the first size,
// then each one sizes delivers, until done closes (Next then returns nil and the stream
// stops asking).
type sizeQueue struct {
	first   engine.TermSize
	started bool
	sizes   <-chan engine.TermSize
	done    <-chan struct{}
}

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	if !q.started {
		q.started = true
		return &remotecommand.TerminalSize{Width: q.first.Cols, Height: q.first.Rows}
	}
	for {
		select {
		case <-q.done:
			return nil
		case sz, ok := <-q.sizes:
			if !ok {
				return nil
			}
			if sz.Cols > 0 && sz.Rows > 0 {
				return &remotecommand.TerminalSize{Width: sz.Cols, Height: sz.Rows}
			}
		}
	}
}
