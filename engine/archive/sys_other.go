//go:build !linux

package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// walkDir is a directory of the tree being archived. os.Root keeps every open below it inside
// it; unlike the Linux walk it follows symlinks that stay inside, so an entry swapped for such a
// link may be archived as what it points at, but nothing outside root is ever reached.
type walkDir struct{ r *os.Root }

// openWalkRoot opens the directory root for a walk, after resolving it (the caller's path,
// trusted) once; n is the length of the resolved path, which counts against maxPathLen.
func openWalkRoot(root string) (d walkDir, n int, err error) {
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		return walkDir{}, 0, err
	}
	fi, err := os.Lstat(resolved)
	if err != nil {
		return walkDir{}, 0, err
	}
	if !fi.IsDir() {
		return walkDir{}, 0, errors.New("not a directory")
	}
	r, err := os.OpenRoot(resolved)
	if err != nil {
		return walkDir{}, 0, err
	}
	return walkDir{r: r}, len(resolved), nil
}

func (d walkDir) close() { _ = d.r.Close() }

func (d walkDir) stat() (entryStat, error) {
	fi, err := d.r.Stat(".")
	if err != nil {
		return entryStat{}, err
	}
	return statOf(fi), nil
}

// changed reports an entry that is gone since it was listed as errChanged.
func changed(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", errChanged, err)
	}
	return err
}

func (d walkDir) lstat(name string) (entryStat, error) {
	fi, err := d.r.Lstat(name)
	if err != nil {
		return entryStat{}, changed(err)
	}
	return statOf(fi), nil
}

func (d walkDir) openDir(name string) (walkDir, entryStat, error) {
	if fi, err := d.r.Lstat(name); err != nil {
		return walkDir{}, entryStat{}, changed(err)
	} else if !fi.IsDir() {
		return walkDir{}, entryStat{}, fmt.Errorf("%w: %q is no longer a directory", errChanged, name)
	}
	sub, err := d.r.OpenRoot(name)
	if err != nil {
		return walkDir{}, entryStat{}, changed(err)
	}
	es, err := walkDir{r: sub}.stat()
	if err != nil {
		_ = sub.Close()
		return walkDir{}, entryStat{}, err
	}
	return walkDir{r: sub}, es, nil
}

func (d walkDir) openFile(name string) (fileReader, entryStat, error) {
	f, err := d.r.Open(name)
	if err != nil {
		return nil, entryStat{}, changed(err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, entryStat{}, err
	}
	return f, statOf(fi), nil
}

func (d walkDir) readlink(name string, _ *[]byte) (string, error) {
	target, err := d.r.Readlink(name)
	return target, changed(err)
}

func (d walkDir) entries(_ []byte) ([]walkEntry, error) {
	f, err := d.r.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]walkEntry, 0, len(des))
	for _, de := range des {
		out = append(out, walkEntry{name: de.Name(), kind: kindOfMode(de.Type())})
	}
	return out, nil
}

func kindOfMode(m fs.FileMode) entryKind {
	switch {
	case m.IsRegular():
		return kindRegular
	case m.IsDir():
		return kindDir
	case m&fs.ModeSymlink != 0:
		return kindSymlink
	case m&fs.ModeNamedPipe != 0:
		return kindFifo
	default:
		return kindOther
	}
}

func statOf(fi fs.FileInfo) entryStat {
	// Holes and links are not looked for here: blocks unknown, one name per file.
	es := entryStat{kind: kindOfMode(fi.Mode()), mode: tarMode(fi.Mode()), size: fi.Size(), mtime: fi.ModTime(), blocks: -1}
	es.uid, es.gid = statOwner(fi)
	return es
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

// lchtimes sets the modification time of path itself. Without a portable lutimes, symlinks
// keep the time of their creation rather than risking a change to what they point at.
func lchtimes(path string, mtime time.Time, isLink bool) error {
	if isLink {
		return nil
	}
	return os.Chtimes(path, time.Time{}, mtime)
}

// renameExchange is only available on Linux; callers fall back to two renames.
func renameExchange(oldpath, newpath string) error {
	return &os.LinkError{Op: "rename-exchange", Old: oldpath, New: newpath, Err: errors.ErrUnsupported}
}

// syncFS is a no-op where there is no syncfs; the restored tree reaches the disk with the
// normal writeback.
func syncFS(dir string) error { return nil }

// syncDir is a no-op here too, for the same reason.
func syncDir(dir string) error { return nil }

// newFile is a file being extracted.
type newFile struct{ f *os.File }

func (f newFile) Write(b []byte) (int, error) { return f.f.Write(b) }

// WriteAt writes all of b at off.
func (f newFile) WriteAt(b []byte, off int64) (int, error) { return f.f.WriteAt(b, off) }

// truncate sets the file's length.
func (f newFile) truncate(size int64) error { return f.f.Truncate(size) }

// finish sets the mode and modification time and closes the file.
func (f newFile) finish(mode fs.FileMode, mtime time.Time) error {
	err := f.f.Chmod(mode)
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = lchtimes(f.f.Name(), mtime, false)
	}
	return err
}

// chown gives the file to own (nothing when nil) through its descriptor, before finish sets
// the mode (see the Linux version).
func (f newFile) chown(own *owner) error {
	if own == nil {
		return nil
	}
	return f.f.Chown(own.uid, own.gid)
}

// abandon closes a file whose writing failed.
func (f newFile) abandon() { _ = f.f.Close() }
