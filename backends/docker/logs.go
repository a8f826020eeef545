package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
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
// A container that is not there reads as empty.
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
		if ins == nil || r.owns(p, ins) != nil {
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
	go r.follow(fctx, pw, p, name, tail)
	return &logReader{PipeReader: pr, cancel: cancel}, nil
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
