//go:build !linux

package archive

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// openNoFollow opens a file found by the walk for reading; portable fallback without the
// O_NOFOLLOW guard (the walk has just seen a regular file there).
func openNoFollow(path string) (fileReader, error) {
	return os.Open(path)
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

// createFile creates p for writing, refusing an existing name (symlinks included).
func createFile(p string, mode fs.FileMode) (newFile, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return newFile{}, errDuplicate
	}
	return newFile{f: f}, err
}

func (f newFile) Write(b []byte) (int, error) { return f.f.Write(b) }

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

// abandon closes a file whose writing failed.
func (f newFile) abandon() { _ = f.f.Close() }
