package docker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// followPoll is how often a followed log looks for a container that is not there (yet).
const followPoll = 250 * time.Millisecond

// Logs returns the container's output, stdout and stderr merged in the order the engine
// recorded them: all of it (Tail 0), its last Tail lines, or nothing (Tail < 0) to start with.
// A container that is not there reads as the log it left when it was last stopped (a stop
// removes the Docker container, so the runtime keeps its log, see saveLog), or as empty.
//
// With Follow the reader then delivers what the container writes until ctx ends or the reader
// is closed (either ends it with io.EOF). When the container stops and is started again (a new
// Docker container), the new one's output follows from its start; a container that does not
// exist yet is waited for.
func (r *Runtime) Logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	rc, err := r.logs(ctx, p, c, opts)
	if err != nil {
		return nil, fmt.Errorf("logs %s/%s: %w", p.Slug, c.Name, err)
	}
	return rc, nil
}

func (r *Runtime) logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return nil, err
	}
	if err := engine.CheckContainerName(c.Name); err != nil {
		return nil, err
	}
	tail := "all"
	switch {
	case opts.Tail > 0:
		tail = strconv.Itoa(opts.Tail)
	case opts.Tail < 0:
		tail = "0"
	}
	name := r.containerName(p, c)
	if !opts.Follow {
		ins, err := r.inspect(ctx, name)
		if err != nil {
			return nil, err
		}
		if ins == nil {
			return r.savedLog(p, c.Name, opts.Tail)
		}
		if r.owns(p, ins) != nil {
			return io.NopCloser(strings.NewReader("")), nil
		}
		rc, err := r.cli.ContainerLogs(ctx, ins.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
		if err != nil {
			return nil, fmt.Errorf("read log of %s: %w", name, err)
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := stdcopy.StdCopy(pw, pw, rc)
			_ = rc.Close()
			pw.CloseWithError(err)
		}()
		return &logReader{PipeReader: pr, cancel: func() { _ = rc.Close() }}, nil
	}
	fctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		if ins, err := r.inspect(fctx, name); err == nil && ins == nil {
			// Stopped: what it wrote before the stop, then the next container's output.
			if saved, err := r.savedLog(p, c.Name, opts.Tail); err == nil {
				_, err = io.Copy(pw, saved)
				_ = saved.Close()
				if errors.Is(err, io.ErrClosedPipe) {
					return
				}
			}
			tail = "all"
		}
		r.follow(fctx, pw, p, name, tail)
	}()
	return &logReader{PipeReader: pr, cancel: cancel}, nil
}

// logDir holds the logs of the project's stopped containers: <StateDir>/docker-logs/<slug>.
func (r *Runtime) logDir(p engine.Project) string {
	return filepath.Join(r.cfg.StateDir, "docker-logs", p.Slug)
}

// saveLog keeps the log of the container's Docker container before a stop removes it, so that
// `logs` still shows what a stopped container said (docker keeps a stopped container's log;
// sailtui removes the container so that the next start applies a changed spec). It replaces the
// log the container left at its previous stop.
func (r *Runtime) saveLog(ctx context.Context, p engine.Project, name, id string) error {
	rc, err := r.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "all"})
	if err != nil {
		return fmt.Errorf("read log of %s: %w", name, err)
	}
	defer rc.Close()
	dir := r.logDir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	defer os.Remove(f.Name())
	_, err = stdcopy.StdCopy(f, f, rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name+".log"))
	}
	if err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	return nil
}

// savedLog reads the log a stopped container left (empty when there is none): all of it, its
// last tail lines, or nothing (tail < 0).
func (r *Runtime) savedLog(p engine.Project, name string, tail int) (io.ReadCloser, error) {
	f, err := os.Open(filepath.Join(r.logDir(p), name+".log"))
	if errors.Is(err, fs.ErrNotExist) || tail < 0 {
		if err == nil {
			_ = f.Close()
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the kept log of %s: %w", name, err)
	}
	if tail == 0 {
		return f, nil
	}
	defer f.Close()
	// The last tail lines, with no more than those in memory.
	ring := make([][]byte, 0, tail)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := append(sc.Bytes()[:len(sc.Bytes()):len(sc.Bytes())], '\n')
		if len(ring) == tail {
			ring = append(ring[1:], line)
		} else {
			ring = append(ring, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the kept log of %s: %w", name, err)
	}
	return io.NopCloser(bytes.NewReader(bytes.Join(ring, nil))), nil
}

type logReader struct {
	*io.PipeReader
	cancel func()
}

func (l *logReader) Close() error {
	l.cancel()
	return l.PipeReader.Close()
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
			rc, err := r.cli.ContainerLogs(ctx, ins.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Tail: t})
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
