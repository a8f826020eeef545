// Package archive is sailtui's snapshot format: a tar stream (GNU format, so file names are kept
// as raw bytes) compressed with zstd, and the Volumes implementation that keeps such archives in
// an ObjectStore (the "S3 sandwich"). Archives are written and read strictly as streams, so a
// project of any size is archived and restored in bounded memory, and extraction treats every
// archive as hostile (DESIGN.md invariant 8).
package archive

import (
	"archive/tar"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// WriteOptions tunes Write.
type WriteOptions struct {
	// Exclude lists patterns of entries left out (see DefaultExcludes for the syntax). nil means
	// DefaultExcludes; an empty, non-nil slice excludes nothing.
	Exclude []string
	// Progress, when set, is called with the payload bytes archived so far and the total found
	// by a quick walk made first. It is called from the writing goroutine.
	Progress func(done, total int64)
	// AnyLinkTarget keeps symlinks whatever they point at (see Limits.AnyLinkTarget); without it
	// a link out of root fails the write rather than make an archive Extract would refuse.
	AnyLinkTarget bool
	// Owners records each entry's numeric uid and gid (user and group names stay empty: ids
	// are what a restore applies, and names would tie the archive to this host's passwd), so
	// that Extract with Limits.Owners can give a tree like a database's data directory back to
	// its owners. The ids come from the same stat as the entry's mode, never from a name looked
	// up again: the descriptor the walk opened for a file or directory, and for a symlink
	// (which cannot be opened) the stat relative to its parent's descriptor. Without it every
	// entry records uid and gid 0 and the archive is byte for byte what it was before.
	Owners bool
	// MaxSparseSize is the longest sparse file (holes included) archived, DefaultMaxSparseSize
	// when 0: a longer one fails the write, as a restore with the same Limits.MaxSparseSize
	// would refuse it.
	MaxSparseSize int64
}

// Stats counts what an archive holds (Write) or what was written to disk (Extract).
type Stats struct {
	Files    int64
	Dirs     int64
	Symlinks int64
	// Bytes is the uncompressed payload: the sum of the regular files' sizes, where a sparse
	// file counts its data (Write: the 4 KiB blocks its data fragments cover; Extract: the
	// blocks it wrote), not its holes. A snapshot records Write's as the most a restore may
	// write (engine.Snapshot.UnpackedBytes).
	Bytes int64
	// Sparse counts the regular files kept with their holes (see Write), HardLinks the
	// entries kept as hard links to an earlier file, Fifos the named pipes.
	Sparse    int64
	HardLinks int64
	Fifos     int64
	// Skipped counts entries that cannot be archived (sockets, devices), and SkippedPaths
	// names the first few of them (at most MaxSkippedPaths), for the snapshot's report.
	Skipped      int64
	SkippedPaths []string
	// Excluded counts entries (a directory counting once) left out by the exclusion patterns.
	Excluded int64
}

// MaxSkippedPaths is how many of the entries Write skips it names in Stats.SkippedPaths.
const MaxSkippedPaths = 5

// progressStep bounds how often Progress is called, so a tree of tiny files does not turn the
// callback into the bottleneck.
const progressStep = 1 << 20

// copyBufSize is the read size for file contents: large enough that big files move in few
// syscalls, small enough to be irrelevant next to the encoder's own buffers.
const copyBufSize = 256 << 10

// Write archives the tree at root into w as a zstd-compressed tar stream: independent zstd
// frames of 1 MiB of tar each, compressed on all cores (up to four), which any zstd decoder (the
// command line one included) reads as one stream. The file walk and reads stay in the calling
// goroutine. Memory stays at about 15 MiB whatever the size of the tree, most of it frame
// buffers kept outside the Go heap (see parallelEncoder). The walk is sorted and
// never follows symlinks, so the same tree always gives the same bytes. Regular files, directories
// (empty ones too) and symlinks are kept with their permission bits and modification times (to
// the second); fifos are kept as fifos (an extraction makes new, empty ones); a file linked more
// than once inside the tree is kept once, its other names as hard links to the first; sockets
// and devices, which a snapshot cannot hold, are counted and named in Stats.Skipped and
// Stats.SkippedPaths. A sparse file keeps its holes: it is stored as a GNU PAX sparse file
// (format 1.0, which GNU tar reads), with only its data fragments, found with SEEK_DATA and
// SEEK_HOLE, so its size in the archive is that of its data, not its length. A symlink that
// extraction would refuse (one pointing outside root) fails the write instead of producing an
// archive that cannot be restored.
//
// root itself is the caller's and is resolved once; everything below it belongs to the project,
// whose processes may be renaming things while it is archived. The walk therefore goes by
// directory descriptors and never looks a path up (DESIGN.md invariant 10): each entry is
// opened relative to its parent's descriptor without following it, and archived as what was
// opened, so swapping a directory for a symlink cannot take the walk outside root. An entry that
// keeps changing type under the walk fails the write as "changed while being archived".
//
// A file that changes size while it is read fails the write: a snapshot must be a faithful copy.
func Write(ctx context.Context, root string, w io.Writer, opts WriteOptions) (Stats, error) {
	var st Stats
	m, err := compileExcludes(opts.Exclude)
	if err != nil {
		return st, fmt.Errorf("archive %s: %w", root, err)
	}
	rootDir, rootLen, err := openWalkRoot(root)
	if err != nil {
		return st, fmt.Errorf("archive %s: %w", root, err)
	}
	defer rootDir.close()
	rootStat, err := rootDir.stat()
	if err != nil {
		return st, fmt.Errorf("archive %s: %w", root, err)
	}

	var total int64
	if opts.Progress != nil {
		total, err = payloadSize(ctx, rootDir, rootLen, m)
		if err != nil {
			return st, fmt.Errorf("archive %s: measure: %w", root, err)
		}
	}

	enc, err := newParallelEncoder(w)
	if err != nil {
		return st, fmt.Errorf("archive %s: %w", root, err)
	}
	aw := &archiveWriter{
		ctx:       ctx,
		raw:       enc,
		tw:        tar.NewWriter(enc),
		buf:       make([]byte, copyBufSize),
		progress:  opts.Progress,
		anyLink:   opts.AnyLinkTarget,
		maxSparse: cmp.Or(max(opts.MaxSparseSize, 0), DefaultMaxSparseSize),
		owners:    opts.Owners,
		total:     total,
		st:        &st,
	}
	err = aw.header(&tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: rootStat.mode, ModTime: rootStat.mtime}, rootStat)
	if err == nil {
		wk := newWalker(ctx, m, &st, rootLen, aw)
		err = wk.walk(rootDir, "")
	}
	if err == nil {
		err = aw.tw.Close()
	}
	if err != nil {
		// Drop whatever is still buffered rather than finishing the stream around a truncated
		// tree: a reader must never mistake a failed archive for a complete one.
		enc.Abort()
		return st, fmt.Errorf("archive %s: %w", root, err)
	}
	if err := enc.Close(); err != nil {
		return st, fmt.Errorf("archive %s: compress: %w", root, err)
	}
	if opts.Progress != nil {
		opts.Progress(aw.done, total)
	}
	return st, nil
}

type archiveWriter struct {
	ctx context.Context
	// raw is what tw writes to; the headers of sparse files, which tw cannot write, go to it
	// directly, between two of tw's entries.
	raw      io.Writer
	tw       *tar.Writer
	buf      []byte
	progress func(done, total int64)
	done     int64
	reported int64
	total    int64
	st       *Stats
	anyLink  bool
	owners   bool
	// maxSparse is the longest sparse file archived (WriteOptions.MaxSparseSize).
	maxSparse int64
	// links maps the files linked more than once (nlink > 1) that were archived to the name
	// they were archived at, so their other names become hard links to it.
	links map[fileID]string
}

// header writes h for the entry es describes.
func (aw *archiveWriter) header(h *tar.Header, es entryStat) error {
	// GNU rather than PAX: it stores names and link targets as raw bytes (non-UTF-8 names
	// round-trip) and long names cost one extra block instead of PAX's two per entry.
	h.Format = tar.FormatGNU
	h.ModTime = h.ModTime.Truncate(time.Second)
	if aw.owners {
		h.Uid, h.Gid = es.uid, es.gid
	}
	if err := aw.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%q: write header: %w", h.Name, err)
	}
	return nil
}

func (aw *archiveWriter) dir(rel string, es entryStat) error {
	aw.st.Dirs++
	return aw.header(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: es.mode, ModTime: es.mtime}, es)
}

func (aw *archiveWriter) symlink(rel, target string, es entryStat) error {
	// With anyLink a link is kept as written: it is inert data until something follows it.
	if err := checkLinkTarget(rel, target); err != nil && !aw.anyLink {
		return fmt.Errorf("%q: %v; archives refuse such links, remove or make it relative inside the project", rel, err)
	}
	aw.st.Symlinks++
	return aw.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: rel, Linkname: target, Mode: es.mode, ModTime: es.mtime}, es)
}

// file archives the regular file open as f, described by es, which is the stat of f itself:
// what goes in the archive is what was opened, whatever the name points at by now.
func (aw *archiveWriter) file(rel string, f fileReader, es entryStat) error {
	if es.nlink > 1 {
		if first, ok := aw.links[es.id]; ok {
			aw.st.HardLinks++
			aw.advance(es.size) // the measuring walk counted this name too
			return aw.header(&tar.Header{Typeflag: tar.TypeLink, Name: rel, Linkname: first, Mode: es.mode, ModTime: es.mtime}, es)
		}
		if aw.links == nil {
			aw.links = map[fileID]string{}
		}
		aw.links[es.id] = rel
	}
	if sf, ok := f.(sparseFile); ok && mayBeSparse(es) {
		frags, err := sf.dataMap(es.size, maxFragments)
		if err != nil {
			return fmt.Errorf("%q: find holes: %w", rel, err)
		}
		if !(len(frags) == 1 && frags[0] == fragment{off: 0, len: es.size}) {
			if es.size > aw.maxSparse {
				return fmt.Errorf("%q: sparse file of length %d (holes included) is over the %d a restore accepts; truncate or remove it", rel, es.size, aw.maxSparse)
			}
			return aw.sparse(rel, sf, es, frags)
		}
	}
	if err := aw.header(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Size: es.size, Mode: es.mode, ModTime: es.mtime}, es); err != nil {
		return err
	}
	if err := aw.copyFile(rel, f, es.size); err != nil {
		return err
	}
	aw.st.Files++
	aw.st.Bytes += es.size
	return nil
}

// copyFile streams exactly size bytes of f (the file at rel) into the tar writer. It asks for
// one byte more than it expects so that a file that grew since it was stat'ed is noticed without
// an extra read in the common case.
func (aw *archiveWriter) copyFile(rel string, f fileReader, size int64) error {
	remaining := size
	for {
		want := min(remaining+1, int64(len(aw.buf)))
		n, err := f.Read(aw.buf[:want])
		if int64(n) > remaining {
			return fmt.Errorf("%q: file grew while being archived", rel)
		}
		if n > 0 {
			if _, werr := aw.tw.Write(aw.buf[:n]); werr != nil {
				return fmt.Errorf("%q: %w", rel, werr)
			}
			remaining -= int64(n)
			aw.advance(int64(n))
		}
		switch {
		case errors.Is(err, io.EOF):
			if remaining > 0 {
				return fmt.Errorf("%q: file shrank while being archived", rel)
			}
			return nil
		case err != nil:
			return fmt.Errorf("%q: %w", rel, err)
		case remaining == 0 && int64(n) < want:
			// A short read of a local regular file means end of file.
			return nil
		}
		// Checked per buffer, so cancelling during a multi-gigabyte file takes effect promptly.
		if err := aw.ctx.Err(); err != nil {
			return err
		}
	}
}

// fifo archives the named pipe at rel: its name and metadata, never what flows through it.
func (aw *archiveWriter) fifo(rel string, es entryStat) error {
	aw.st.Fifos++
	return aw.header(&tar.Header{Typeflag: tar.TypeFifo, Name: rel, Mode: es.mode, ModTime: es.mtime}, es)
}

// skip counts an entry no archive can hold (a socket, a device) and names the first few.
func (aw *archiveWriter) skip(rel string) {
	aw.st.Skipped++
	if len(aw.st.SkippedPaths) < MaxSkippedPaths {
		aw.st.SkippedPaths = append(aw.st.SkippedPaths, rel)
	}
}

func (aw *archiveWriter) advance(n int64) {
	aw.done += n
	if aw.progress != nil && aw.done-aw.reported >= progressStep {
		aw.reported = aw.done
		aw.progress(aw.done, aw.total)
	}
}

// fileReader is an open file being archived.
type fileReader interface {
	io.Reader
	io.Closer
}

// errChanged marks an entry that was not, when the walk opened it, what the walk had just
// found at its name: the project's processes are renaming things under the walk.
var errChanged = errors.New("changed while being archived")

// maxClassify bounds how often one entry is looked at again after it changed type: once by a
// fresh lstat, once more by what was then opened. An entry that is being swapped faster than
// that is not one the walk can archive faithfully.
const maxClassify = 3

// maxPathLen is the longest path below the root that the walk archives: the kernel's PATH_MAX
// less the terminating NUL. The walk itself has no such limit (it never builds a path), nor
// has Extract (it creates every entry relative to its parent's descriptor), but a tar that
// extracts by path relative to its directory (a restore through a pod, tar by hand) has; and
// it bounds the descriptors held open to one per level of a tree that deep.
const maxPathLen = MaxPathLen

// MaxPathLen is the longest path, relative to the tree's root, that a snapshot can hold. File
// writes refuse longer ones: a file no snapshot can hold would make every hibernation fail.
const MaxPathLen = 4095

// dirBufSize is the buffer for reading directory entries: one read covers a directory of a few
// hundred entries.
const dirBufSize = 32 << 10

// entryKind is what an entry is, as far as archiving is concerned.
type entryKind uint8

const (
	kindUnknown entryKind = iota
	kindRegular
	kindDir
	kindSymlink
	kindFifo
	kindOther // sockets, devices: skipped
)

// walkEntry is a name read from a directory, with the type the directory gave for it (a hint:
// the entry may have been replaced since; kindUnknown where the filesystem does not say).
type walkEntry struct {
	name string
	kind entryKind
}

// entryStat is what the archive keeps of an entry's metadata.
type entryStat struct {
	kind  entryKind
	mode  int64 // tar's mode field: permission bits plus setuid, setgid, sticky
	size  int64
	mtime time.Time
	// uid and gid are the numeric owner, kept only with WriteOptions.Owners.
	uid, gid int
	// blocks is the space allocated, in 512-byte units (-1 where unknown); nlink and id
	// tell the names of one file apart (nlink 0 where unknown).
	blocks int64
	nlink  uint64
	id     fileID
}

// fileID is what makes two names one file.
type fileID struct{ dev, ino uint64 }

// walker visits a tree by directory descriptors in sorted order, depth first, skipping excluded
// entries. Recursion keeps memory proportional to the depth and the widest directory, and one
// descriptor is open per level being visited. With aw nil it only measures: it adds up the
// sizes of regular files in total without opening them.
type walker struct {
	ctx     context.Context
	m       matcher
	st      *Stats
	rootLen int
	dirBuf  []byte
	linkBuf []byte
	aw      *archiveWriter
	total   int64
}

func newWalker(ctx context.Context, m matcher, st *Stats, rootLen int, aw *archiveWriter) *walker {
	return &walker{ctx: ctx, m: m, st: st, rootLen: rootLen, dirBuf: make([]byte, dirBufSize), aw: aw}
}

// walk visits the entries of d, the directory at rel.
func (w *walker) walk(d walkDir, rel string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := d.entries(w.dirBuf)
	if err != nil {
		return fmt.Errorf("read directory %q: %w", rel, err)
	}
	slices.SortFunc(entries, func(a, b walkEntry) int { return strings.Compare(a.name, b.name) })
	for _, e := range entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		child := e.name
		if rel != "" {
			child = rel + "/" + e.name
		}
		if err := w.entry(d, child, e.name, e.kind); err != nil {
			return err
		}
	}
	return nil
}

// entry visits the entry name of d (rel in the archive), which the directory listed as kind.
// Whatever the listing or a stat said, the entry is archived as what its descriptor turns out
// to be once opened; when that differs, the entry is looked at again, a bounded number of times.
func (w *walker) entry(d walkDir, rel, name string, kind entryKind) error {
	// Counted from the root: where the project lives (a state directory's long prefix) is
	// no part of what the archive holds or of what a restore resolves.
	if len(rel) > maxPathLen {
		return fmt.Errorf("%q: path too long to archive: %d bytes below the project's root, the limit is %d; shorten it", rel[:60]+"…", len(rel), maxPathLen)
	}
	c := &classified{rel: rel, kind: kind, lastErr: errChanged}
	for range maxClassify {
		if done, err := w.entryAs(d, name, c); done || err != nil {
			return err
		}
	}
	return fmt.Errorf("%q: %w", rel, c.lastErr)
}

// classified is what one entry is taken to be, look after look.
type classified struct {
	rel     string
	kind    entryKind
	lastErr error // why it was last looked at again
}

// settled sorts the outcome of one look at the entry (err, and got, the kind its descriptor or
// stat found): true when it is what c.kind said; false with nil when it is to be looked at again
// (it changed: from the listing, or as got); false with the error, said of the entry, otherwise.
func (c *classified) settled(err error, got entryKind) (bool, error) {
	switch {
	case errors.Is(err, errChanged):
		c.lastErr, c.kind = err, kindUnknown
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%q: %w", c.rel, err)
	case got != c.kind:
		c.kind = got
		return false, nil
	}
	return true, nil
}

// entryAs is one look at the entry name of d as c says it is: done (with what archiving it
// returned), or not done with nil when it is to be looked at again.
func (w *walker) entryAs(d walkDir, name string, c *classified) (done bool, err error) {
	rel := c.rel
	if c.kind == kindUnknown {
		es, err := d.lstat(name)
		if ok, err := c.settled(err, kindUnknown); !ok {
			return false, err
		}
		c.kind = es.kind
	}
	if w.m.excluded(rel, c.kind == kindDir) {
		w.st.Excluded++
		return true, nil
	}
	switch c.kind {
	case kindDir:
		sub, es, err := d.openDir(name)
		if ok, err := c.settled(err, kindDir); !ok {
			return false, err
		}
		err = w.dir(sub, rel, es)
		sub.close()
		return true, err
	case kindSymlink:
		if w.aw == nil {
			return true, nil // a link carries no payload
		}
		es, err := d.lstat(name)
		var target string
		if err == nil && es.kind == kindSymlink {
			target, err = d.readlink(name, &w.linkBuf)
		}
		if ok, err := c.settled(err, es.kind); !ok {
			return false, err
		}
		return true, w.aw.symlink(rel, target, es)
	case kindRegular:
		if w.aw == nil {
			es, err := d.lstat(name)
			if ok, err := c.settled(err, es.kind); !ok {
				return false, err
			}
			w.total += payloadOf(es)
			return true, nil
		}
		f, es, err := d.openFile(name)
		if err == nil && es.kind != kindRegular {
			// Something else was put at the name since it was listed; it is looked at
			// again as what it is now, through the same descriptor-relative opens.
			_ = f.Close()
		}
		if ok, err := c.settled(err, es.kind); !ok {
			return false, err
		}
		err = w.aw.file(rel, f, es)
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%q: close: %w", rel, cerr)
		}
		return true, err
	case kindFifo:
		if w.aw == nil {
			return true, nil
		}
		es, err := d.lstat(name)
		if ok, err := c.settled(err, es.kind); !ok {
			return false, err
		}
		return true, w.aw.fifo(rel, es)
	default:
		if w.aw != nil {
			w.aw.skip(rel)
		}
		return true, nil
	}
}

// dir archives the directory open as sub (rel in the archive, described by es) and its tree.
func (w *walker) dir(sub walkDir, rel string, es entryStat) error {
	if w.aw != nil {
		if err := w.aw.dir(rel, es); err != nil {
			return err
		}
	}
	return w.walk(sub, rel)
}

// payloadSize is the walk Write will make, counting only regular files' sizes, so progress has
// a total to report against. It walks a descriptor of its own for root, so Write's walk reads
// root's entries from the start.
func payloadSize(ctx context.Context, root walkDir, rootLen int, m matcher) (int64, error) {
	d, _, err := root.openDir(".")
	if err != nil {
		return 0, err
	}
	defer d.close()
	var st Stats
	w := newWalker(ctx, m, &st, rootLen, nil)
	err = w.walk(d, "")
	return w.total, err
}
