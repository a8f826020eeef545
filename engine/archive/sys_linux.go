package archive

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openNoFollow opens a file found by the walk for reading. O_NOFOLLOW and O_NONBLOCK keep a
// file swapped for a symlink or a fifo since the walk from redirecting or hanging the archiver.
// A bare descriptor rather than an *os.File: archiving is a loop over thousands of small files,
// and os.File registers each with the poller (an extra syscall) for no benefit on regular files.
func openNoFollow(path string) (fileReader, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return rawFile(fd), nil
	}
}

type rawFile int

func (f rawFile) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f rawFile) Close() error { return syscall.Close(int(f)) }

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

// syncFS flushes the filesystem holding dir to disk: one call for a whole restored tree
// instead of an fsync per file, so the tree is durable before it replaces the old one.
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}

// syncDir flushes a directory itself (its entries) to disk.
func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return &os.PathError{Op: "fsync", Path: dir, Err: err}
	}
	return nil
}

// newFile is a file being extracted, as a bare descriptor: creating files is most of an
// extraction, and os.File would register each with the poller for nothing.
type newFile struct {
	fd   int
	path string
}

// createFile creates p for writing. O_EXCL refuses an existing name, symlinks included, so
// nothing is ever written through a symlink at the last component. The mode is given at
// creation (finish corrects it only where the umask took bits away).
func createFile(p string, mode fs.FileMode) (newFile, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, uint32(mode))
	})
	if err == syscall.EEXIST {
		return newFile{}, errDuplicate
	}
	if err != nil {
		return newFile{}, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return newFile{fd: fd, path: p}, nil
}

// Write writes all of b.
func (f newFile) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := retryEINTR(func() (int, error) { return syscall.Write(f.fd, b[done:]) })
		if err != nil {
			return done, &os.PathError{Op: "write", Path: f.path, Err: err}
		}
		done += n
	}
	return done, nil
}

// finish sets the mode (where the umask stripped some of it) and the modification time through
// the descriptor, which spares a second lookup of the path, and closes the file.
func (f newFile) finish(mode fs.FileMode, mtime time.Time) error {
	var err error
	if um, ok := umask(); !ok || uint32(mode)&um != 0 {
		if err = syscall.Fchmod(f.fd, uint32(mode)); err != nil {
			err = &os.PathError{Op: "fchmod", Path: f.path, Err: err}
		}
	}
	if err == nil {
		err = futimens(f.fd, f.path, mtime)
	}
	if cerr := syscall.Close(f.fd); err == nil && cerr != nil {
		err = &os.PathError{Op: "close", Path: f.path, Err: cerr}
	}
	return err
}

// abandon closes a file whose writing failed.
func (f newFile) abandon() { _ = syscall.Close(f.fd) }

// futimens sets the modification time of an open file (utimensat with a NULL path, as the C
// library's futimens does; x/sys has no wrapper for that form).
func futimens(fd int, path string, mtime time.Time) error {
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime.UnixNano())}
	if _, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0); errno != 0 {
		return &os.PathError{Op: "futimens", Path: path, Err: errno}
	}
	return nil
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// umask is the process umask, read once from /proc (reading it with umask(2) means setting it,
// which races with every other goroutine creating files). ok is false when it is unknown.
var umask = sync.OnceValues(func() (uint32, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, found := bytes.CutPrefix(sc.Bytes(), []byte("Umask:")); found {
			m, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32)
			return uint32(m), err == nil
		}
	}
	return 0, false
})
