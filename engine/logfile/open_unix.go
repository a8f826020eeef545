//go:build unix

package logfile

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openFile opens the kept log at path without following a symbolic link, neither in its name
// nor in its directory's: the directory is opened with O_NOFOLLOW and the file relative to it
// (openat, O_NOFOLLOW). A project's process or another user who swaps either for a link gets
// no read or write outside. O_NONBLOCK keeps a FIFO put there from blocking the open; checked
// to be a regular file, it is dropped again.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	// Dir, not Split: a trailing slash would make the kernel follow a link in the name.
	dir, base := filepath.Dir(path), filepath.Base(path)
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, refusal(dir, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, base, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, refusal(path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return nil, notRegular(path)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// refusal turns the kernel's answer to O_NOFOLLOW on a link (ELOOP; ENOTDIR for a directory
// opened with O_DIRECTORY on some systems) into the error that says what to do.
func refusal(path string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENXIO) {
		if fi, lerr := os.Lstat(path); lerr == nil {
			if fi.Mode()&os.ModeSymlink != 0 {
				return linked(path)
			}
			if !fi.Mode().IsRegular() && !fi.IsDir() {
				return notRegular(path)
			}
		}
	}
	return err
}
