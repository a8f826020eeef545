package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/stream"
)

// Entry is an archive member the entry rules accepted, in the canonical form every extraction
// writes.
type Entry struct {
	// Name is the clean relative name ("" for the extraction target itself).
	Name string
	// Type is tar.TypeDir, tar.TypeReg, tar.TypeSymlink, tar.TypeFifo or (with
	// Rules.HardLinks) tar.TypeLink.
	Type byte
	// Mode holds the permission bits; setuid, setgid and sticky are dropped.
	Mode fs.FileMode
	// Size is a regular file's length.
	Size int64
	// Sparse marks a regular file stored with its holes (see Write): its data reads the holes
	// as zeros, and Extract leaves every block of zeros a hole. Size is its length, which
	// Limits.MaxSparseSize bounds; what counts against MaxBytes is what it writes.
	Sparse bool
	// Linkname is a symlink's target as stored, or a hard link's clean target name.
	Linkname string
	ModTime  time.Time
	// Uid and Gid are the numeric owner the archive records: 0 unless it was written with
	// WriteOptions.Owners. With Limits.Owners they are checked to be ids a chown can apply.
	Uid, Gid int
}

// Rules are the choices an extraction makes on top of the entry rules every one applies.
type Rules struct {
	// Track keeps every accepted name in memory (a hash of it per entry) and refuses from
	// there what would land below a symlink or a file of the archive, and a name given twice
	// (a directory may be named again as a directory). For extractions that cannot look at
	// the tree they write (a tar in a pod); Extract checks the tree on disk instead, where it
	// also sees what the target held before, without the memory per entry.
	Track bool
	// HardLinks accepts hard links (Write makes them for a file with several names in the
	// tree). With Track, only one to an earlier regular file of the archive; without it the
	// name must be clean and not the entry's own, and the extraction checks on disk that it is
	// a regular file inside the target (Extract: reached without a symlink). Without
	// HardLinks every hard link is refused.
	HardLinks bool
	// Skip leaves out entries whose clean name it reports, and is asked before any other
	// rule: names the extraction keeps for itself. Skipped entries still count as entries.
	Skip func(name string) bool
}

// checker applies the entry rules to one archive, entry by entry in archive order.
type checker struct {
	lim     Limits
	rules   Rules
	entries int64
	claimed int64
	seen    map[[16]byte]entryKind // Track: by a hash of the clean name, bounded memory per entry; Write's kinds
}

func nameKey(name string) [16]byte {
	sum := sha256.Sum256([]byte(name))
	var k [16]byte
	copy(k[:], sum[:])
	return k
}

// check decides hdr. ok is false for an entry that carries nothing to write (a global PAX
// header, an entry Rules.Skip names).
func (c *checker) check(hdr *tar.Header) (e Entry, ok bool, err error) {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		// Global PAX records (git archive writes one) carry no file.
		return e, false, nil
	}
	c.entries++
	if c.entries > c.lim.MaxFiles {
		return e, false, fmt.Errorf("more than %d entries: %w", c.lim.MaxFiles, engine.ErrBadInput)
	}
	name, err := cleanName(hdr.Name)
	if err != nil {
		return e, false, err
	}
	if c.rules.Skip != nil && name != "" && c.rules.Skip(name) {
		return e, false, nil
	}
	e = Entry{Name: name, Type: hdr.Typeflag, Mode: fs.FileMode(hdr.Mode) & fs.ModePerm, ModTime: hdr.ModTime, Uid: hdr.Uid, Gid: hdr.Gid}
	if c.lim.Owners {
		if err := checkOwner(hdr.Uid, hdr.Gid); err != nil {
			return e, false, err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if name != "" {
			if err := c.claim(name, kindDir); err != nil {
				return e, false, err
			}
		}
	case tar.TypeReg, '\x00': // '\x00' is the pre-POSIX regular file type.
		if isSparse(hdr) {
			// What it writes is counted as it is read (see sparseData); its length only
			// bounds the time the zeros of its holes take to read.
			if err := c.lim.AdmitSparse(name, hdr.Size); err != nil {
				return e, false, err
			}
			if err := c.claim(name, kindRegular); err != nil {
				return e, false, err
			}
			e.Type, e.Size, e.Sparse = tar.TypeReg, hdr.Size, true
			break
		}
		if err := c.lim.AdmitFile(name, hdr.Size, c.claimed); err != nil {
			return e, false, err
		}
		if err := c.claim(name, kindRegular); err != nil {
			return e, false, err
		}
		c.claimed += hdr.Size
		e.Type, e.Size = tar.TypeReg, hdr.Size
	case tar.TypeSymlink:
		if name == "" {
			return e, false, fmt.Errorf("symlink names the target itself: %w", engine.ErrBadPath)
		}
		if c.lim.AnyLinkTarget {
			if hdr.Linkname == "" || strings.IndexByte(hdr.Linkname, 0) >= 0 {
				return e, false, fmt.Errorf("empty or NUL symlink target: %w", engine.ErrBadPath)
			}
		} else if err := checkLinkTarget(name, hdr.Linkname); err != nil {
			return e, false, fmt.Errorf("%w: %w", err, engine.ErrBadPath)
		}
		if err := c.claim(name, kindSymlink); err != nil {
			return e, false, err
		}
		e.Linkname = hdr.Linkname
	case tar.TypeLink:
		if !c.rules.HardLinks {
			return e, false, fmt.Errorf("hard link to %q: hard links are not allowed: %w", hdr.Linkname, engine.ErrBadPath)
		}
		target, err := cleanName(hdr.Linkname)
		if err != nil || target == "" || target == name || (c.rules.Track && c.seen[nameKey(target)] != kindRegular) {
			return e, false, fmt.Errorf("hard link to %q: only links to an earlier file of the archive are allowed: %w", hdr.Linkname, engine.ErrBadPath)
		}
		if name == "" {
			return e, false, fmt.Errorf("hard link names the target itself: %w", engine.ErrBadPath)
		}
		if err := c.claim(name, kindRegular); err != nil {
			return e, false, err
		}
		e.Linkname = target
	case tar.TypeChar, tar.TypeBlock:
		return e, false, fmt.Errorf("device nodes are not allowed: %w", engine.ErrBadPath)
	case tar.TypeFifo:
		// A new, empty pipe: it holds nothing and leads nowhere.
		if name == "" {
			return e, false, fmt.Errorf("fifo names the target itself: %w", engine.ErrBadPath)
		}
		if err := c.claim(name, kindFifo); err != nil {
			return e, false, err
		}
	default:
		return e, false, fmt.Errorf("unsupported entry type %q: %w", hdr.Typeflag, engine.ErrBadPath)
	}
	return e, true, nil
}

// isSparse is whether hdr is a GNU PAX sparse file, whose data archive/tar expands.
func isSparse(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// maxOwnerID is the largest uid or gid a restore applies: ids are 32 bits, and the all-ones id
// means "leave unchanged" to chown, so an archive naming it would silently keep the extracting
// user, and a larger one would be truncated to someone else's id.
const maxOwnerID int64 = 1<<32 - 2

// checkOwner refuses ids that cannot be applied as they are.
func checkOwner(uid, gid int) error {
	for _, id := range [...]struct {
		what string
		v    int
	}{{"uid", uid}, {"gid", gid}} {
		if id.v < 0 || int64(id.v) > maxOwnerID {
			return fmt.Errorf("%s %d out of range 0..%d: %w", id.what, id.v, maxOwnerID, engine.ErrBadInput)
		}
	}
	return nil
}

// claim records name as kind when the rules track names, refusing one below a symlink or a
// file of the archive and one already there (a directory may be named again as a directory);
// parents not named yet become directories (the extraction makes them).
func (c *checker) claim(name string, kind entryKind) error {
	if !c.rules.Track {
		return nil
	}
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		k := nameKey(name[:i])
		switch c.seen[k] {
		case kindSymlink:
			return fmt.Errorf("%q is a symlink; refusing to write through it: %w", name[:i], engine.ErrBadPath)
		case kindRegular, kindFifo:
			return fmt.Errorf("%q exists and is not a directory: %w", name[:i], engine.ErrExists)
		case kindUnknown:
			c.seen[k] = kindDir
		}
	}
	k := nameKey(name)
	if cur, ok := c.seen[k]; ok && !(cur == kindDir && kind == kindDir) {
		return fmt.Errorf("already exists (duplicate entry): %w", engine.ErrExists)
	}
	c.seen[k] = kind
	return nil
}

// Filter reads the zstd-compressed tar stream r (Write's format) and hands every entry the
// entry rules accept to fn, in archive order, with the entry's data for a regular file. It is
// the one reading of an archive every extraction shares (Extract onto a disk, a restore
// through a pod's tar), so they accept and refuse the same archives. Every archive is
// treated as hostile (invariant 8): Filter stops at the first entry whose name is empty,
// absolute, or holds NUL or "..", that names the target as a file or link, that is a symlink
// with an empty or NUL target (or, without lim.AnyLinkTarget, one pointing outside, see
// checkLinkTarget), a hard link (see Rules.HardLinks), a device node or other special
// entry, or that goes past the Limits; with Rules.Track also at one below a symlink or a file
// of the archive or a name given twice. An error of fn stops it the same way. Errors name the
// entry and wrap engine.ErrBadPath (where it would land), engine.ErrExists (collisions) or
// engine.ErrBadInput (limits, a zstd window over lim.MaxWindow).
//
// Filter returns nil only when the whole stream was read and accepted, the tar end marker and
// the end checks (CheckEnd) included. It reads r no more once it has returned.
func Filter(ctx context.Context, r io.Reader, lim Limits, rules Rules, fn func(e Entry, data io.Reader) error) error {
	lim = lim.WithDefaults()
	dec, err := zstd.NewReader(r,
		// Decoding in the reading goroutine, not in the library's pipeline of goroutines: it
		// costs a quarter less CPU (no hand-offs, and no xxhash of every block, which the
		// concurrent path computes even for frames without a checksum), and at ~1 GB/s on one
		// core it keeps ahead of the file writers, whose kernel time is what an extraction
		// waits for. On a small machine the CPU saved is what the writers and the S3 client
		// need. Frames that carry a checksum are still checked.
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(uint64(lim.MaxWindow)),
	)
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer dec.Close()
	ra := newReadAhead(dec)
	defer ra.stop()
	err = filter(ctx, ra, lim, rules, fn)
	if errors.Is(err, zstd.ErrWindowSizeExceeded) {
		err = fmt.Errorf("extract: the archive needs a zstd window over the limit of %d MiB (sailtui's archives use 1 MiB; recompress without --long or a high level): %w: %w",
			lim.MaxWindow>>20, engine.ErrBadInput, err)
	}
	return err
}

func filter(ctx context.Context, dec io.Reader, lim Limits, rules Rules, fn func(Entry, io.Reader) error) error {
	c := &checker{lim: lim, rules: rules}
	if rules.Track {
		c.seen = map[[16]byte]entryKind{}
	}
	src := stream.NewEOFReader(dec)
	tr := tar.NewReader(src)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("extract: %w", err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		// ErrInsecurePath (only with GODEBUG=tarinsecurepath=0) comes with a usable header;
		// the rules give the more precise reason.
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return fmt.Errorf("extract: read archive: %w", err)
		}
		e, ok, err := c.check(hdr)
		if err == nil && ok {
			var data io.Reader = tr
			if e.Sparse {
				data = newSparseData(tr, e.Size, c)
			}
			err = fn(e, data)
		}
		if err != nil {
			return fmt.Errorf("extract %q: %w", hdr.Name, err)
		}
	}
	return CheckEnd(dec, src)
}
