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
	"sync"
	"sync/atomic"
	"time"

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
	// Owners restores the numeric uid and gid each entry records (see WriteOptions.Owners) on
	// everything Extract creates, the target itself included when the archive names it: files,
	// directories and symlinks (the link itself, never what it points at). A service's data
	// directory needs it (PostgreSQL refuses one owned by root). Only root can give files away,
	// so when the process does not run as root the ids are not applied and entries belong to
	// the extracting user, as without the option; they are still checked, so an archive with
	// an id no chown can apply (negative, or past 32 bits) is refused wherever it is restored,
	// with an error wrapping engine.ErrBadInput. The modes are the archive's all the same:
	// setuid, setgid and sticky stay dropped.
	Owners bool
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
// needed. Every archive is treated as hostile (DESIGN.md invariant 8): the entries are read
// through Filter, whose rules every extraction shares (hard links refused: Write never makes
// them), and on disk an entry is refused, and the extraction stops, when any parent of it is a
// symlink (nothing is ever written through a symlink, whether the archive made it or it was
// there before) or not a directory, and when it would replace an existing entry (duplicates
// included; an existing directory may be named again). Errors name the entry and wrap
// engine.ErrBadPath (where it would land), engine.ErrExists (collisions) or engine.ErrBadInput
// (limits).
//
// Permission bits (setuid, setgid and sticky are dropped) and modification times are restored;
// directories get theirs after their contents are written. Ownership is restored only with
// lim.Owners when running as root (see Limits.Owners); otherwise files belong to the extracting
// user. Entries written before an error are left in target; extract into a fresh directory and
// remove it on failure.
//
// The checks assume nothing else modifies target while Extract runs.
func Extract(ctx context.Context, r io.Reader, target string, lim Limits) (Stats, error) {
	x := &extractor{
		ctx:    ctx,
		target: target,
		lim:    lim.WithDefaults(),
		owners: lim.Owners && geteuid() == 0,
		dirs:   map[string]struct{}{"": {}},
		buf:    make([]byte, copyBufSize),
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return x.st, fmt.Errorf("extract: %w", err)
	}
	x.startWriters()
	err := Filter(ctx, r, x.lim, Rules{}, x.entry)
	if errors.Is(err, errWriterFailed) {
		// The writer's own error names the file it could not write.
		err = x.writerErr()
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

// geteuid is os.Geteuid, replaced by the tests that check what a restore not running as root
// does with Limits.Owners.
var geteuid = os.Geteuid

type dirMeta struct {
	name     string
	mode     fs.FileMode
	mtime    time.Time
	uid, gid int
}

type extractor struct {
	ctx    context.Context
	target string
	lim    Limits
	// owners is whether entries get the uid and gid they record (Limits.Owners, as root).
	owners bool
	st     Stats
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
	// own is the owner to give the file, nil to leave it to the extracting user.
	own *owner
}

// owner is a numeric uid and gid to apply to an entry being created.
type owner struct{ uid, gid int }

// ownerOf is the owner x gives e, nil when it applies none.
func (x *extractor) ownerOf(e Entry) *owner {
	if !x.owners {
		return nil
	}
	return &owner{uid: e.Uid, gid: e.Gid}
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
			if err := writeFile(j.path, j.data, j.mode, j.mtime, j.own); err != nil {
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

// errWriterFailed stops Filter once a writer failed; Extract reports the writer's error.
var errWriterFailed = errors.New("a file could not be written")

// entry writes one entry Filter accepted.
func (x *extractor) entry(e Entry, data io.Reader) error {
	if x.writerErr() != nil {
		return errWriterFailed
	}
	switch e.Type {
	case tar.TypeDir:
		return x.dir(e)
	case tar.TypeReg:
		return x.file(e, data)
	case tar.TypeSymlink:
		return x.symlink(e)
	default:
		// Filter accepts hard links only when asked to, and Extract does not ask.
		return fmt.Errorf("entry type %q not extracted: %w", e.Type, engine.ErrBadPath)
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

func (x *extractor) dir(e Entry) error {
	if err := x.ensureDir(e.Name); err != nil {
		return err
	}
	x.st.Dirs++
	x.dirMeta = append(x.dirMeta, dirMeta{name: e.Name, mode: e.Mode, mtime: e.ModTime, uid: e.Uid, gid: e.Gid})
	return nil
}

// file writes a regular file; Filter admitted its size against the limits.
func (x *extractor) file(e Entry, r io.Reader) error {
	name := e.Name
	if err := x.ensureDir(parentOf(name)); err != nil {
		return err
	}
	if _, ok := x.dirs[name]; ok {
		return fmt.Errorf("already exists as a directory: %w", engine.ErrExists)
	}
	p := x.abs(name)
	mode := e.Mode
	if e.Size <= smallFile {
		data, c := x.smallBuf(int(e.Size))
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
		x.queues[x.queue] <- fileJob{name: name, path: p, data: data, c: c, mode: mode, mtime: e.ModTime, own: x.ownerOf(e)}
		return nil
	}
	f, err := createFile(p, mode)
	if err != nil {
		return err
	}
	if err := x.copyTo(f, r, e.Size); err != nil {
		f.abandon()
		return err
	}
	if err := f.chown(x.ownerOf(e)); err != nil {
		f.abandon()
		return err
	}
	if err := f.finish(mode, e.ModTime); err != nil {
		return err
	}
	x.st.Files++
	x.st.Bytes += e.Size
	return nil
}

// errDuplicate is what creating an entry over an existing name gives.
var errDuplicate = fmt.Errorf("already exists (duplicate entry or existing file): %w", engine.ErrExists)

// writeFile creates p with data, mode, mtime and, unless own is nil, that owner, refusing an
// existing name (see createFile).
func writeFile(p string, data []byte, mode fs.FileMode, mtime time.Time, own *owner) error {
	f, err := createFile(p, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.abandon()
		return err
	}
	if err := f.chown(own); err != nil {
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

// symlink makes a symlink; Filter checked its target.
func (x *extractor) symlink(e Entry) error {
	if err := x.ensureDir(parentOf(e.Name)); err != nil {
		return err
	}
	p := x.abs(e.Name)
	err := os.Symlink(e.Linkname, p)
	if errors.Is(err, fs.ErrExist) {
		return errDuplicate
	}
	if err != nil {
		return err
	}
	if own := x.ownerOf(e); own != nil {
		// Lchown: the link just made is what gets the owner, never what it points at.
		if err := os.Lchown(p, own.uid, own.gid); err != nil {
			return err
		}
	}
	if err := lchtimes(p, e.ModTime, true); err != nil {
		return err
	}
	x.st.Symlinks++
	return nil
}

// finishDirs applies directory owners, modes and times last: writing a directory's contents
// changes its mtime, and a read-only mode would block them. The owner goes first, so the mode
// set after it is the one kept, whatever a chown clears.
func (x *extractor) finishDirs() error {
	for i := len(x.dirMeta) - 1; i >= 0; i-- {
		d := x.dirMeta[i]
		p := x.abs(d.name)
		if x.owners {
			// Lchown: should the name have become a symlink, the link is what changes owner.
			if err := os.Lchown(p, d.uid, d.gid); err != nil {
				return fmt.Errorf("extract %q: %w", d.name, err)
			}
		}
		if err := os.Chmod(p, d.mode); err != nil {
			return fmt.Errorf("extract %q: %w", d.name, err)
		}
		if err := lchtimes(p, d.mtime, false); err != nil {
			return fmt.Errorf("extract %q: %w", d.name, err)
		}
	}
	return nil
}
