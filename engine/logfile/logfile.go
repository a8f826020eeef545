// Package logfile keeps a container's log on this machine as lines with the time each was
// written in front (engine.FormatLogLine), in a file that rotates once and so stays under a
// size cap: <path> is the current file, <path>.1 the one before. Runtimes that keep logs
// outside the project's storage (local, docker) share it, so every kept log reads the same.
package logfile

import (
	"bufio"
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
	"github.com/sailtui/sailtui/engine/flock"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// DefaultMax is the most one container's kept log takes on disk, current and rotated file
// together, when the runtime is given no cap.
const DefaultMax = 8 << 20

// minMax keeps a cap from being so small that every line rotates.
const minMax = 4 << 10

// Rotated is the path of the file before path.
func Rotated(path string) string { return path + ".1" }

// Writer appends lines to a kept log. When a write would take the current file past half the
// cap, the file becomes the rotated one first (replacing the one before), so both together
// stay under the cap (a single write larger than half of it goes whole into a new file). Several writers (processes, even) may append to the same log: each write is one
// O_APPEND write of whole lines, and rotation is serialised by a lock file beside the log.
type Writer struct {
	path string
	max  int64
	f    *os.File
	size int64
}

// NewWriter appends to the log at path, capped at limit bytes (0: DefaultMax). The directory
// must exist; the file is made when it does not.
func NewWriter(path string, limit int64) *Writer {
	if limit <= 0 {
		limit = DefaultMax
	}
	return &Writer{path: path, max: max(limit, minMax)}
}

// WriteLines appends lines (each without its newline), timed at.
func (w *Writer) WriteLines(at time.Time, lines [][]byte) error {
	var buf []byte
	for _, l := range lines {
		buf = append(buf, engine.FormatLogLine(at, l)...)
	}
	return w.write(buf)
}

// Mark appends the marker line for what (engine.LogMarker), timed at.
func (w *Writer) Mark(at time.Time, what string) error {
	return w.WriteLines(at, [][]byte{[]byte(engine.LogMarker(what))})
}

// WriteStamped appends lines that carry their times already (a runtime's own, e.g. Docker's
// with Timestamps), as they are.
func (w *Writer) WriteStamped(b []byte) error {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return w.write(b)
}

// Close closes the file the writer holds.
func (w *Writer) Close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func (w *Writer) write(b []byte) error {
	if err := w.current(); err != nil {
		return fmt.Errorf("write log %s: %w", w.path, err)
	}
	for len(b) > 0 {
		piece := b
		if room := w.max/2 - w.size; int64(len(piece)) > room {
			// The whole lines that fit; none: a new file first, where a line longer than
			// half the cap goes whole.
			cut := -1
			if room > 0 {
				cut = bytes.LastIndexByte(piece[:room], '\n')
			}
			switch {
			case cut >= 0:
				piece = piece[:cut+1]
			case w.size > 0:
				if err := w.rotate(); err != nil {
					return fmt.Errorf("rotate log %s: %w", w.path, err)
				}
				if err := w.current(); err != nil {
					return fmt.Errorf("write log %s: %w", w.path, err)
				}
				continue
			default:
				if i := bytes.IndexByte(piece, '\n'); i >= 0 {
					piece = piece[:i+1]
				}
			}
		}
		n, err := w.f.Write(piece)
		w.size += int64(n)
		if err != nil {
			return fmt.Errorf("write log %s: %w", w.path, err)
		}
		b = b[len(piece):]
	}
	return nil
}

// current makes sure w.f is the file now at w.path: another writer may have rotated it away.
func (w *Writer) current() error {
	if w.f != nil {
		cur, err1 := w.f.Stat()
		fi, err2 := os.Lstat(w.path)
		if err1 == nil && err2 == nil && os.SameFile(cur, fi) {
			w.size = cur.Size()
			return nil
		}
		_ = w.f.Close()
		w.f = nil
	}
	f, err := openFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	w.f, w.size = f, fi.Size()
	return nil
}

// rotateWait is how long a rotation waits for another writer's rotation of the same log.
const rotateWait = 5 * time.Second

func (w *Writer) rotate() error {
	// Where flock is missing, rotations of two writers of one log may race, which costs at most
	// the rotated file.
	ctx, cancel := context.WithTimeout(context.Background(), rotateWait)
	defer cancel()
	unlock, err := flock.Lock(ctx, w.path+".lock", true)
	if err != nil {
		return fmt.Errorf("lock %s for its rotation: %w", w.path, err)
	}
	defer unlock()
	// Another writer may have rotated meanwhile: only the file this writer filled moves.
	fi, err := os.Lstat(w.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return w.Close()
		}
		return err
	}
	if cur, err := w.f.Stat(); err == nil && os.SameFile(cur, fi) {
		if err := os.Rename(w.path, Rotated(w.path)); err != nil {
			return err
		}
	}
	return w.Close()
}

// Mark appends one marker to the log at path (capped at limit), timed now.
func Mark(path string, limit int64, what string) error {
	w := NewWriter(path, limit)
	defer w.Close()
	return w.Mark(time.Now(), what)
}

// MarkLogs is the engine.LogKeeper's MarkLog of a runtime that keeps its containers' logs on
// this machine (local, docker): the marker what, timed now, goes to the kept log of each
// container of cs, path giving a container's log. A log that is not there (its container never
// ran) gets none, rather than a file of markers. The project's slug and the container names are
// checked first, as they name the files; a name by the engine's one rule for container names.
func MarkLogs(p engine.Project, cs []engine.Container, path func(name string) string, limit int64, what string) error {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return fmt.Errorf("mark logs: %w", err)
	}
	paths := make([]string, 0, len(cs))
	for _, c := range cs {
		if err := engine.CheckContainerName(c.Name); err != nil {
			return fmt.Errorf("mark logs of %s: %w", p.Slug, err)
		}
		paths = append(paths, path(c.Name))
	}
	for _, path := range paths {
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		if err := Mark(path, limit, what); err != nil {
			return fmt.Errorf("mark logs of %s: %w", p.Slug, err)
		}
	}
	return nil
}

// Logs is the engine.Runtime's Logs of a runtime that keeps its containers' logs with this
// package (local, docker), around its own open: the project's slug and the container's name
// are checked first, as they name the files (the name by the engine's one rule for container
// names), a failure names the container, and the times in front of the lines (each line
// carries one, engine.FormatLogLine) are taken off unless opts.Timestamps.
func Logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions,
	open func(context.Context, engine.Project, engine.Container, engine.LogOptions) (io.ReadCloser, error)) (io.ReadCloser, error) {
	err := hostfs.CheckName("project slug", p.Slug)
	if err == nil {
		err = engine.CheckContainerName(c.Name)
	}
	var rc io.ReadCloser
	if err == nil {
		rc, err = open(ctx, p, c, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("logs %s/%s: %w", p.Slug, c.Name, err)
	}
	if !opts.Timestamps {
		rc = stripped{Reader: Strip(rc), c: rc}
	}
	return rc, nil
}

// stripped is Strip of a reader that closes it.
type stripped struct {
	io.Reader
	c io.Closer
}

func (s stripped) Close() error { return s.c.Close() }

// OpenRead opens the kept log file at path (current or rotated) for reading, as Open does:
// never through a symbolic link, in its name or its directory's, and only a regular file.
func OpenRead(path string) (*os.File, error) { return openFile(path, os.O_RDONLY, 0) }

// linked is the refusal of a kept log, or its directory, that is a symbolic link.
func linked(path string) error {
	return fmt.Errorf("kept log %s is a symbolic link: sailtui neither reads nor writes a log through one, as it could lead anywhere; remove the link (rm %s: what it points to stays as it is) and the log starts again there: %w",
		path, path, engine.ErrBadPath)
}

// notRegular is the refusal of a kept log that is not a regular file (a FIFO, a device).
func notRegular(path string) error {
	return fmt.Errorf("kept log %s is not a regular file: move it away and the log starts again there: %w", path, engine.ErrBadPath)
}

// Remove deletes the log at path with its rotated file and lock.
func Remove(path string) error {
	var errs []error
	for _, p := range []string{path, Rotated(path), path + ".lock"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Backlog is the start of a kept log read: the rotated file's part (Before), then the current
// file from Off to Size. A follower goes on in Cur from Size.
type Backlog struct {
	Before io.Reader
	Cur    *os.File // nil when there is no current file
	Off    int64
	Size   int64
	closer []io.Closer
	before *os.File
}

// CloseBefore closes the rotated file once Before has been read; Cur stays open.
func (b *Backlog) CloseBefore() {
	if b.before != nil {
		_ = b.before.Close()
		b.before = nil
	}
}

// Reader is the backlog as one reader (the caller closes it with Close).
func (b *Backlog) Reader() io.Reader {
	rs := []io.Reader{b.Before}
	if b.Cur != nil {
		rs = append(rs, io.NewSectionReader(b.Cur, b.Off, b.Size-b.Off))
	}
	return io.MultiReader(rs...)
}

// Close closes the files of the backlog, Cur included.
func (b *Backlog) Close() error {
	var errs []error
	for _, c := range b.closer {
		errs = append(errs, c.Close())
	}
	b.CloseBefore()
	return errors.Join(errs...)
}

// Open reads the log at path: all of it (tail 0, rotated file first), its last tail lines
// across both files, or nothing (tail < 0). A log that does not exist reads as empty.
func Open(path string, tail int) (*Backlog, error) {
	b := &Backlog{Before: strings.NewReader("")}
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if f != nil {
		b.closer = append(b.closer, f)
		fi, err := f.Stat()
		if err != nil {
			_ = b.Close()
			return nil, err
		}
		b.Cur, b.Size = f, fi.Size()
		b.Off = b.Size
	}
	if tail < 0 {
		return b, nil
	}
	found := 0
	if b.Cur != nil {
		if b.Off, found, err = TailOffset(b.Cur, b.Size, tail); err != nil {
			_ = b.Close()
			return nil, err
		}
		if tail > 0 && found >= tail {
			return b, nil
		}
	}
	old, err := openFile(Rotated(path), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.before = old
	fi, err := old.Stat()
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	var off int64
	if tail > 0 {
		if off, _, err = TailOffset(old, fi.Size(), tail-found); err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	b.Before = io.NewSectionReader(old, off, fi.Size()-off)
	return b, nil
}

// TailOffset finds where the last n lines of f (of size bytes) start, reading backwards in
// blocks, and how many lines it found (fewer than n when the file has fewer; n 0 means all). A
// newline at the very end closes the last line rather than starting an empty one.
func TailOffset(f io.ReaderAt, size int64, n int) (int64, int, error) {
	const block = 64 << 10
	buf := make([]byte, block)
	count := 0
	if n <= 0 {
		n = int(^uint(0) >> 1)
	}
	for end := size; end > 0; {
		start := max(end-block, 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
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
				return start + int64(i) + 1, count, nil
			}
		}
		end = start
	}
	if size > 0 {
		count++ // the first line, which no newline starts
	}
	return 0, count, nil
}

// Strip removes the time in front of each line of r (engine.ParseLogLine), for a reader that
// did not ask for times. Lines without one pass as they are.
func Strip(r io.Reader) io.Reader {
	return &stripper{br: bufio.NewReaderSize(r, 64<<10), start: true}
}

type stripper struct {
	br    *bufio.Reader
	out   []byte
	start bool // the next byte read starts a line
	err   error
}

func (s *stripper) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		line, err := s.br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			s.err = err
		}
		if s.start {
			_, line, _ = engine.ParseLogLine(line)
		}
		s.start = len(line) > 0 && line[len(line)-1] == '\n'
		s.out = append(s.out[:0], line...)
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}
