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

// writeFile creates p (refusing an existing name) with data, mode and mtime.
func writeFile(p string, data []byte, mode fs.FileMode, mtime time.Time) error {
	f, err := createExcl(p)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = lchtimes(p, mtime, false)
	}
	return err
}
