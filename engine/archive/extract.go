package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/stream"
)

// Limits caps what one extraction may write, so a small hostile archive cannot fill the disk or
// exhaust inodes. Zero or negative fields take the defaults.
type Limits struct {
	// MaxBytes caps the total payload (sum of file sizes). Default DefaultMaxBytes.
	MaxBytes int64
	// MaxFiles caps the number of entries of any kind. Default DefaultMaxFiles.
	MaxFiles int64
	// MaxEntrySize caps a single file. Default: MaxBytes.
	MaxEntrySize int64
	// AnyLinkTarget lets symlinks point anywhere (an absolute /usr/bin/python3 in a venv). Only
	// for archives whose checksum is checked before the result is used, as the Sandwich does:
	// extraction still never writes through a link, so the links are inert until then.
	AnyLinkTarget bool
	// MaxWindow caps the zstd window the stream may ask for, which is what decoding costs in
	// memory. Default 128 MiB (see maxWindow); SnapshotMaxWindow for archives made by Write.
	MaxWindow int
}

// SnapshotMaxWindow is the window limit for restoring snapshots. Write uses 1 MiB windows
// (the first versions used the zstd library's default of 8 MiB), so a snapshot that asks for
// more was not made by sailtui, and refusing it early keeps a hostile object from making a
// restore use more memory than the whole process is meant to.
const SnapshotMaxWindow = 8 << 20

// AdmitFile decides whether a regular file entry named name (cleaned, relative to the target)
// of size bytes may be extracted when claimed bytes of payload were admitted before it. l has
// its defaults applied (WithDefaults). Every extraction of a snapshot asks it, so the limits
// mean the same wherever the tree is written.
func (l Limits) AdmitFile(name string, size, claimed int64) error {
	switch {
	case name == "":
		return fmt.Errorf("regular file names the target itself: %w", engine.ErrBadPath)
	case size < 0:
		return fmt.Errorf("negative size: %w", engine.ErrBadInput)
	case size > l.MaxEntrySize:
		return fmt.Errorf("size %d over the per-entry limit of %d bytes: %w", size, l.MaxEntrySize, engine.ErrBadInput)
	case claimed+size > l.MaxBytes:
		return fmt.Errorf("archive expands past the limit of %d bytes: %w", l.MaxBytes, engine.ErrBadInput)
	}
	return nil
}

// Default extraction limits: far above any development project, far below a disk.
const (
	DefaultMaxBytes = 64 << 30
	DefaultMaxFiles = 5_000_000
)

// maxTrailing is how much data may follow the tar end marker inside the compressed stream (tar
// implementations pad to their record size, GNU tar to 10 KiB); anything longer is refused
// rather than decompressed without bound.
const maxTrailing = 1 << 20

// maxWindow is the default Limits.MaxWindow: 128 MiB is the zstd command line's own default
// limit, so anything it decodes without flags we decode.
const maxWindow = 128 << 20

// WithDefaults returns l with every unset limit at its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxEntrySize <= 0 {
		l.MaxEntrySize = l.MaxBytes
	}
	if l.MaxWindow <= 0 {
		l.MaxWindow = maxWindow
	}
	return l
}

// Extract unpacks a zstd-compressed tar stream (as made by Write) into target, creating it if
// needed. Every archive is treated as hostile (DESIGN.md invariant 8); an entry is refused, and
// the extraction stops, when its name is absolute or contains "..", when any parent of it is a
// symlink (nothing is ever written through a symlink, whether the archive made it or it was
// there before), when it is a symlink pointing outside target (see checkLinkTarget), when it is
// a hard link (Write never makes them, so all are refused rather than judged), a device node,
// a fifo or another special type, when it would replace an existing entry (duplicates included;
// an existing directory may be named again), and when the Limits would be exceeded. Errors name
// the entry and wrap engine.ErrBadPath (where it would land), engine.ErrExists (collisions) or
// engine.ErrBadInput (limits).
//
// Permission bits (setuid, setgid and sticky are dropped) and modification times are restored;
// directories get theirs after their contents are written. Ownership is not restored: files
// belong to the extracting user. Entries written before an error are left in target; extract
// into a fresh directory and remove it on failure.
//
// The checks assume nothing else modifies target while Extract runs.
func Extract(ctx context.Context, r io.Reader, target string, lim Limits) (Stats, error) {
	x := &extractor{
		ctx:    ctx,
		target: target,
		lim:    lim.WithDefaults(),
		dirs:   map[string]struct{}{"": {}},
		buf:    make([]byte, copyBufSize),
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return x.st, fmt.Errorf("extract: %w", err)
	}
	dec, err := zstd.NewReader(r,
		// Decoding is the cheap side: a few blocks in flight keep up with any disk, and each
		// one costs memory.
		zstd.WithDecoderConcurrency(min(runtime.GOMAXPROCS(0), 4)),
		zstd.WithDecoderMaxWindow(uint64(x.lim.MaxWindow)),
	)
	if err != nil {
		return x.st, fmt.Errorf("extract: %w", err)
	}
	defer dec.Close()

	x.startWriters()
	err = x.read(dec)
	if errors.Is(err, zstd.ErrWindowSizeExceeded) {
		err = fmt.Errorf("extract: the archive needs a zstd window over the limit of %d MiB (sailtui's archives use 1 MiB; recompress without --long or a high level): %w: %w",
			x.lim.MaxWindow>>20, engine.ErrBadInput, err)
	}
	// Every queued file is written (or, after an error, dropped) before Extract returns, so
	// nothing touches target afterwards and a caller may remove it right away.
	if werr := x.stopWriters(err != nil); err == nil {
		err = werr
	}
	if err == nil {
		err = x.finishDirs()
	}
	return x.st, err
}

func (x *extractor) read(dec io.Reader) error {
	src := stream.NewEOFReader(dec)
	if err := x.run(tar.NewReader(src)); err != nil {
		return err
	}
	return CheckEnd(dec, src)
}

// CheckEnd makes the checks an extraction owes once archive/tar has read the end-of-archive
// marker from eof, which reads the decompressed stream dec: the stream did not run out before
// the marker (a truncated archive reads like a complete one otherwise), and the rest of dec is
// read, which is at most a little padding and is what verifies the last frame's checksum when
// the archive has one (Write's archives have none: their SHA-256 is checked instead).
func CheckEnd(dec io.Reader, eof *stream.EOFReader) error {
	if eof.HitEOF() {
		return fmt.Errorf("extract: archive is truncated (no end-of-archive marker): %w", io.ErrUnexpectedEOF)
	}
	n, err := io.CopyN(io.Discard, dec, maxTrailing+1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("extract: read archive end: %w", err)
	}
	if n > maxTrailing {
		return fmt.Errorf("extract: more than %d bytes after the end of the archive: %w", maxTrailing, engine.ErrBadInput)
	}
	return nil
}

type dirMeta struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
}

type extractor struct {
	ctx     context.Context
	target  string
	lim     Limits
	st      Stats
	entries int64
	// claimed is the payload admitted so far, checked against the limits before any of an
	// entry's data is read.
	claimed int64
	// dirs holds the directories (clean relative names) known to be real directories: created
	// by this extraction or checked with Lstat. A name is added only after that check, and
	// extraction never removes or replaces anything, so a parent found here cannot be a symlink.
	dirs    map[string]struct{}
	dirMeta []dirMeta
	buf     []byte

	// Small files are written by a few goroutines (one per CPU, two to four), so that creating
	// them (far more kernel time than reading them from the archive) overlaps with
	// decompressing and parsing; all the decisions (names, parents, limits) stay in the reading
	// goroutine, in archive order. Each writer has its own queue, and all the files of a
	// directory go to the same one (see file). Their contents travel in a few fixed chunks (see
	// chunk), so the memory in flight is bounded and reused instead of allocated per file.
	queues []chan fileJob
	free   chan []byte
	cur    *chunk
	// lastParent and queue say which writer the previous file went to (see file).
	lastParent string
	queue      int
	writers    sync.WaitGroup
	stop       atomic.Bool
	wmu        sync.Mutex
	werr       error
	wst        Stats
}

// smallFile is the largest file handed to the writers; larger ones are streamed by the reading
// goroutine, so the memory in flight stays at a few MiB.
const smallFile = 256 << 10

// Small files are packed into chunks of chunkSize bytes, of which at most numChunks exist.
const (
	chunkSize = 1 << 20
	numChunks = 3
)

// chunk holds the contents of consecutive small files. refs counts the queued files in it plus
// one while the reader may still add to it; the last one to let go returns the buffer, so the
// writers may finish their files in any order.
type chunk struct {
	buf  []byte
	refs atomic.Int32
}

// fileJob is one small file for a writer.
type fileJob struct {
	name  string // as in the archive, for errors
	path  string
	data  []byte
	c     *chunk
	mode  fs.FileMode
	mtime time.Time
}

func (x *extractor) startWriters() {
	x.free = make(chan []byte, numChunks)
	for range numChunks {
		x.free <- nil // allocated on first use: a small archive needs one
	}
	x.queues = make([]chan fileJob, max(2, min(runtime.GOMAXPROCS(0), 4)))
	for i := range x.queues {
		q := make(chan fileJob, 256)
		x.queues[i] = q
		x.writers.Go(func() { x.writeLoop(q) })
	}
}

// stopWriters waits for the writers to finish; with abort, queued files are dropped.
func (x *extractor) stopWriters(abort bool) error {
	if abort {
		x.stop.Store(true)
	}
	if x.cur != nil {
		x.release(x.cur)
		x.cur = nil
	}
	for _, q := range x.queues {
		close(q)
	}
	x.writers.Wait()
	x.st.Files += x.wst.Files
	x.st.Bytes += x.wst.Bytes
	return x.werr
}

func (x *extractor) release(c *chunk) {
	if c.refs.Add(-1) == 0 {
		x.free <- c.buf[:0]
	}
}

func (x *extractor) writeLoop(jobs <-chan fileJob) {
	for j := range jobs {
		if !x.stop.Load() {
			if err := writeFile(j.path, j.data, j.mode, j.mtime); err != nil {
				x.stop.Store(true)
				x.wmu.Lock()
				if x.werr == nil {
					x.werr = fmt.Errorf("extract %q: %w", j.name, err)
				}
				x.wmu.Unlock()
			} else {
				x.wmu.Lock()
				x.wst.Files++
				x.wst.Bytes += int64(len(j.data))
				x.wmu.Unlock()
			}
		}
		x.release(j.c)
	}
}

func (x *extractor) writerErr() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	return x.werr
}

// smallBuf returns room for n bytes (n <= smallFile) in the current chunk, and the chunk, with
// a reference taken for the job that will carry them. When the chunk is full the next free one
// is taken, waiting for the writers to finish with one if need be.
func (x *extractor) smallBuf(n int) ([]byte, *chunk) {
	if x.cur != nil && len(x.cur.buf)+n > cap(x.cur.buf) {
		x.release(x.cur)
		x.cur = nil
	}
	if x.cur == nil {
		buf := <-x.free
		if buf == nil {
			buf = make([]byte, 0, chunkSize)
		}
		x.cur = &chunk{buf: buf}
		x.cur.refs.Store(1)
	}
	c := x.cur
	start := len(c.buf)
	c.buf = c.buf[:start+n]
	c.refs.Add(1)
	return c.buf[start : start+n : start+n], c
}

func (x *extractor) run(tr *tar.Reader) error {
	for {
		if err := x.ctx.Err(); err != nil {
			return fmt.Errorf("extract: %w", err)
		}
		if err := x.writerErr(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		// ErrInsecurePath (only with GODEBUG=tarinsecurepath=0) comes with a usable header;
		// the checks below give the more precise reason.
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return fmt.Errorf("extract: read archive: %w", err)
		}
		if err := x.entry(hdr, tr); err != nil {
			return fmt.Errorf("extract %q: %w", hdr.Name, err)
		}
	}
}

func (x *extractor) entry(hdr *tar.Header, tr *tar.Reader) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		// Global PAX records (git archive writes one) carry no file.
		return nil
	}
	x.entries++
	if x.entries > x.lim.MaxFiles {
		return fmt.Errorf("more than %d entries: %w", x.lim.MaxFiles, engine.ErrBadInput)
	}
	name, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(name, hdr)
	case tar.TypeReg, '\x00': // '\x00' is the pre-POSIX regular file type.
		return x.file(name, hdr, tr)
	case tar.TypeSymlink:
		return x.symlink(name, hdr)
	case tar.TypeLink:
		return fmt.Errorf("hard link to %q: hard links are not allowed: %w", hdr.Linkname, engine.ErrBadPath)
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("device nodes are not allowed: %w", engine.ErrBadPath)
	case tar.TypeFifo:
		return fmt.Errorf("fifos are not allowed: %w", engine.ErrBadPath)
	default:
		return fmt.Errorf("unsupported entry type %q: %w", hdr.Typeflag, engine.ErrBadPath)
	}
}

func (x *extractor) abs(name string) string {
	if name == "" {
		return x.target
	}
	return filepath.Join(x.target, filepath.FromSlash(name))
}

// ensureDir makes sure name is a real directory, creating it and its parents as needed, and
// refuses when any of them is a symlink or not a directory.
func (x *extractor) ensureDir(name string) error {
	if _, ok := x.dirs[name]; ok {
		return nil
	}
	if err := x.ensureDir(parentOf(name)); err != nil {
		return err
	}
	p := x.abs(name)
	// Mkdir first: in a fresh target it succeeds, which proves a real directory in one syscall.
	err := os.Mkdir(p, 0o755)
	if errors.Is(err, fs.ErrExist) {
		fi, lerr := os.Lstat(p)
		switch {
		case lerr != nil:
			err = lerr
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%q is a symlink; refusing to write through it: %w", name, engine.ErrBadPath)
		case !fi.IsDir():
			return fmt.Errorf("%q exists and is not a directory: %w", name, engine.ErrExists)
		default:
			err = nil
		}
	}
	if err != nil {
		return err
	}
	x.dirs[name] = struct{}{}
	return nil
}

func (x *extractor) dir(name string, hdr *tar.Header) error {
	if err := x.ensureDir(name); err != nil {
		return err
	}
	x.st.Dirs++
	x.dirMeta = append(x.dirMeta, dirMeta{name: name, mode: fs.FileMode(hdr.Mode) & fs.ModePerm, mtime: hdr.ModTime})
	return nil
}

func (x *extractor) file(name string, hdr *tar.Header, r io.Reader) error {
	if err := x.lim.AdmitFile(name, hdr.Size, x.claimed); err != nil {
		return err
	}
	if err := x.ensureDir(parentOf(name)); err != nil {
		return err
	}
	if _, ok := x.dirs[name]; ok {
		return fmt.Errorf("already exists as a directory: %w", engine.ErrExists)
	}
	x.claimed += hdr.Size
	p := x.abs(name)
	mode := fs.FileMode(hdr.Mode) & fs.ModePerm
	if hdr.Size <= smallFile {
		data, c := x.smallBuf(int(hdr.Size))
		if _, err := io.ReadFull(r, data); err != nil {
			x.release(c)
			return fmt.Errorf("read archive: %w", err)
		}
		// The files of a directory go to the same writer, the next directory's to the next
		// one: threads creating entries in one directory at once wait for each other's lock
		// (spinning, on a busy machine, for far longer than the creates take).
		if parent := parentOf(name); parent != x.lastParent {
			x.lastParent = parent
			x.queue = (x.queue + 1) % len(x.queues)
		}
		x.queues[x.queue] <- fileJob{name: hdr.Name, path: p, data: data, c: c, mode: mode, mtime: hdr.ModTime}
		return nil
	}
	f, err := createFile(p, mode)
	if err != nil {
		return err
	}
	if err := x.copyTo(f, r, hdr.Size); err != nil {
		f.abandon()
		return err
	}
	if err := f.finish(mode, hdr.ModTime); err != nil {
		return err
	}
	x.st.Files++
	x.st.Bytes += hdr.Size
	return nil
}

// errDuplicate is what creating an entry over an existing name gives.
var errDuplicate = fmt.Errorf("already exists (duplicate entry or existing file): %w", engine.ErrExists)

// writeFile creates p with data, mode and mtime, refusing an existing name (see createFile).
func writeFile(p string, data []byte, mode fs.FileMode, mtime time.Time) error {
	f, err := createFile(p, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.abandon()
		return err
	}
	return f.finish(mode, mtime)
}

func (x *extractor) copyTo(f io.Writer, r io.Reader, size int64) error {
	for remaining := size; remaining > 0; {
		n, err := io.ReadFull(r, x.buf[:min(remaining, int64(len(x.buf)))])
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		if _, err := f.Write(x.buf[:n]); err != nil {
			return err
		}
		remaining -= int64(n)
		if remaining > 0 {
			if err := x.ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (x *extractor) symlink(name string, hdr *tar.Header) error {
	if name == "" {
		return fmt.Errorf("symlink names the target itself: %w", engine.ErrBadPath)
	}
	if x.lim.AnyLinkTarget {
		if hdr.Linkname == "" || strings.IndexByte(hdr.Linkname, 0) >= 0 {
			return fmt.Errorf("empty or NUL symlink target: %w", engine.ErrBadPath)
		}
	} else if err := checkLinkTarget(name, hdr.Linkname); err != nil {
		return fmt.Errorf("%w: %w", err, engine.ErrBadPath)
	}
	if err := x.ensureDir(parentOf(name)); err != nil {
		return err
	}
	p := x.abs(name)
	err := os.Symlink(hdr.Linkname, p)
	if errors.Is(err, fs.ErrExist) {
		return errDuplicate
	}
	if err != nil {
		return err
	}
	if err := lchtimes(p, hdr.ModTime, true); err != nil {
		return err
	}
	x.st.Symlinks++
	return nil
}

// finishDirs applies directory modes and times last: writing a directory's contents changes
// its mtime, and a read-only mode would block them.
func (x *extractor) finishDirs() error {
	for i := len(x.dirMeta) - 1; i >= 0; i-- {
		d := x.dirMeta[i]
		p := x.abs(d.name)
		if err := os.Chmod(p, d.mode); err != nil {
			return fmt.Errorf("extract %q: %w", d.name, err)
		}
		if err := lchtimes(p, d.mtime, false); err != nil {
			return fmt.Errorf("extract %q: %w", d.name, err)
		}
	}
	return nil
}
