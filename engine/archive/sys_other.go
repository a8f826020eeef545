//go:build !linux

package archive

import (
	"errors"
	"os"
	"time"
)

// openNoFollow opens a file found by the walk for reading; portable fallback without the
// O_NOFOLLOW guard (the walk has just seen a regular file there).
func openNoFollow(path string) (*os.File, error) {
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
