package archive

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// openNoFollow opens a file found by the walk for reading. O_NOFOLLOW and O_NONBLOCK keep a
// file swapped for a symlink or a fifo since the walk from redirecting or hanging the archiver.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

// lchtimes sets the modification time of path itself, never of what a symlink points at.
// Access times are left alone: they carry no information worth a syscall.
func lchtimes(path string, mtime time.Time, _ bool) error {
	ts := []unix.Timespec{
		{Nsec: unix.UTIME_OMIT},
		unix.NsecToTimespec(mtime.UnixNano()),
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimensat", Path: path, Err: err}
	}
	return nil
}

// renameExchange swaps two paths in one step, so there is no moment where the storage
// directory is missing. It fails with ENOENT when newpath does not exist and with EINVAL where
// the filesystem cannot do it; callers fall back to plain renames.
func renameExchange(oldpath, newpath string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "renameat2", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}
