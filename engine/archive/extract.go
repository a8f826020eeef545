package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
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
	// MaxSparseSize caps the length of a sparse file (see Entry.Sparse), whose data counts
	// against MaxBytes as it is written: a hole costs no disk but its zeros are read, so this
	// bounds the time a restore spends on them. Default DefaultMaxSparseSize.
	MaxSparseSize int64
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

// AdmitSparse decides whether a sparse file entry named name of length size may be extracted
// (see AdmitFile; its data is admitted as it is read).
func (l Limits) AdmitSparse(name string, size int64) error {
	switch {
	case name == "":
		return fmt.Errorf("regular file names the target itself: %w", engine.ErrBadPath)
	case size < 0:
		return fmt.Errorf("negative size: %w", engine.ErrBadInput)
	case size > l.MaxSparseSize:
		return fmt.Errorf("sparse file of length %d over the limit of %d bytes: %w", size, l.MaxSparseSize, engine.ErrBadInput)
	}
	return nil
}

// Default extraction limits: far above any development project, far below a disk.
// DefaultMaxSparseSize is the longest sparse file (holes included) a restore accepts, and so
// the longest Write archives: reading its holes takes about a minute a TiB.
const (
	DefaultMaxBytes      = 64 << 30
	DefaultMaxFiles      = 5_000_000
	DefaultMaxSparseSize = 1 << 40
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
	if l.MaxSparseSize <= 0 {
		l.MaxSparseSize = DefaultMaxSparseSize
	}
	return l
}

// Extract unpacks a zstd-compressed tar stream (as made by Write) into target, creating it if
// needed. Every archive is treated as hostile (DESIGN.md invariant 8): the entries are read
// through Filter, whose rules every extraction shares, and on disk an entry is refused, and the extraction stops, when any parent of it is a
// symlink (nothing is ever written through a symlink, whether the archive made it or it was
// there before) or not a directory, and when it would replace an existing entry (duplicates
// included; an existing directory may be named again), and a hard link whose target is not a
// regular file already in target, reached without a symlink, is refused (a link never leads
// out). A sparse file's blocks of zeros are left holes, and count for nothing against the
// limits; fifos are made anew. Errors name the entry and wrap
// engine.ErrBadPath (where it would land), engine.ErrExists (collisions) or engine.ErrBadInput
// (limits).
//
// Permission bits (setuid, setgid and sticky are dropped) and modification times are restored;
// directories get theirs after their contents are written. Ownership is restored only with
// lim.Owners when running as root (see Limits.Owners); otherwise files belong to the extracting
// user. Entries written before an error are left in target; extract into a fresh directory and
// remove it on failure.
//
// On Linux every entry is created relative to a descriptor of its parent directory, each
// opened from its own parent's without following a symlink, so a directory swapped for a
// symlink while Extract runs cannot lead an entry outside target. Elsewhere the checks assume
// nothing else modifies target while Extract runs.
func Extract(ctx context.Context, r io.Reader, target string, lim Limits) (Stats, error) {
	x := &extractor{
		ctx:    ctx,
		target: target,
		lim:    lim.WithDefaults(),
		owners: lim.Owners && geteuid() == 0,
		dirs:   map[string]struct{}{"": {}},
		open:   map[string]*dirRef{},
		buf:    make([]byte, copyBufSize),
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return x.st, fmt.Errorf("extract: %w", err)
	}
	root, err := openOutRoot(target)
	if err != nil {
		return x.st, fmt.Errorf("extract: %w", err)
	}
	x.root = &dirRef{d: root}
	x.root.refs.Store(1)
	x.open[""] = x.root
	x.startWriters()
	err = Filter(ctx, r, x.lim, Rules{HardLinks: true}, x.entry)
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
	x.closeDirs()
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
	// dirs holds the directories (clean relative names) known to be real directories: opened
	// by this extraction without following a symlink. Extraction never removes or replaces
	// anything, so a name found here needs no mkdir, only to be opened again when its
	// descriptor left the cache (which checks it once more).
	dirs    map[string]struct{}
	dirMeta []dirMeta
	buf     []byte

	// root is target, open; open caches descriptors of the directories used lately, keyed by
	// clean relative name, so that the files of a directory (archives list them together) are
	// created relative to it without a lookup of the path (see openDir). tick orders uses,
	// for evicting the least recent.
	root *dirRef
	open map[string]*dirRef
	tick uint64

	// Small files are written by a few goroutines (one per CPU, two to four), so that creating
	// them (far more kernel time than reading them from the archive) overlaps with
	// decompressing and parsing; all the decisions (names, parents, limits) stay in the reading
	// goroutine, in archive order. Each writer has its own queue, and all the files of a
	// directory go to the same one (see file), in batches (pending), so that a hand-off (and
	// the wake-up of a writer) is paid per run of files, not per file. Their contents travel in
	// a few fixed chunks (see chunk), so the memory in flight is bounded and reused instead of
	// allocated per file.
	queues  []chan []fileJob
	pending []fileJob
	free    chan []byte
	cur     *chunk
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
// Smaller chunks than the files in flight would need, and more of them: a chunk comes back
// only once every file in it is written, and with the files of one chunk spread over the
// writers, a few large chunks left one writer idle while the reader waited for the other to
// finish the last file of the oldest one.
const (
	chunkSize = 512 << 10
	numChunks = 8
)

// batchFiles caps the files handed to a writer at once: enough to make the hand-offs rare,
// few enough that a writer starts while the reader still fills the chunk.
const batchFiles = 64

// maxOpenDirs bounds the directory descriptors the cache keeps (beyond those queued files
// still hold); a variable so tests can make the cache evict.
var maxOpenDirs = 128

// dirRef is an open directory of the target, shared by the cache and the queued files to be
// created in it; the last one to let go closes it.
type dirRef struct {
	d    outDir
	refs atomic.Int32
	// used is the tick of the last lookup (reading goroutine only).
	used uint64
}

func (r *dirRef) release() {
	if r.refs.Add(-1) == 0 {
		r.d.close()
	}
}

// chunk holds the contents of consecutive small files. refs counts the queued files in it plus
// one while the reader may still add to it; the last one to let go returns the buffer, so the
// writers may finish their files in any order.
type chunk struct {
	buf  []byte
	refs atomic.Int32
}

// fileJob is one small file for a writer.
type fileJob struct {
	name string // as in the archive, for errors
	// dir is the parent directory (a reference the job holds), base the name in it.
	dir   *dirRef
	base  string
	data  []byte
	c     *chunk
	mode  fs.FileMode
	mtime time.Time
	// own is the owner to give the file, nil to leave it to the extracting user.
	own *owner
	// barrier, when set, makes the job no file but a mark: the writer is done with what it
	// was given before (see drainWriters).
	barrier *sync.WaitGroup
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
	x.queues = make([]chan []fileJob, max(2, min(runtime.GOMAXPROCS(0), 4)))
	for i := range x.queues {
		q := make(chan []fileJob, 16)
		x.queues[i] = q
		x.writers.Go(func() { x.writeLoop(q) })
	}
}

// flush hands the pending files to their writer.
func (x *extractor) flush() {
	if len(x.pending) == 0 {
		return
	}
	x.queues[x.queue] <- x.pending
	x.pending = make([]fileJob, 0, batchFiles)
}

// stopWriters waits for the writers to finish; with abort, queued files are dropped.
func (x *extractor) stopWriters(abort bool) error {
	if abort {
		x.stop.Store(true)
	}
	x.flush()
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

// closeDirs closes the cached directories; queued files hold none any more.
func (x *extractor) closeDirs() {
	for name, r := range x.open {
		delete(x.open, name)
		r.release()
	}
}

func (x *extractor) release(c *chunk) {
	if c.refs.Add(-1) == 0 {
		x.free <- c.buf[:0]
	}
}

func (x *extractor) writeLoop(batches <-chan []fileJob) {
	for batch := range batches {
		// Counted per batch: a lock per file is a wake-up of another writer per file.
		var st Stats
		for _, j := range batch {
			if j.barrier != nil {
				j.barrier.Done()
				continue
			}
			if !x.stop.Load() {
				if err := writeFile(j.dir.d, j.base, j.data, j.mode, j.mtime, j.own); err != nil {
					x.stop.Store(true)
					x.wmu.Lock()
					if x.werr == nil {
						x.werr = fmt.Errorf("extract %q: %w", j.name, err)
					}
					x.wmu.Unlock()
				} else {
					st.Files++
					st.Bytes += int64(len(j.data))
				}
			}
			x.release(j.c)
			j.dir.release()
		}
		x.wmu.Lock()
		x.wst.Files += st.Files
		x.wst.Bytes += st.Bytes
		x.wmu.Unlock()
	}
}

func (x *extractor) writerErr() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	return x.werr
}

// smallBuf returns room for n bytes (n <= smallFile) in the current chunk, and the chunk, with
// a reference taken for the job that will carry them. When the chunk is full the next free one
// is taken, waiting for the writers to finish with one if need be; the pending files are
// handed over first, since they may be what holds it.
func (x *extractor) smallBuf(n int) ([]byte, *chunk) {
	if x.cur != nil && len(x.cur.buf)+n > cap(x.cur.buf) {
		x.flush()
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
	case tar.TypeLink:
		return x.hardLink(e)
	case tar.TypeFifo:
		return x.fifo(e)
	default:
		return fmt.Errorf("entry type %q not extracted: %w", e.Type, engine.ErrBadPath)
	}
}

// openDir returns the directory name (a clean relative name, "" for the target) open, with a
// reference the caller releases, creating it and its missing parents. Each is opened from its
// parent's descriptor without following a symlink, so a symlink or anything but a directory
// on the way is refused, whoever put it there and whenever.
func (x *extractor) openDir(name string) (*dirRef, error) {
	x.tick++
	if r, ok := x.open[name]; ok {
		r.used = x.tick
		r.refs.Add(1)
		return r, nil
	}
	parent, err := x.openDir(parentOf(name))
	if err != nil {
		return nil, err
	}
	defer parent.release()
	base := baseOf(name)
	if _, known := x.dirs[name]; !known {
		// Mkdir first: in a fresh target it succeeds, and the open below then finds what it
		// made; an existing name is checked by that open.
		if err := parent.d.mkdir(base); err != nil && !isExist(err) {
			return nil, err
		}
	}
	d, err := parent.d.openDir(base)
	if err != nil {
		if errors.Is(err, errDirIsSymlink) || errors.Is(err, errDirNotDir) {
			return nil, fmt.Errorf("%q %w", name, err)
		}
		return nil, err
	}
	x.dirs[name] = struct{}{}
	r := &dirRef{d: d, used: x.tick}
	r.refs.Store(2) // the cache's and the caller's
	x.open[name] = r
	if len(x.open) > maxOpenDirs {
		x.evictDirs()
	}
	return r, nil
}

// evictDirs drops the least recently used half of the cached directories (never the target);
// a queued file or a caller still holding one keeps it open until done with it.
func (x *extractor) evictDirs() {
	uses := make([]uint64, 0, len(x.open))
	for _, r := range x.open {
		uses = append(uses, r.used)
	}
	slices.Sort(uses)
	cutoff := uses[len(uses)/2]
	for name, r := range x.open {
		if name != "" && r.used < cutoff {
			delete(x.open, name)
			r.release()
		}
	}
}

func (x *extractor) dir(e Entry) error {
	r, err := x.openDir(e.Name)
	if err != nil {
		return err
	}
	r.release()
	x.st.Dirs++
	x.dirMeta = append(x.dirMeta, dirMeta{name: e.Name, mode: e.Mode, mtime: e.ModTime, uid: e.Uid, gid: e.Gid})
	return nil
}

// file writes a regular file; Filter admitted its size against the limits.
func (x *extractor) file(e Entry, r io.Reader) error {
	name := e.Name
	if _, ok := x.dirs[name]; ok {
		return fmt.Errorf("already exists as a directory: %w", engine.ErrExists)
	}
	parentName := parentOf(name)
	parent, err := x.openDir(parentName)
	if err != nil {
		return err
	}
	base := baseOf(name)
	mode := e.Mode
	if sd, ok := r.(*sparseData); ok {
		defer parent.release()
		return x.sparseFile(e, sd, parent, base)
	}
	if e.Size <= smallFile {
		data, c := x.smallBuf(int(e.Size))
		if _, err := io.ReadFull(r, data); err != nil {
			x.release(c)
			parent.release()
			return fmt.Errorf("read archive: %w", err)
		}
		// The files of a directory go to the same writer, the next directory's to the next
		// one: threads creating entries in one directory at once wait for each other's lock
		// (spinning, on a busy machine, for far longer than the creates take).
		if parentName != x.lastParent {
			x.flush()
			x.lastParent = parentName
			x.queue = (x.queue + 1) % len(x.queues)
		}
		x.pending = append(x.pending, fileJob{name: name, dir: parent, base: base, data: data, c: c, mode: mode, mtime: e.ModTime, own: x.ownerOf(e)})
		if len(x.pending) >= batchFiles {
			x.flush()
		}
		return nil
	}
	defer parent.release()
	f, err := parent.d.createFile(base, mode)
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

// sparseFile writes the sparse file e into parent as base: only the blocks that hold data,
// each where it belongs, and the length at the end, so that every block of zeros is a hole.
func (x *extractor) sparseFile(e Entry, sd *sparseData, parent *dirRef, base string) error {
	f, err := parent.d.createFile(base, e.Mode)
	if err != nil {
		return err
	}
	var written int64
	write := func(off int64, p []byte) error {
		written += int64(len(p))
		_, err := f.WriteAt(p, off)
		return err
	}
	for {
		err := sd.runs(x.buf, write)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = x.ctx.Err()
		}
		if err != nil {
			f.abandon()
			return err
		}
	}
	if err := f.truncate(e.Size); err != nil {
		f.abandon()
		return err
	}
	if err := f.chown(x.ownerOf(e)); err != nil {
		f.abandon()
		return err
	}
	if err := f.finish(e.Mode, e.ModTime); err != nil {
		return err
	}
	x.st.Files++
	x.st.Sparse++
	x.st.Bytes += written
	return nil
}

// hardLink makes e a hard link to its target, which must be a regular file this extraction
// wrote (or target held), in a directory it made or opened, reached without a symlink: a
// link can only give a file inside target one more name.
func (x *extractor) hardLink(e Entry) error {
	notFile := fmt.Errorf("hard link to %q: not a regular file extracted before it: %w", e.Linkname, engine.ErrBadPath)
	if _, known := x.dirs[parentOf(e.Linkname)]; !known {
		return notFile
	}
	tdir, err := x.openDir(parentOf(e.Linkname))
	if err != nil {
		return err
	}
	defer tdir.release()
	tbase := baseOf(e.Linkname)
	ok, err := tdir.d.regular(tbase)
	if err == nil && !ok {
		// The target may still be in a writer's queue: let every queued file be written.
		x.drainWriters()
		if err = x.writerErr(); err != nil {
			return errWriterFailed
		}
		ok, err = tdir.d.regular(tbase)
	}
	if err != nil {
		return err
	}
	if !ok {
		return notFile
	}
	parent, err := x.openDir(parentOf(e.Name))
	if err != nil {
		return err
	}
	defer parent.release()
	if err := parent.d.link(tdir.d, tbase, baseOf(e.Name)); err != nil {
		return err
	}
	x.st.HardLinks++
	return nil
}

// fifo makes a named pipe.
func (x *extractor) fifo(e Entry) error {
	parent, err := x.openDir(parentOf(e.Name))
	if err != nil {
		return err
	}
	defer parent.release()
	if err := parent.d.mkfifo(baseOf(e.Name), e.Mode, x.ownerOf(e), e.ModTime); err != nil {
		return err
	}
	x.st.Fifos++
	return nil
}

// drainWriters returns once every file handed to the writers so far is written (or dropped).
func (x *extractor) drainWriters() {
	x.flush()
	var wg sync.WaitGroup
	for _, q := range x.queues {
		wg.Add(1)
		q <- []fileJob{{barrier: &wg}}
	}
	wg.Wait()
}

// errDuplicate is what creating an entry over an existing name gives.
var errDuplicate = fmt.Errorf("already exists (duplicate entry or existing file): %w", engine.ErrExists)

// writeFile creates the file name of d with data, mode, mtime and, unless own is nil, that
// owner, refusing an existing name (see outDir.createFile).
func writeFile(d outDir, name string, data []byte, mode fs.FileMode, mtime time.Time, own *owner) error {
	f, err := d.createFile(name, mode)
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
	parent, err := x.openDir(parentOf(e.Name))
	if err != nil {
		return err
	}
	defer parent.release()
	if err := parent.d.symlink(e.Linkname, baseOf(e.Name), x.ownerOf(e), e.ModTime); err != nil {
		return err
	}
	x.st.Symlinks++
	return nil
}

// finishDirs applies directory owners, modes and times last: writing a directory's contents
// changes its mtime, and a read-only mode would block them. The deepest go first, so that no
// directory is closed to its owner before what is below it is done, whatever order the
// archive named them in; among directories of one depth the later entries go first, as they
// always have.
func (x *extractor) finishDirs() error {
	order := make([]dirMeta, 0, len(x.dirMeta))
	for i := len(x.dirMeta) - 1; i >= 0; i-- {
		order = append(order, x.dirMeta[i])
	}
	slices.SortStableFunc(order, func(a, b dirMeta) int { return depthOf(b.name) - depthOf(a.name) })
	for _, d := range order {
		var own *owner
		if x.owners {
			own = &owner{uid: d.uid, gid: d.gid}
		}
		var err error
		if d.name == "" {
			err = x.root.d.finishDir("", own, d.mode, d.mtime)
		} else {
			var parent *dirRef
			if parent, err = x.openDir(parentOf(d.name)); err == nil {
				err = parent.d.finishDir(baseOf(d.name), own, d.mode, d.mtime)
				parent.release()
			}
		}
		if err != nil {
			return fmt.Errorf("extract %q: %w", d.name, err)
		}
	}
	return nil
}

// depthOf is how many names deep a clean relative name is ("" is the target, depth 0).
func depthOf(name string) int {
	if name == "" {
		return 0
	}
	return strings.Count(name, "/") + 1
}
