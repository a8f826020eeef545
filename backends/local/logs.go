package local

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/logfile"
)

// followPoll is how often a followed log is checked for growth.
const followPoll = 100 * time.Millisecond

// Logs returns the container's log: all of it (Tail 0), its last Tail lines, or nothing
// (Tail < 0) to start with; the log is the current file and the one rotated before it
// (logfile). The tail is found by reading backwards from the end, so a large log costs only
// the lines asked for. Without Follow the reader ends at the end of the file as it was when
// Logs was called; a log that does not exist yet reads as empty. Each line carries the time
// its capture wrote it (capture.go), given with Timestamps and taken off otherwise.
//
// With Follow the reader then delivers what is appended, polling every 100ms, until ctx ends
// or it is closed (either ends it with io.EOF). A log truncated in place is read again from
// its start; a log replaced by a new file (rotation) is read to its end, then the new one from
// its start; a log that does not exist yet is waited for.
func (r *Runtime) Logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	return logfile.Logs(ctx, p, c, opts, r.logs)
}

// logs is Logs's own part; logfile.Logs has checked the names.
func (r *Runtime) logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	path := r.logPath(p.Slug, c.Name)
	b, err := logfile.Open(path, opts.Tail)
	if err != nil {
		return nil, err
	}
	if !opts.Follow {
		return &backlog{Reader: b.Reader(), b: b}, nil
	}
	fctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	// Closing the writer also releases a Write blocked on a reader that stopped reading.
	go func() {
		<-fctx.Done()
		_ = pw.Close()
	}()
	go func() {
		_, err := io.Copy(pw, b.Before)
		b.CloseBefore() // follow closes Cur
		if err != nil {
			if b.Cur != nil {
				_ = b.Cur.Close()
			}
			_ = pw.CloseWithError(err)
			return
		}
		follow(fctx, pw, path, b.Cur, b.Off)
	}()
	return &followReader{PipeReader: pr, cancel: cancel}, nil
}

type backlog struct {
	io.Reader
	b *logfile.Backlog
}

func (s *backlog) Close() error { return s.b.Close() }

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
			nf, err := logfile.OpenRead(path)
			switch {
			case err == nil:
				f, off = nf, 0
			case !errors.Is(err, fs.ErrNotExist):
				// A link in the log's place is refused, not waited out.
				_ = w.CloseWithError(err)
				return
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
			if fi, err := os.Lstat(path); err == nil && !os.SameFile(fi, cur) {
				// Rotated: the old file is drained; carry on with the new one from its start.
				nf, err := logfile.OpenRead(path)
				if err == nil {
					_ = f.Close()
					f, off = nf, 0
					continue
				}
				if !errors.Is(err, fs.ErrNotExist) {
					_ = w.CloseWithError(err)
					return
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
