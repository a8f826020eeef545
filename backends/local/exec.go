package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/capped"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// Exec runs req.Argv directly (no shell) in the container's directory joined with req.Dir
// (which must stay inside the project), with the container's environment (as StartContainer
// gives it, PORT being the container's recorded port if it has one) and req.Env on top.
//
// The command runs in a process group of its own. It does not need the container to be running.
//
//   - A command that exits with status n gives ExitCode n and a nil error; one killed by a
//     signal gives 128+signal.
//   - A command that is not found gives ExitCode 127 and one that cannot be executed 126, with
//     the reason in Stderr and a nil error, as a shell would: the command ran as far as it could.
//   - req.Timeout, when set, kills the whole process group: TimedOut is set, ExitCode is 124.
//   - ctx ending kills the group too, and returns ctx's error.
//   - stdout and stderr are each capped at req.MaxOutput (DefaultMaxOutput when <= 0); output
//     past the cap is read and dropped, and Truncated set.
//
// An error means the runtime could not run the command: a bad path or argument, a missing
// project or directory.
func (r *Runtime) Exec(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest) (engine.ExecResult, error) {
	res, err := r.exec(ctx, p, c, req, nil)
	if err != nil {
		return res, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	return res, nil
}

var _ engine.ExecStreamer = (*Runtime)(nil)

// ExecStream implements engine.ExecStreamer: Exec with s attached, as `docker exec -i` runs a
// command. The command reads s.Stdin to its end (its stdin is closed then) and its output is
// copied to s.Stdout and s.Stderr as it is written, uncapped. A command not found is reported
// on s.Stderr as a shell would.
func (r *Runtime) ExecStream(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest, s engine.ExecStreams) (engine.ExecResult, error) {
	res, err := r.exec(ctx, p, c, req, &s)
	if err != nil {
		return res, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	return res, nil
}

// exec runs req; with streams (ExecStream) attached to them instead of req.Stdin and capped
// buffers.
func (r *Runtime) exec(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest, streams *engine.ExecStreams) (engine.ExecResult, error) {
	cmd, notRun, err := r.command(p, c, req)
	if err != nil || notRun != nil {
		if notRun != nil && streams != nil && streams.Stderr != nil {
			_, _ = streams.Stderr.Write(notRun.Stderr)
			notRun.Stderr = nil
		}
		return deref(notRun), err
	}
	// What an exec whose client was killed outright left running goes now, at the latest.
	// Failing to end it is no reason to refuse this one; the project's stop tries again.
	_ = r.endSessions(p.Slug, true)
	out := capped.NewOutput(req.MaxOutput)
	result := out.Result
	cmd.Stdout, cmd.Stderr = out.Stdout, out.Stderr
	var stdin io.Reader
	if req.Stdin != nil {
		stdin = bytes.NewReader(req.Stdin)
	}
	if streams != nil {
		cmd.Stdout, cmd.Stderr, stdin = orDiscard(streams.Stdout), orDiscard(streams.Stderr), streams.Stdin
	}
	// Our own copy into a pipe, never the reader handed to the child: an *os.File would be
	// given as it is, and a terminal's (exec -i) read by a command in a group of its own stops
	// it (SIGTTIN). Wait closes the pipe once the command is gone and does not wait for the
	// copy, which may sit on a terminal nobody types into.
	var stdinPipe io.WriteCloser
	if stdin != nil {
		if stdinPipe, err = cmd.StdinPipe(); err != nil {
			return engine.ExecResult{}, fmt.Errorf("stdin pipe: %w", err)
		}
	}
	cmd.SysProcAttr = groupAttr()
	// A background process left by the command may hold our pipes open; do not wait on it
	// forever once the command itself has exited.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		res := notRunResult(req.Argv[0], err)
		if streams != nil && streams.Stderr != nil {
			_, _ = streams.Stderr.Write(res.Stderr)
			res.Stderr = nil
		}
		return res, nil
	}
	if stdinPipe != nil {
		// Closed at the input's end, so a command reading to EOF ends too; one that exits
		// first ends the copy (the pipe breaks) whatever is left unread.
		go func() {
			_, _ = io.Copy(stdinPipe, stdin)
			_ = stdinPipe.Close()
		}()
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Recorded, so the project's stop ends what the command leaves running in its group, and
	// the group of a client killed outright is found (see sessionRecord).
	ticks, _ := procStartTicks(pgid)
	rec := sessionRecord{SID: pgid, StartTicks: ticks, Group: true, Container: c.Name, Owner: engine.ProcessOwner()}
	if err := r.writeSession(p.Slug, rec); err != nil {
		// Unrecorded, it could outlive the project's stop: not run at all.
		_ = killGroup(pgid, syscall.SIGKILL)
		<-done
		waitGroupGone(pgid)
		return result(-1, false), fmt.Errorf("record the exec: %w", err)
	}
	defer r.sessionReturned(p.Slug, rec)

	waitErr, timedOut, err := awaitCommand(ctx, req.Timeout, done, func() {
		_ = killGroup(pgid, syscall.SIGKILL)
	})
	switch {
	case err != nil:
		waitGroupGone(pgid)
		return result(-1, false), err
	case timedOut:
		waitGroupGone(pgid)
		return result(engine.ExitTimedOut, true), nil
	}
	code, err := commandExit(cmd, waitErr)
	if err != nil {
		return result(-1, false), err
	}
	return result(code, false), nil
}

// awaitCommand waits for done (the command's Wait) until timeout (when > 0) passes or ctx
// ends; then it runs kill and waits for done. It returns Wait's error, whether the timeout
// ended the command, and ctx's error when ctx did.
func awaitCommand(ctx context.Context, timeout time.Duration, done <-chan error, kill func()) (waitErr error, timedOut bool, ctxErr error) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case waitErr = <-done:
		return waitErr, false, nil
	case <-expired:
		select {
		case waitErr = <-done: // finished as the timer fired: not killed, not timed out
			return waitErr, false, nil
		default:
			kill()
			return <-done, true, nil
		}
	case <-ctx.Done():
		kill()
		<-done
		return nil, false, ctx.Err()
	}
}

// commandExit is the exit code of a command Wait returned waitErr for; an error when Wait
// failed for another reason than the command's own status.
func commandExit(cmd *exec.Cmd, waitErr error) (int, error) {
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return -1, waitErr
	}
	code, ok := exitCode(cmd.ProcessState.Sys())
	if !ok {
		code = cmd.ProcessState.ExitCode()
	}
	return code, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func deref(r *engine.ExecResult) engine.ExecResult {
	if r == nil {
		return engine.ExecResult{}
	}
	return *r
}

// command is req as a command to start in the container's directory with its environment;
// notRun is set instead when argv[0] cannot be found or run (the result a shell would give).
func (r *Runtime) command(p engine.Project, c engine.Container, req engine.ExecRequest) (cmd *exec.Cmd, notRun *engine.ExecResult, err error) {
	if err := req.Validate(); err != nil {
		return nil, nil, err
	}
	if err := hostfs.CheckName("container name", c.Name); err != nil {
		return nil, nil, err
	}
	if !supported {
		return nil, nil, errUnsupportedOS()
	}
	workDir, err := r.containerWorkDir(p, c, req.Dir)
	if err != nil {
		return nil, nil, err
	}
	own := map[string]string{
		"HOST":           r.cfg.Host,
		"PROJECT_ID":     p.ID,
		"CONTAINER_NAME": c.Name,
	}
	if rec, _ := readRecordFile(r.recordPath(p.Slug, c.Name)); rec != nil {
		own["PORT"] = strconv.Itoa(rec.Port)
		if rec.DeclaredPort > 0 {
			own["SAILTUI_DECLARED_PORT"] = strconv.Itoa(rec.DeclaredPort)
		}
	}
	base := r.baseEnv()
	env, err := mergeEnv(base, c.Env, own, req.Env)
	if err != nil {
		return nil, nil, err
	}
	prog, err := lookPath(req.Argv[0], envValue(env, "PATH"), workDir)
	if err != nil {
		res := notRunResult(req.Argv[0], err)
		return nil, &res, nil
	}
	// Not CommandContext: its cancel kills only the direct child; the group must go.
	cmd = exec.Command(prog, req.Argv[1:]...)
	cmd.Args[0] = req.Argv[0]
	cmd.Dir = workDir
	cmd.Env = env
	return cmd, nil, nil
}

// notRunResult is the result of a command that could not be started, worded like a shell's.
func notRunResult(name string, err error) engine.ExecResult {
	if errors.Is(err, fs.ErrNotExist) {
		return engine.ExecResult{ExitCode: engine.ExitNotFound, Stderr: []byte(name + ": command not found\n")}
	}
	return engine.ExecResult{ExitCode: engine.ExitCannotExecute, Stderr: []byte(fmt.Sprintf("%s: cannot execute: %v\n", name, unwrapPathError(err)))}
}

// waitGroupGone gives the rest of a killed group a moment to die, so "killed" means gone when
// Exec returns. The leader is reaped already; its pid cannot be reused while the group lives.
func waitGroupGone(pgid int) {
	deadline := time.Now().Add(2 * time.Second)
	for groupHasLiveMembers(pgid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// lookPath finds name like a shell would, but in the PATH the command will get (exec.LookPath
// would search this process's PATH). Relative entries and names with a slash are taken
// relative to dir.
func lookPath(name, pathEnv, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", err
		}
		return p, nil
	}
	var firstErr error
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && !errors.Is(err, fs.ErrNotExist) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", fmt.Errorf("command not found: %w", fs.ErrNotExist)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return unwrapPathError(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

// unwrapPathError drops the *PathError wrapping (which repeats the host path) but keeps the
// errno, so errors.Is still works.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
