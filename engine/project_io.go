package engine

// What runs inside a project on behalf of a caller: exec, logs and file operations, each under a
// shared use of the project (invariant 9) where it reads or writes its storage.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"time"
)

// Exec runs argv in a container's directory, under a shared use of the project (invariant 9):
// an operation that needs the project stops it first, and the caller then gets an error that
// names the operation, never a success whose writes were lost.
func (e *Engine) Exec(ctx context.Context, ref, name string, req ExecRequest) (ExecResult, error) {
	return e.execIn(ctx, ref, name, req, e.runtime.Exec)
}

// execIn runs the checked request in its container with run (a request without a timeout gets
// the default), under a shared use of the project.
func (e *Engine) execIn(ctx context.Context, ref, name string, req ExecRequest,
	run func(context.Context, Project, Container, ExecRequest) (ExecResult, error)) (ExecResult, error) {
	c, req, err := e.execTarget(ctx, ref, name, req)
	if err != nil {
		return ExecResult{}, err
	}
	var res ExecResult
	err = e.withUse(ctx, ref, "exec "+c.Name, SourceExec, func(ctx context.Context, p Project) error {
		var err error
		res, err = run(ctx, p, c, req.withDefaultTimeout())
		return err
	})
	return res, err
}

// withDefaultTimeout gives a request without a timeout the default of 10 minutes: a command
// nobody watches must not hold the project's use forever.
func (r ExecRequest) withDefaultTimeout() ExecRequest {
	if r.Timeout == 0 {
		r.Timeout = 10 * time.Minute
	}
	return r
}

// ExecTerminal runs argv on a terminal of its own (ExecTerminal; docker exec -it), under a
// shared use of the project as Exec is: an operation that needs the project ends the session
// first, and the caller gets an error that names it. A request without a timeout has none, as
// an interactive shell should: it ends when its user ends it (the use keeps an idle sweep off
// the project meanwhile).
func (e *Engine) ExecTerminal(ctx context.Context, ref, name string, req ExecRequest, t Terminal) (ExecResult, error) {
	tr, ok := e.runtime.(ExecTerminal)
	if !ok {
		return ExecResult{}, fmt.Errorf("exec in %s/%s: the %s runtime cannot give a command a terminal; run it without -t: %w", ref, name, e.runtime.Mode(), ErrBadInput)
	}
	if t.Out == nil {
		return ExecResult{}, fmt.Errorf("exec in %s/%s: a terminal needs somewhere to write: %w", ref, name, ErrBadInput)
	}
	c, req, err := e.execTarget(ctx, ref, name, req)
	if err != nil {
		return ExecResult{}, err
	}
	if req.Env["TERM"] == "" && c.Env["TERM"] == "" {
		// What docker gives a terminal exec: a type every image's programs know, whatever
		// the operator's own terminal calls itself.
		req.Env = maps.Clone(req.Env)
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env["TERM"] = "xterm"
	}
	var res ExecResult
	err = e.withUse(ctx, ref, "exec "+c.Name, SourceTerminal, func(ctx context.Context, p Project) error {
		var err error
		res, err = tr.ExecTerminal(ctx, p, c, req, t)
		return err
	})
	return res, err
}

// execTarget checks an exec request and finds its container.
func (e *Engine) execTarget(ctx context.Context, ref, name string, req ExecRequest) (Container, ExecRequest, error) {
	if err := e.writable("exec"); err != nil {
		return Container{}, req, err
	}
	if err := req.Validate(); err != nil {
		return Container{}, req, fmt.Errorf("exec: %w", err)
	}
	p, c, err := e.container(ctx, ref, name)
	if err != nil {
		return Container{}, req, err
	}
	if !c.Runs() {
		return Container{}, req, fmt.Errorf("exec in %s/%s: an external service runs elsewhere; there is nothing to exec in: %w", p.Slug, name, ErrBadInput)
	}
	// A command run in a container sees what its process was started with, the exports of
	// its connections included (runtimes whose exec does not inherit the process's
	// environment build it from the container's Env).
	if c.Env, err = e.withInjectedEnv(ctx, p, c); err != nil {
		return Container{}, req, err
	}
	return c, req, nil
}

// ExecStream is Exec with the command's streams attached when the runtime can (ExecStreamer):
// its output reaches s as it is written and it reads s.Stdin. A runtime that cannot runs it as
// Exec does, and its output is written to s once it is done; given input (s.Stdin not nil)
// it refuses with ErrBadInput instead, before anything runs: a command that was meant to read
// input (psql < dump.sql) must not "succeed" having read none.
func (e *Engine) ExecStream(ctx context.Context, ref, name string, req ExecRequest, s ExecStreams) (ExecResult, error) {
	es, ok := e.runtime.(ExecStreamer)
	if !ok && s.Stdin != nil {
		return ExecResult{}, fmt.Errorf("exec in %s/%s: the %s runtime cannot pass input to a command, and input was given (piped or redirected); "+
			"put it in the project (sailtui files put %s FILE) and have the command read it (-- sh -c 'CMD < FILE'), or run without input (< /dev/null): %w",
			ref, name, e.runtime.Mode(), ref, ErrBadInput)
	}
	if !ok {
		res, err := e.Exec(ctx, ref, name, req)
		if err == nil {
			_, _ = s.Stdout.Write(res.Stdout)
			_, _ = s.Stderr.Write(res.Stderr)
		}
		return res, err
	}
	return e.execIn(ctx, ref, name, req, func(ctx context.Context, p Project, c Container, req ExecRequest) (ExecResult, error) {
		return es.ExecStream(ctx, p, c, req, s)
	})
}

// Logs streams a container's log.
func (e *Engine) Logs(ctx context.Context, ref, name string, opts LogOptions) (io.ReadCloser, error) {
	p, c, err := e.container(ctx, ref, name)
	if err != nil {
		return nil, err
	}
	if !c.Runs() {
		return nil, fmt.Errorf("logs of %s/%s: an external service runs elsewhere; it has no log here: %w", p.Slug, name, ErrBadInput)
	}
	return e.runtime.Logs(ctx, p, c, opts)
}

// ReadFile copies a project file to w.
func (e *Engine) ReadFile(ctx context.Context, ref, path string, w io.Writer) error {
	return e.withUse(ctx, ref, "files get", SourceFiles, func(ctx context.Context, p Project) error {
		return e.runtime.ReadFile(ctx, p, path, w)
	})
}

// WriteFile replaces a project file with r's contents. It returns nil only once the file is in
// the project's storage, where any later snapshot finds it (invariant 9).
func (e *Engine) WriteFile(ctx context.Context, ref, path string, r io.Reader) error {
	if err := e.writable("write file"); err != nil {
		return err
	}
	return e.withUse(ctx, ref, "files put", SourceFiles, func(ctx context.Context, p Project) error {
		return e.runtime.WriteFile(ctx, p, path, r)
	})
}

// DeleteFile removes a project file.
func (e *Engine) DeleteFile(ctx context.Context, ref, path string) error {
	if err := e.writable("delete file"); err != nil {
		return err
	}
	return e.withUse(ctx, ref, "files rm", SourceFiles, func(ctx context.Context, p Project) error {
		return e.runtime.DeleteFile(ctx, p, path)
	})
}

// ListFiles lists a directory of a project.
func (e *Engine) ListFiles(ctx context.Context, ref, path string) ([]FileInfo, error) {
	var out []FileInfo
	err := e.withUse(ctx, ref, "files ls", SourceFiles, func(ctx context.Context, p Project) error {
		var err error
		out, err = e.runtime.ListFiles(ctx, p, path)
		return err
	})
	return out, err
}
