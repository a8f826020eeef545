package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sailtui/sailtui/engine"
)

// outDir is a directory of the tree being extracted, held open (O_PATH: it is only ever used
// to look names up in) so that every entry below it is created relative to it: the kernel
// resolves one name, not the whole path from the target, and a directory swapped for a
// symlink once opened cannot lead anything written below it elsewhere.
type outDir struct{ fd int }

// openOutRoot opens the extraction target, which the caller names and trusts (symlinks in its
// path are followed, as MkdirAll followed them before).
func openOutRoot(target string) (outDir, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(target, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return outDir{}, &os.PathError{Op: "open", Path: target, Err: err}
	}
	return outDir{fd: fd}, nil
}

func (d outDir) close() { _ = unix.Close(d.fd) }

// mkdir makes the directory name of d (mode 0755 until finishDirs gives it its own); an
// existing name, of whatever type, is fs.ErrExist.
func (d outDir) mkdir(name string) error {
	if err := retryErr(func() error { return unix.Mkdirat(d.fd, name, 0o755) }); err != nil {
		return &os.PathError{Op: "mkdirat", Path: name, Err: err}
	}
	return nil
}

// Errors of openDir for a name that is not a real directory.
var (
	errDirIsSymlink = fmt.Errorf("is a symlink; refusing to write through it: %w", engine.ErrBadPath)
	errDirNotDir    = fmt.Errorf("exists and is not a directory: %w", engine.ErrExists)
)

// openDir opens the directory name of d. The kernel refuses a symlink there (O_NOFOLLOW with
// O_DIRECTORY) and anything but a directory; those come back as errDirIsSymlink and
// errDirNotDir.
func (d outDir) openDir(name string) (outDir, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err == nil {
		return outDir{fd: fd}, nil
	}
	if err == unix.ENOTDIR || err == unix.ELOOP {
		var s unix.Stat_t
		if unix.Fstatat(d.fd, name, &s, unix.AT_SYMLINK_NOFOLLOW) == nil && s.Mode&unix.S_IFMT == unix.S_IFLNK {
			return outDir{}, errDirIsSymlink
		}
		return outDir{}, errDirNotDir
	}
	return outDir{}, &os.PathError{Op: "openat", Path: name, Err: err}
}

// createFile creates the file name of d for writing. O_EXCL refuses an existing name,
// symlinks included, so nothing is ever written through a symlink at the last component
// (O_NOFOLLOW says so once more). The mode is given at creation (finish corrects it only where
// the umask took bits away).
func (d outDir) createFile(name string, mode fs.FileMode) (newFile, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
	})
	if err == unix.EEXIST {
		return newFile{}, errDuplicate
	}
	if err != nil {
		return newFile{}, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return newFile{fd: fd, path: name}, nil
}

// symlink makes the symlink name of d pointing at target, gives it to own unless nil (the link
// itself, never what it points at) and sets its modification time.
func (d outDir) symlink(target, name string, own *owner, mtime time.Time) error {
	err := retryErr(func() error { return unix.Symlinkat(target, d.fd, name) })
	if err == unix.EEXIST {
		return errDuplicate
	}
	if err != nil {
		return &os.PathError{Op: "symlinkat", Path: name, Err: err}
	}
	if own != nil {
		if err := retryErr(func() error { return unix.Fchownat(d.fd, name, own.uid, own.gid, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
			return &os.PathError{Op: "fchownat", Path: name, Err: err}
		}
	}
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime.UnixNano())}
	if err := unix.UtimesNanoAt(d.fd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimensat", Path: name, Err: err}
	}
	return nil
}

// finishDir gives the directory name of d (d itself when name is "") its owner (unless own is
// nil), mode and modification time, through a descriptor opened without following a symlink.
func (d outDir) finishDir(name string, own *owner, mode fs.FileMode, mtime time.Time) error {
	if name == "" {
		name = "."
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		if err == unix.ENOTDIR || err == unix.ELOOP {
			return errDirIsSymlink
		}
		return &os.PathError{Op: "openat", Path: name, Err: err}
	}
	defer unix.Close(fd)
	if own != nil {
		// The owner goes first, so that the mode set after it is the one kept, whatever a
		// chown clears.
		if err := retryErr(func() error { return unix.Fchown(fd, own.uid, own.gid) }); err != nil {
			return &os.PathError{Op: "fchown", Path: name, Err: err}
		}
	}
	if err := retryErr(func() error { return unix.Fchmod(fd, uint32(mode)) }); err != nil {
		return &os.PathError{Op: "fchmod", Path: name, Err: err}
	}
	return futimens(fd, name, mtime)
}

// isExist reports whether err says a name is taken.
func isExist(err error) bool { return errors.Is(err, fs.ErrExist) }

// regular reports whether the entry name of d is a regular file (never following a symlink).
func (d outDir) regular(name string) (bool, error) {
	var s unix.Stat_t
	err := retryErr(func() error { return unix.Fstatat(d.fd, name, &s, unix.AT_SYMLINK_NOFOLLOW) })
	if err == unix.ENOENT {
		return false, nil
	}
	if err != nil {
		return false, &os.PathError{Op: "fstatat", Path: name, Err: err}
	}
	return s.Mode&unix.S_IFMT == unix.S_IFREG, nil
}

// link makes name of d a hard link to the entry oldName of old; linkat without
// AT_SYMLINK_FOLLOW never follows a symlink, and an existing name is refused.
func (d outDir) link(old outDir, oldName, name string) error {
	err := retryErr(func() error { return unix.Linkat(old.fd, oldName, d.fd, name, 0) })
	if err == unix.EEXIST {
		return errDuplicate
	}
	if err != nil {
		return &os.PathError{Op: "linkat", Path: name, Err: err}
	}
	return nil
}

// mkfifo makes the named pipe name of d with mode, owner (unless own is nil) and mtime, set
// through a descriptor of the pipe itself (opened without blocking, never through a symlink).
func (d outDir) mkfifo(name string, mode fs.FileMode, own *owner, mtime time.Time) error {
	err := retryErr(func() error { return unix.Mkfifoat(d.fd, name, uint32(mode)) })
	if err == unix.EEXIST {
		return errDuplicate
	}
	if err != nil {
		return &os.PathError{Op: "mkfifoat", Path: name, Err: err}
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return &os.PathError{Op: "openat", Path: name, Err: err}
	}
	f := newFile{fd: fd, path: name}
	if err := f.chown(own); err != nil {
		f.abandon()
		return err
	}
	return f.finish(mode, mtime)
}
