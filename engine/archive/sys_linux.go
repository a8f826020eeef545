package archive

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sailtui/sailtui/engine"
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

// writeFile creates p (refusing an existing name: O_EXCL also refuses a symlink there) with
// data, mode and mtime. Creating files is most of an extraction, so it is done with bare
// syscalls, and the mode is given at creation, with an fchmod only when the umask would strip
// some of its bits.
func writeFile(p string, data []byte, mode fs.FileMode, mtime time.Time) error {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, uint32(mode))
	})
	if err == syscall.EEXIST {
		return fmt.Errorf("already exists (duplicate entry or existing file): %w", engine.ErrExists)
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: p, Err: err}
	}
	for len(data) > 0 {
		var n int
		if n, err = retryEINTR(func() (int, error) { return syscall.Write(fd, data) }); err != nil {
			break
		}
		data = data[n:]
	}
	if um, ok := umask(); err == nil && (!ok || uint32(mode)&um != 0) {
		err = syscall.Fchmod(fd, uint32(mode))
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: p, Err: err}
	}
	return lchtimes(p, mtime, false)
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
