package kubernetes

import (
	"archive/tar"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/stream"
)

// Restore implements engine.Volumes. The project's storage and file manager are created when
// they are missing (a wake after hibernation deleted the namespace). The object is read and
// hashed here, decompressed, and checked entry by entry against the rules archive.Extract
// enforces (a hostile or corrupted archive is refused before anything reaches the pod); a
// clean tar made of the accepted entries goes to `tar -x` in the pod, into a fresh
// .sailtui-restore-<token> under the mount. Only once the whole object was read, tar
// succeeded and the SHA-256 matches is the tree swapped in (see swapScript); otherwise the
// extraction directory is removed and the mount is untouched.
func (a *ArchiveVolumes) Restore(ctx context.Context, p engine.Project, snap engine.Snapshot) error {
	fail := func(err error) error {
		return fmt.Errorf("archive: restore snapshot %s into project %s: %w", snap.ID, p.ID, err)
	}
	key, err := a.sw.ArchiveKey(snap)
	if err != nil {
		return fail(err)
	}
	if snap.SHA256 == "" {
		return fail(fmt.Errorf("no recorded checksum to verify against: %w", engine.ErrBadInput))
	}
	if err := archive.CheckObjectSize(ctx, a.store, key, snap); err != nil {
		return fail(err)
	}
	rc, err := a.store.Get(ctx, key)
	if err != nil {
		return fail(fmt.Errorf("object %s: %w", key, err))
	}
	defer rc.Close()
	pod, err := a.ensurePod(ctx, p)
	if err != nil {
		return fail(err)
	}
	ns := a.rt.Namespace(p)
	tok := restoreToken(snap.ID)
	if err := a.script(ctx, ns, pod, "prepare", tok); err != nil {
		return fail(err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = a.script(context.WithoutCancel(ctx), ns, pod, "abort", tok)
		}
	}()

	var report func(done int64)
	if progress := engine.ProgressFrom(ctx); progress != nil {
		report = func(done int64) {
			progress(engine.Progress{ProjectID: p.ID, Op: engine.OpRestore, Phase: "extract", Done: done, Total: snap.SizeBytes})
		}
	}
	src := stream.NewHashReader(stream.WithContext(ctx, rc), sha256.New(), 4<<20, report)
	xctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inR, inW := io.Pipe()
	// Note: busybox tar creates symlinks with ".." or an absolute target only at the end of
	// the extraction, so the directories holding them get the time of the restore; GNU tar
	// restores every directory time.
	x := a.startExec(xctx, ns, pod, []string{"tar", "-x", "-p", "-f", "-", "-C", MountPath + "/" + restoreDirPrefix + tok}, inR, io.Discard,
		func(err error) {
			if err == nil {
				err = errors.New("tar ended before its input")
			}
			inR.CloseWithError(err)
		})
	ferr := filterArchive(ctx, src, inW, a.opts.Limits.ForSnapshot(snap))
	if ferr != nil {
		inW.CloseWithError(ferr)
		cancel()
	} else {
		inW.Close()
	}
	xerr := x.wait()
	// The filter's refusal explains the tar's failure that follows from it, not the reverse.
	if err := archive.VerifyObject(ctx, src, key, snap.SHA256, cmp.Or(ferr, xerr)); err != nil {
		return fail(err)
	}
	if err := a.script(ctx, ns, pod, "commit", tok); err != nil {
		return fail(err)
	}
	committed = true
	return nil
}

// entryKind is what a name of the archive being restored became.
type entryKind uint8

const (
	kindDir entryKind = iota + 1
	kindFile
	kindSymlink
)

type dirEntry struct {
	name  string
	mode  int64
	mtime time.Time
}

// restoreFilter checks an archive's entries as archive.Extract would before any reaches the pod.
type restoreFilter struct {
	lim     archive.Limits
	seen    map[[16]byte]entryKind // by a hash of the clean name: bounded memory per entry
	dirs    []dirEntry
	entries int64
	claimed int64
}

func nameKey(name string) [16]byte {
	sum := sha256.Sum256([]byte(name))
	var k [16]byte
	copy(k[:], sum[:])
	return k
}

// filterArchive decompresses the zstd tar stream src and writes to dst a tar stream holding
// the same tree, or fails at the first entry archive.Extract would refuse: a name that is
// empty, absolute, holds NUL or "..", an entry below a symlink or a file of the archive, a
// name given twice (a directory may be named again as a directory), a hard link to anything
// but an earlier regular file of the archive, a device node, fifo or other special entry, a
// symlink with an empty or NUL target, and anything past the limits (entries, per-file and
// total size). Symlinks may point anywhere, as in archive.Sandwich's restores: nothing is
// written through them and the tree is swapped in only after the checksum matched.
//
// Directories are written owner-writable first, so that a read-only one can be filled by a
// tar running as a non-root user, and named again at the end, deepest first, with their own
// modes and times (the tars of the pod then apply both).
//
// dst gets the tar end marker only when the whole stream, its zstd checksums and its end
// included, was accepted.
func filterArchive(ctx context.Context, src io.Reader, dst io.Writer, lim archive.Limits) (err error) {
	if lim.MaxWindow <= 0 {
		lim.MaxWindow = archive.SnapshotMaxWindow
	}
	lim = lim.WithDefaults()
	dec, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(min(runtime.GOMAXPROCS(0), 4)), zstd.WithDecoderMaxWindow(uint64(lim.MaxWindow)))
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer func() {
		if errors.Is(err, zstd.ErrWindowSizeExceeded) {
			err = fmt.Errorf("extract: the archive needs a zstd window over the limit of %d MiB (sailtui's archives use 1 MiB): %w: %w",
				lim.MaxWindow>>20, engine.ErrBadInput, err)
		}
	}()
	// Closed before returning, so nothing reads src once the caller drains it.
	defer dec.Close()
	f := &restoreFilter{lim: lim, seen: map[[16]byte]entryKind{}}
	eof := stream.NewEOFReader(dec)
	tr := tar.NewReader(eof)
	tw := tar.NewWriter(dst)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("extract: %w", err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return fmt.Errorf("extract: read archive: %w", err)
		}
		if err := f.entry(hdr, tr, tw); err != nil {
			return fmt.Errorf("extract %q: %w", hdr.Name, err)
		}
	}
	if err := archive.CheckEnd(dec, eof); err != nil {
		return err
	}
	for i := len(f.dirs) - 1; i >= 0; i-- {
		d := f.dirs[i]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name + "/", Mode: d.mode, ModTime: d.mtime, Format: tar.FormatGNU}); err != nil {
			return err
		}
	}
	return tw.Close()
}

// parents checks every parent of name: none may be a symlink or a file of the archive;
// those not named yet become directories (tar makes them).
func (f *restoreFilter) parents(name string) error {
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		k := nameKey(name[:i])
		switch f.seen[k] {
		case kindSymlink:
			return fmt.Errorf("%q is a symlink; refusing to write through it: %w", name[:i], engine.ErrBadPath)
		case kindFile:
			return fmt.Errorf("%q exists and is not a directory: %w", name[:i], engine.ErrExists)
		case 0:
			f.seen[k] = kindDir
		}
	}
	return nil
}

// claim records name as kind, refusing any name already there (a directory may be named again
// as a directory).
func (f *restoreFilter) claim(name string, kind entryKind) error {
	if err := f.parents(name); err != nil {
		return err
	}
	k := nameKey(name)
	if cur, ok := f.seen[k]; ok && !(cur == kindDir && kind == kindDir) {
		return fmt.Errorf("already exists (duplicate entry): %w", engine.ErrExists)
	}
	f.seen[k] = kind
	return nil
}

func (f *restoreFilter) entry(hdr *tar.Header, tr io.Reader, tw *tar.Writer) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	f.entries++
	if f.entries > f.lim.MaxFiles {
		return fmt.Errorf("more than %d entries: %w", f.lim.MaxFiles, engine.ErrBadInput)
	}
	name, err := archive.CleanName(hdr.Name)
	if err != nil {
		return err
	}
	if name != "" && reservedTopName(name) {
		// sailtui's own restore directories are never part of a tree; such an entry (and
		// everything below it) is left out rather than let it pose as a leftover.
		if hdr.Typeflag == tar.TypeReg || hdr.Typeflag == '\x00' {
			if _, err := io.CopyN(io.Discard, tr, hdr.Size); err != nil {
				return fmt.Errorf("read archive: %w", err)
			}
		}
		return nil
	}
	mode := hdr.Mode & 0o777
	mtime := hdr.ModTime.Truncate(time.Second)
	out := &tar.Header{Name: name, Mode: mode, ModTime: mtime, Format: tar.FormatGNU}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if name == "" {
			return nil // the extraction directory itself
		}
		if err := f.claim(name, kindDir); err != nil {
			return err
		}
		f.dirs = append(f.dirs, dirEntry{name: name, mode: mode, mtime: mtime})
		out.Typeflag, out.Name, out.Mode = tar.TypeDir, name+"/", mode|0o700
		return tw.WriteHeader(out)
	case tar.TypeReg, '\x00':
		if err := f.lim.AdmitFile(name, hdr.Size, f.claimed); err != nil {
			return err
		}
		if err := f.claim(name, kindFile); err != nil {
			return err
		}
		f.claimed += hdr.Size
		out.Typeflag, out.Size = tar.TypeReg, hdr.Size
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, tr, hdr.Size); err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		return nil
	case tar.TypeSymlink:
		if name == "" {
			return fmt.Errorf("symlink names the target itself: %w", engine.ErrBadPath)
		}
		if hdr.Linkname == "" || strings.IndexByte(hdr.Linkname, 0) >= 0 {
			return fmt.Errorf("empty or NUL symlink target: %w", engine.ErrBadPath)
		}
		if err := f.claim(name, kindSymlink); err != nil {
			return err
		}
		out.Typeflag, out.Linkname = tar.TypeSymlink, hdr.Linkname
		return tw.WriteHeader(out)
	case tar.TypeLink:
		target, err := archive.CleanName(hdr.Linkname)
		if err != nil || target == "" || f.seen[nameKey(target)] != kindFile {
			return fmt.Errorf("hard link to %q: only links to an earlier file of the archive are allowed: %w", hdr.Linkname, engine.ErrBadPath)
		}
		if name == "" {
			return fmt.Errorf("hard link names the target itself: %w", engine.ErrBadPath)
		}
		if err := f.claim(name, kindFile); err != nil {
			return err
		}
		out.Typeflag, out.Linkname = tar.TypeLink, target
		return tw.WriteHeader(out)
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("device nodes are not allowed: %w", engine.ErrBadPath)
	case tar.TypeFifo:
		return fmt.Errorf("fifos are not allowed: %w", engine.ErrBadPath)
	default:
		return fmt.Errorf("unsupported entry type %q: %w", hdr.Typeflag, engine.ErrBadPath)
	}
}
