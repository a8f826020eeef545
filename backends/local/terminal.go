package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var _ engine.ExecTerminal = (*Runtime)(nil)

// ExecTerminal implements engine.ExecTerminal: Exec's command, environment and directory, on a
// pseudo-terminal of its own. The command leads a session with the terminal as its controlling
// one, so an interactive shell has job control, and a timeout or ctx ending kills every
// process of that session (job control puts each job in a group of its own).
func (r *Runtime) ExecTerminal(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest, t engine.Terminal) (engine.ExecResult, error) {
	res, err := r.execTerminal(ctx, p, c, req, t)
	if err != nil {
		return res, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	return res, nil
}

// outputDrain bounds the wait for the terminal's last output once the command is gone: a
// background process it left may hold the terminal open for good (closing the master then
// ends the read, see openPTY).
const outputDrain = time.Second

func (r *Runtime) execTerminal(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest, t engine.Terminal) (engine.ExecResult, error) {
	cmd, notRun, err := r.command(p, c, req)
	if err != nil {
		return engine.ExecResult{}, err
	}
	if notRun != nil {
		// Said where a shell on that terminal would say it.
		_, _ = t.Out.Write(onTerminal(notRun.Stderr))
		notRun.Stderr = nil
		return *notRun, nil
	}
	// A session whose client was killed before it could end it goes now, at the latest.
	// Failing to end it is no reason to refuse this one; the project's stop tries again.
	_ = r.endSessions(p.Slug, true)
	ptmx, tty, err := openPTY()
	if err != nil {
		return engine.ExecResult{}, fmt.Errorf("open a terminal: %w", err)
	}
	if err := setPTYSize(ptmx, t.StartSize()); err != nil {
		_, _ = ptmx.Close(), tty.Close()
		return engine.ExecResult{}, fmt.Errorf("size the terminal: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = terminalAttr()
	err = cmd.Start()
	// The command holds the terminal now; ours would keep it open after the command is gone.
	_ = tty.Close()
	if err != nil {
		_ = ptmx.Close()
		res := notRunResult(req.Argv[0], err)
		_, _ = t.Out.Write(onTerminal(res.Stderr))
		res.Stderr = nil
		return res, nil
	}
	sid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	// Recorded, so the project's stop ends what the session leaves running, and a session
	// whose client is killed outright is found (see sessionRecord).
	ticks, _ := procStartTicks(sid)
	rec := sessionRecord{SID: sid, StartTicks: ticks, Container: c.Name, Owner: engine.ProcessOwner()}
	if err := r.writeSession(p.Slug, rec); err != nil {
		// Unrecorded, it could outlive the project's stop: not run at all.
		killSession(sid)
		<-waited
		_ = ptmx.Close()
		return engine.ExecResult{ExitCode: -1}, fmt.Errorf("record the terminal session: %w", err)
	}
	defer r.sessionReturned(p.Slug, rec)
	// Reading the terminal ends with EIO once no process holds it any more.
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(t.Out, ptmx)
		close(copied)
	}()
	if t.In != nil {
		// Ends when In ends, or with an error writing to the terminal once it is closed.
		go func() { _, _ = io.Copy(ptmx, t.In) }()
	}
	stopResize := make(chan struct{})
	defer close(stopResize)
	go func() {
		for {
			select {
			case <-stopResize:
				return
			case sz, ok := <-t.Resize:
				if !ok {
					return
				}
				if sz.Cols > 0 && sz.Rows > 0 {
					_ = setPTYSize(ptmx, sz)
				}
			}
		}
	}()
	finish := func() {
		select {
		case <-copied:
		case <-time.After(outputDrain):
		}
		_ = ptmx.Close()
		<-copied
	}

	waitErr, timedOut, err := awaitCommand(ctx, req.Timeout, waited, func() { killSession(sid) })
	switch {
	case err != nil:
		finish()
		return engine.ExecResult{ExitCode: -1}, err
	case timedOut:
		finish()
		return engine.ExecResult{ExitCode: engine.ExitTimedOut, TimedOut: true}, nil
	}
	finish()
	code, err := commandExit(cmd, waitErr)
	if err != nil {
		return engine.ExecResult{ExitCode: -1}, err
	}
	return engine.ExecResult{ExitCode: code}, nil
}

// onTerminal is text as a terminal shows it: each line ends with a carriage return too.
func onTerminal(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }
