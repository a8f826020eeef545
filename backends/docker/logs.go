package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
	"github.com/sailtui/sailtui/engine/logfile"
)

// followPoll is how often a followed log looks for a container that is not there (yet).
const followPoll = 250 * time.Millisecond

// A container's log is two parts. sailtui removes a Docker container when it stops (so the
// next start applies a changed spec) and a hibernation removes them all, so before a container
// goes its log is appended to the kept log, <StateDir>/docker-logs/<slug>/<name>.log (rotated
// and capped, engine/logfile), with Docker's own times and a marker of the stop. The kept log
// is outside the project's files (in no snapshot) and outlives hibernation; it goes when the
// project is deleted (DropLogs). The live part is the Docker container's own log.

// Logs returns the container's output, stdout and stderr merged in the order the engine
// recorded them: what the kept log holds, then the running container's own: all of it (Tail
// 0), the last Tail lines of both together, or nothing (Tail < 0) to start with. Each line
// carries the time Docker recorded for it, given with Timestamps and taken off otherwise.
//
// With Follow the reader then delivers what the container writes until ctx ends or the reader
// is closed (either ends it with io.EOF). When the container stops and is started again (a new
// Docker container), the new one's output follows from its start; a container that does not
// exist yet is waited for.
func (r *Runtime) Logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	return logfile.Logs(ctx, p, c, opts, r.logs)
}

// logs is Logs's own part; logfile.Logs has checked the names.
func (r *Runtime) logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	name := r.containerName(p, c)
	ins, err := r.inspect(ctx, name)
	if err != nil {
		return nil, err
	}
	if ins != nil && r.owns(p, ins) != nil {
		ins = nil // another project's container of that name: none of its output is ours
	}
	// How many of the Tail lines the live container gives, so the kept log gives the rest.
	var live []byte
	liveLines := 0
	if ins != nil && opts.Tail > 0 {
		if live, err = r.readLive(ctx, ins.ID, strconv.Itoa(opts.Tail)); err != nil {
			return nil, err
		}
		liveLines = bytes.Count(live, []byte{'\n'})
	}
	keptTail := opts.Tail
	if opts.Tail > 0 {
		keptTail = opts.Tail - liveLines
		if keptTail == 0 {
			keptTail = -1
		}
	}
	kept, err := logfile.Open(r.logPath(p, c.Name), keptTail)
	if err != nil {
		return nil, fmt.Errorf("read the kept log of %s: %w", c.Name, err)
	}
	if !opts.Follow {
		switch {
		case ins == nil || opts.Tail < 0:
			return &logReader{Reader: kept.Reader(), cancel: func() { _ = kept.Close() }}, nil
		case opts.Tail > 0:
			return &logReader{Reader: io.MultiReader(kept.Reader(), bytes.NewReader(live)), cancel: func() { _ = kept.Close() }}, nil
		}
		rc, err := r.cli.ContainerLogs(ctx, ins.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true})
		if err != nil {
			_ = kept.Close()
			return nil, fmt.Errorf("read log of %s: %w", name, err)
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := io.Copy(pw, kept.Reader())
			_ = kept.Close()
			if err == nil {
				_, err = stdcopy.StdCopy(pw, pw, rc)
			}
			_ = rc.Close()
			pw.CloseWithError(err)
		}()
		return &logReader{Reader: pr, cancel: func() { _ = rc.Close(); _ = pr.Close() }}, nil
	}
	tail := "all"
	switch {
	case ins == nil:
	case opts.Tail > 0:
		tail = strconv.Itoa(opts.Tail)
	case opts.Tail < 0:
		tail = "0"
	}
	fctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, kept.Reader())
		_ = kept.Close()
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		r.follow(fctx, pw, p, name, tail)
	}()
	return &logReader{Reader: pr, cancel: func() { cancel(); _ = pr.Close() }}, nil
}

// readLive reads the last tail lines of a Docker container's log, with times.
func (r *Runtime) readLive(ctx context.Context, id, tail string) ([]byte, error) {
	rc, err := r.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Tail: tail})
	if err != nil {
		return nil, fmt.Errorf("read log of %s: %w", id, err)
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := stdcopy.StdCopy(&b, &b, rc); err != nil {
		return nil, fmt.Errorf("read log of %s: %w", id, err)
	}
	return b.Bytes(), nil
}

// logDir holds the kept logs of the project's containers: <StateDir>/docker-logs/<slug>.
func (r *Runtime) logDir(p engine.Project) string {
	return filepath.Join(r.cfg.StateDir, "docker-logs", p.Slug)
}

func (r *Runtime) logPath(p engine.Project, name string) string {
	return filepath.Join(r.logDir(p), name+".log")
}

func (r *Runtime) logMax() int64 {
	if r.cfg.LogMaxBytes > 0 {
		return r.cfg.LogMaxBytes
	}
	return logfile.DefaultMax
}

// saveLog appends the log of the container's Docker container to the kept log before the
// container is removed, then the marker what (stopped, exited).
func (r *Runtime) saveLog(ctx context.Context, p engine.Project, name, id, what string) error {
	rc, err := r.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true})
	if err != nil {
		return fmt.Errorf("read log of %s: %w", name, err)
	}
	defer rc.Close()
	if err := os.MkdirAll(r.logDir(p), 0o700); err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	w := logfile.NewWriter(r.logPath(p, name), r.logMax())
	defer w.Close()
	pr, pw := io.Pipe()
	go func() { _, err := stdcopy.StdCopy(pw, pw, rc); pw.CloseWithError(err) }()
	if err := copyLines(w, pr); err != nil {
		_ = pr.CloseWithError(err)
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	if err := w.Mark(time.Now(), what); err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	return nil
}

// copyLines appends r's stamped lines to w in blocks of whole lines, so a rotation falls
// between lines.
func copyLines(w *logfile.Writer, r io.Reader) error {
	buf := make([]byte, 64<<10)
	var rest []byte
	for {
		n, err := r.Read(buf)
		rest = append(rest, buf[:n]...)
		if i := bytes.LastIndexByte(rest, '\n'); i >= 0 {
			if werr := w.WriteStamped(rest[:i+1]); werr != nil {
				return werr
			}
			rest = append(rest[:0], rest[i+1:]...)
		}
		if errors.Is(err, io.EOF) {
			return w.WriteStamped(rest)
		}
		if err != nil {
			return err
		}
	}
}

// exitMarker is the marker of a container that ended on its own.
func exitMarker(ins *container.InspectResponse) string {
	if ins == nil || ins.State == nil {
		return engine.LogMarkStopped
	}
	return fmt.Sprintf("exited with code %d", ins.State.ExitCode)
}

// mark writes a marker into a container's kept log; a failure to is not one of what it marks.
func (r *Runtime) mark(p engine.Project, name, what string) {
	if os.MkdirAll(r.logDir(p), 0o700) == nil {
		_ = logfile.Mark(r.logPath(p, name), r.logMax(), what)
	}
}

// MarkLog implements engine.LogKeeper. A container without a kept log (it never ran, or has
// not stopped yet) gets none.
func (r *Runtime) MarkLog(ctx context.Context, p engine.Project, cs []engine.Container, what string) error {
	return logfile.MarkLogs(p, cs, func(name string) string { return r.logPath(p, name) }, r.logMax(), what)
}

// DropLogs implements engine.LogKeeper: the project's kept logs go with it.
func (r *Runtime) DropLogs(ctx context.Context, p engine.Project) error {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return fmt.Errorf("drop logs: %w", err)
	}
	if err := os.RemoveAll(r.logDir(p)); err != nil {
		return fmt.Errorf("drop logs of %s: %w", p.Slug, err)
	}
	return nil
}

type logReader struct {
	io.Reader
	cancel func()
}

func (l *logReader) Close() error {
	l.cancel()
	return nil
}

// follow streams the log of the container called name into w until ctx ends, moving on to each
// new container of that name.
func (r *Runtime) follow(ctx context.Context, w *io.PipeWriter, p engine.Project, name, tail string) {
	last := ""
	first := true
	for {
		ins, err := r.inspect(ctx, name)
		if ctx.Err() != nil {
			_ = w.Close()
			return
		}
		if err == nil && ins != nil && ins.ID != last && r.owns(p, ins) == nil {
			t := tail
			if !first {
				t = "all" // a container that came later: all of it is new
			}
			rc, err := r.cli.ContainerLogs(ctx, ins.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true, Tail: t})
			if err == nil {
				_, err = stdcopy.StdCopy(w, w, rc)
				_ = rc.Close()
				if errors.Is(err, io.ErrClosedPipe) {
					return // the reader is gone
				}
			}
			last = ins.ID
		}
		first = false
		select {
		case <-ctx.Done():
			_ = w.Close()
			return
		case <-time.After(followPoll):
		}
	}
}
