// Package archive is sailtui's snapshot format: a tar stream (GNU format, so file names are kept
// as raw bytes) compressed with zstd, and the Volumes implementation that keeps such archives in
// an ObjectStore (the "S3 sandwich"). Archives are written and read strictly as streams, so a
// project of any size is archived and restored in bounded memory, and extraction treats every
// archive as hostile (DESIGN.md invariant 8).
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
}

// Stats counts what an archive holds (Write) or what was written to disk (Extract).
type Stats struct {
	Files    int64
	Dirs     int64
	Symlinks int64
	// Bytes is the uncompressed payload: the sum of the regular files' sizes.
	Bytes int64
	// Skipped counts entries that cannot be archived (sockets, devices, fifos).
	Skipped int64
	// Excluded counts entries (a directory counting once) left out by the exclusion patterns.
	Excluded int64
}

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
// the second); sockets, devices and fifos are counted in Stats.Skipped. A symlink that
// extraction would refuse (one pointing outside root) fails the write instead of producing an
// archive that cannot be restored.
//
// A file that changes size while it is read fails the write: a snapshot must be a faithful copy.
func Write(ctx context.Context, root string, w io.Writer, opts WriteOptions) (Stats, error) {
	var st Stats
	m, err := compileExcludes(opts.Exclude)
	if err != nil {
		return st, fmt.Errorf("archive %s: %w", root, err)
	}
	rootInfo, err := os.Stat(root)
	if err != nil {
		return st, fmt.Errorf("archive %s: %w", root, err)
	}
	if !rootInfo.IsDir() {
		return st, fmt.Errorf("archive %s: not a directory", root)
	}

	var total int64
	if opts.Progress != nil {
		total, err = payloadSize(ctx, root, m)
		if err != nil {
			return st, fmt.Errorf("archive %s: measure: %w", root, err)
		}
	}

	enc, err := newParallelEncoder(w)
	if err != nil {
		return st, fmt.Errorf("archive %s: %w", root, err)
	}
	aw := &archiveWriter{
		ctx:      ctx,
		root:     root,
		tw:       tar.NewWriter(enc),
		buf:      make([]byte, copyBufSize),
		progress: opts.Progress,
		anyLink:  opts.AnyLinkTarget,
		total:    total,
		st:       &st,
	}
	err = aw.header(&tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: tarMode(rootInfo.Mode()), ModTime: rootInfo.ModTime()})
	if err == nil {
		err = walk(ctx, root, "", m, &st, aw.entry)
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
	ctx      context.Context
	root     string
	tw       *tar.Writer
	buf      []byte
	progress func(done, total int64)
	done     int64
	reported int64
	total    int64
	st       *Stats
	anyLink  bool
}

func (aw *archiveWriter) header(h *tar.Header) error {
	// GNU rather than PAX: it stores names and link targets as raw bytes (non-UTF-8 names
	// round-trip) and long names cost one extra block instead of PAX's two per entry.
	h.Format = tar.FormatGNU
	h.ModTime = h.ModTime.Truncate(time.Second)
	if err := aw.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%q: write header: %w", h.Name, err)
	}
	return nil
}

func (aw *archiveWriter) entry(rel string, fi fs.FileInfo) error {
	mode := fi.Mode()
	switch {
	case mode.IsDir():
		aw.st.Dirs++
		return aw.header(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: tarMode(mode), ModTime: fi.ModTime()})
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(filepath.Join(aw.root, rel))
		if err != nil {
			return fmt.Errorf("%q: %w", rel, err)
		}
		// With anyLink a link is kept as written: it is inert data until something follows it.
		if err := checkLinkTarget(rel, target); err != nil && !aw.anyLink {
			return fmt.Errorf("%q: %v; archives refuse such links, remove or make it relative inside the project", rel, err)
		}
		aw.st.Symlinks++
		return aw.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: rel, Linkname: target, Mode: tarMode(mode), ModTime: fi.ModTime()})
	case mode.IsRegular():
		if err := aw.header(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Size: fi.Size(), Mode: tarMode(mode), ModTime: fi.ModTime()}); err != nil {
			return err
		}
		if err := aw.copyFile(rel, fi.Size()); err != nil {
			return err
		}
		aw.st.Files++
		aw.st.Bytes += fi.Size()
		return nil
	default:
		aw.st.Skipped++
		return nil
	}
}

// copyFile streams exactly size bytes of rel into the tar writer. It asks for one byte more
// than it expects so that a file that grew since it was stat'ed is noticed without an extra
// read in the common case.
func (aw *archiveWriter) copyFile(rel string, size int64) error {
	f, err := openNoFollow(filepath.Join(aw.root, rel))
	if err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	defer f.Close()
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

// tarMode maps a FileMode to tar's mode field (permission bits plus setuid, setgid, sticky).
func tarMode(m fs.FileMode) int64 {
	v := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return v
}

// walk visits every entry below root/rel in sorted order, depth first, skipping excluded ones.
// Recursion keeps memory proportional to the depth and the widest directory, not the tree.
func walk(ctx context.Context, root, rel string, m matcher, st *Stats, visit func(rel string, fi fs.FileInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(root, rel))
	if err != nil {
		return fmt.Errorf("read directory %q: %w", rel, err)
	}
	for _, e := range entries {
		child := e.Name()
		if rel != "" {
			child = rel + "/" + child
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		isDir := e.IsDir()
		if m.excluded(child, isDir) {
			st.Excluded++
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return fmt.Errorf("%q: %w", child, err)
		}
		if err := visit(child, fi); err != nil {
			return err
		}
		if fi.IsDir() {
			if err := walk(ctx, root, child, m, st, visit); err != nil {
				return err
			}
		}
	}
	return nil
}

// payloadSize is the walk Write will make, counting only regular files' sizes, so progress has
// a total to report against.
func payloadSize(ctx context.Context, root string, m matcher) (int64, error) {
	var total int64
	var st Stats
	err := walk(ctx, root, "", m, &st, func(_ string, fi fs.FileInfo) error {
		if fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return nil
	})
	return total, err
}
