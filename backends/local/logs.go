package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// followPoll is how often a followed log is checked for growth.
const followPoll = 100 * time.Millisecond

// Logs returns the container's log file: all of it (Tail 0), its last Tail lines, or nothing
// (Tail < 0) to start with. The tail is found by reading backwards from the end, so a large log
// costs only the lines asked for. Without Follow the reader ends at the end of the file as it
// was when Logs was called; a log that does not exist yet reads as empty.
//
// With Follow the reader then delivers what is appended, polling every 100ms, until ctx ends
// or it is closed (either ends it with io.EOF). A log truncated in place is read again from
// its start; a log replaced by a new file (rotation) is read to its end, then the new one from
// its start; a log that does not exist yet is waited for.
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
	if err := hostfs.CheckName("container name", c.Name); err != nil {
		return nil, err
	}
	path := r.logPath(p.Slug, c.Name)
	f, err := os.Open(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var off, size int64
	if f != nil {
		fi, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		size = fi.Size()
		switch {
		case opts.Tail < 0:
			off = size
		case opts.Tail > 0:
			if off, err = tailOffset(f, size, opts.Tail); err != nil {
				_ = f.Close()
				return nil, err
			}
		}
	}
	if !opts.Follow {
		if f == nil {
			return io.NopCloser(strings.NewReader("")), nil
		}
		return &fileSection{SectionReader: io.NewSectionReader(f, off, size-off), f: f}, nil
	}
	fctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	// Closing the writer also releases a Write blocked on a reader that stopped reading.
	go func() {
		<-fctx.Done()
		_ = pw.Close()
	}()
	go follow(fctx, pw, path, f, off)
	return &followReader{PipeReader: pr, cancel: cancel}, nil
}

type fileSection struct {
	*io.SectionReader
	f *os.File
}

func (s *fileSection) Close() error { return s.f.Close() }

type followReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (f *followReader) Close() error {
	f.cancel()
	return f.PipeReader.Close()
}

// follow copies the log from off onwards into w until ctx ends.
func follow(ctx context.Context, w *io.PipeWriter, path string, f *os.File, off int64) {
	defer func() {
		if f != nil {
			_ = f.Close()
		}
	}()
	buf := make([]byte, 32<<10)
	drain := func() error {
		for {
			n, err := f.ReadAt(buf, off)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return werr
				}
				off += int64(n)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for {
		if f == nil {
			if nf, err := os.Open(path); err == nil {
				f, off = nf, 0
			}
		}
		if f != nil {
			if err := drain(); err != nil {
				_ = w.CloseWithError(err)
				return
			}
			cur, err := f.Stat()
			if err != nil {
				_ = w.CloseWithError(err)
				return
			}
			if fi, err := os.Stat(path); err == nil && !os.SameFile(fi, cur) {
				// Rotated: the old file is drained; carry on with the new one from its start.
				if nf, err := os.Open(path); err == nil {
					_ = f.Close()
					f, off = nf, 0
					continue
				}
			}
			if cur.Size() < off {
				off = 0 // truncated in place
			}
		}
		select {
		case <-ctx.Done():
			_ = w.Close()
			return
		case <-t.C:
		}
	}
}

// tailOffset finds where the last n lines of f (of size bytes) start, reading backwards in
// blocks. A newline at the very end closes the last line rather than starting an empty one.
func tailOffset(f *os.File, size int64, n int) (int64, error) {
	const block = 64 << 10
	buf := make([]byte, block)
	count := 0
	for end := size; end > 0; {
		start := max(end-block, 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			i = bytes.LastIndexByte(chunk[:i+1], '\n')
			if i < 0 {
				break
			}
			if start+int64(i) == size-1 {
				continue
			}
			count++
			if count == n {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
