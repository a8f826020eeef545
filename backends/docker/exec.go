package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/capped"
	"github.com/sailtui/sailtui/engine/containerexec"
)

// Exec runs req.Argv through the Engine API in the running container, as the container user,
// in the container's directory joined with req.Dir (which must stay inside the project), with
// the container's environment and req.Env on top. argv goes to the program as given: it is
// run by `exec "$@"` of the image's sh, so a missing program gives 127 as in a shell.
//
//   - A command that exits with status n gives ExitCode n and a nil error.
//   - req.Timeout, when set, kills the command and every process it started: TimedOut is set,
//     ExitCode is 124.
//   - ctx ending kills them too, and returns ctx's error.
//   - stdout and stderr are each capped at req.MaxOutput (DefaultMaxOutput when <= 0); output
//     past the cap is read and dropped, and Truncated set.
//
// A container that is not running gives an error wrapping engine.ErrBadState.
func (r *Runtime) Exec(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest) (engine.ExecResult, error) {
	res, err := r.exec(ctx, p, c, req, nil)
	if err != nil {
		return res, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	return res, nil
}

var _ engine.ExecStreamer = (*Runtime)(nil)

// ExecStream implements engine.ExecStreamer: Exec with s attached, as `docker exec -i` runs a
// command. The command reads s.Stdin to its end (its stdin is closed then), and its output is
// copied to s.Stdout and s.Stderr frame by frame as the engine delivers it, uncapped. No TTY is
// allocated: the command's streams are pipes.
func (r *Runtime) ExecStream(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest, s engine.ExecStreams) (engine.ExecResult, error) {
	res, err := r.exec(ctx, p, c, req, &s)
	if err != nil {
		return res, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	return res, nil
}

// execTarget is where and how an exec of a request runs in a container.
type execTarget struct {
	containerID   string
	user, workDir string
	env           []string
	// marker is in the command's environment, so a kill finds all it started.
	marker string
}

// target checks req and finds the running container it runs in.
func (r *Runtime) target(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest) (execTarget, error) {
	if err := req.Validate(); err != nil {
		return execTarget{}, err
	}
	if err := engine.CheckContainerName(c.Name); err != nil {
		return execTarget{}, err
	}
	dir, err := r.projectDir(ctx, p)
	if err != nil {
		return execTarget{}, err
	}
	cdir, err := engine.CleanRel(c.Directory)
	if err != nil {
		return execTarget{}, fmt.Errorf("container directory: %w", err)
	}
	sub, err := engine.CleanRel(req.Dir)
	if err != nil {
		return execTarget{}, fmt.Errorf("working directory: %w", err)
	}
	// A service runs as its image says: the command too, as its user, and in its data
	// directory (the project's tree is not mounted there).
	x := execTarget{user: r.cfg.User, marker: containerexec.NewMarker()}
	if c.IsService() {
		x.user, x.workDir = "", path.Join(c.DataPath, sub)
	} else {
		work, err := r.tree(dir).Dir(path.Join(cdir, sub))
		if err != nil {
			return execTarget{}, err
		}
		x.workDir = path.Join(r.cfg.MountPath, work)
	}
	envm := map[string]string{}
	for k, v := range req.Env {
		envm[k] = v
	}
	if x.env, err = envList(envm); err != nil {
		return execTarget{}, err
	}
	x.env = append(x.env, x.marker)

	name := r.containerName(p, c)
	ins, err := r.inspect(ctx, name)
	if err != nil {
		return execTarget{}, err
	}
	if ins == nil || ins.State == nil || !ins.State.Running {
		return execTarget{}, fmt.Errorf("container %s is not running; start it first: %w", name, engine.ErrBadState)
	}
	if err := r.owns(p, ins); err != nil {
		return execTarget{}, err
	}
	x.containerID = ins.ID
	return x, nil
}

// exec runs req; with streams (ExecStream) attached to them instead of req.Stdin and capped
// buffers.
func (r *Runtime) exec(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest, streams *engine.ExecStreams) (engine.ExecResult, error) {
	x, err := r.target(ctx, p, c, req)
	if err != nil {
		return engine.ExecResult{}, err
	}
	out := capped.NewOutput(req.MaxOutput)
	var stdout, stderr io.Writer = out.Stdout, out.Stderr
	var stdin io.Reader
	if req.Stdin != nil {
		stdin = bytes.NewReader(req.Stdin)
	}
	if streams != nil {
		stdout, stderr, stdin = streams.Stdout, streams.Stderr, streams.Stdin
	}
	code, timedOut, err := r.run(ctx, x, req, runOptions{
		stdin: stdin,
		copyOut: func(from io.Reader) error {
			_, err := stdcopy.StdCopy(stdout, stderr, from)
			return err
		},
	})
	return out.Result(code, timedOut), err
}

// runOptions are the parts of an exec that differ between a plain one and a terminal's.
type runOptions struct {
	// tty allocates a terminal of size; its output is then one raw stream, not multiplexed.
	tty  bool
	size engine.TermSize
	// stdin is copied to the command and closed at its end; nil attaches none.
	stdin io.Reader
	// copyOut copies the attached output stream until it ends.
	copyOut func(io.Reader) error
	// started, when set, runs once the exec is created and attached (to follow resizes).
	started func(execID string)
}

// run runs req's argv at x and returns its exit code (124 and timedOut when req.Timeout
// killed it, -1 with an error when it could not be told).
func (r *Runtime) run(ctx context.Context, x execTarget, req engine.ExecRequest, o runOptions) (code int, timedOut bool, err error) {
	create := client.ExecCreateOptions{
		User:         x.user,
		AttachStdin:  o.stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          x.env,
		WorkingDir:   x.workDir,
		Cmd:          append([]string{"sh", "-c", `exec "$@"`, "sh"}, req.Argv...),
	}
	var attach client.ExecAttachOptions
	if o.tty {
		size := client.ConsoleSize{Height: uint(o.size.Rows), Width: uint(o.size.Cols)}
		create.TTY, create.ConsoleSize = true, size
		attach.TTY, attach.ConsoleSize = true, size
	}
	created, err := r.cli.ExecCreate(ctx, x.containerID, create)
	if err != nil {
		return -1, false, fmt.Errorf("create exec: %w", err)
	}
	att, err := r.cli.ExecAttach(ctx, created.ID, attach)
	if err != nil {
		return -1, false, fmt.Errorf("start exec: %w", err)
	}
	defer att.Close()
	if o.stdin != nil {
		// Closed once the input ends, so a command reading to EOF ends too; one that exits
		// first ends the exec whatever is left unread (the copy stops with the connection).
		go func() {
			_, _ = io.Copy(att.Conn, o.stdin)
			_ = att.CloseWrite()
		}()
	}
	if o.started != nil {
		o.started(created.ID)
	}
	done := make(chan error, 1)
	go func() { done <- o.copyOut(att.Reader) }()

	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	kill := func() error {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := r.killExec(kctx, x.containerID, x.user, x.marker)
		// The streams end once the command and whatever held them are gone; a process that
		// escaped the kill must not hang the caller.
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			att.Close()
			<-done
		}
		return err
	}
	select {
	case err = <-done:
	case <-timeout:
		select {
		case err = <-done: // finished as the timer fired: not killed, not timed out
		default:
			if kerr := kill(); kerr != nil {
				return engine.ExitTimedOut, true, fmt.Errorf("timed out, and the command could not be killed: %w", kerr)
			}
			return engine.ExitTimedOut, true, nil
		}
	case <-ctx.Done():
		_ = kill()
		return -1, false, ctx.Err()
	}
	if err != nil {
		return -1, false, fmt.Errorf("read exec output: %w", err)
	}
	code, err = r.execExitCode(ctx, created.ID)
	if err != nil {
		return -1, false, err
	}
	return code, false, nil
}

// execExitCode waits for the engine to see the exec's end (its streams close a moment before)
// and returns its exit code.
func (r *Runtime) execExitCode(ctx context.Context, id string) (int, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ins, err := r.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
		if err != nil {
			return -1, fmt.Errorf("inspect exec: %w", err)
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		if time.Now().After(deadline) {
			return -1, errors.New("inspect exec: still running after its output ended")
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// killExec kills every process of the container carrying marker in its environment.
func (r *Runtime) killExec(ctx context.Context, containerID, user, marker string) error {
	created, err := r.cli.ExecCreate(ctx, containerID, client.ExecCreateOptions{
		User:         user,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          []string{"sh", "-c", containerexec.KillScript, "sh", marker},
	})
	if err != nil {
		return fmt.Errorf("create kill exec: %w", err)
	}
	att, err := r.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("start kill exec: %w", err)
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		return fmt.Errorf("kill exec: %w", err)
	}
	code, err := r.execExitCode(ctx, created.ID)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kill exec exited %d: %s", code, strings.TrimSpace(out.String()))
	}
	return nil
}
