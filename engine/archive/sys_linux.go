package archive

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// walkDir is a directory of the tree being archived, held open so that every entry below it is
// reached relative to it (see Write). A bare descriptor rather than an *os.File, as for files.
type walkDir struct{ fd int }

// openWalkRoot opens the directory root for a walk, after resolving it (the caller's path,
// trusted) once; n is the length of the resolved path, which counts against maxPathLen.
func openWalkRoot(root string) (d walkDir, n int, err error) {
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		return walkDir{}, 0, err
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(resolved, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err == unix.ENOTDIR {
		return walkDir{}, 0, errors.New("not a directory")
	}
	if err != nil {
		return walkDir{}, 0, &os.PathError{Op: "open", Path: resolved, Err: err}
	}
	return walkDir{fd: fd}, len(resolved), nil
}

func (d walkDir) close() { _ = unix.Close(d.fd) }

// stat describes the directory itself.
func (d walkDir) stat() (entryStat, error) {
	var s unix.Stat_t
	if err := retryErr(func() error { return unix.Fstat(d.fd, &s) }); err != nil {
		return entryStat{}, &os.PathError{Op: "fstat", Path: ".", Err: err}
	}
	return statOf(&s), nil
}

// changed reports an errno that means the entry at a name the walk has just listed or stat'ed
// is no longer of that type, or no longer there, as errChanged.
func changed(op, name string, err error, types ...unix.Errno) error {
	if err == unix.ENOENT {
		return fmt.Errorf("%w: %s %q: %w", errChanged, op, name, err)
	}
	for _, t := range types {
		if err == t {
			return fmt.Errorf("%w: %s %q: %w", errChanged, op, name, err)
		}
	}
	return &os.PathError{Op: op, Path: name, Err: err}
}

// lstat describes the entry name of d itself, never what a symlink points at.
func (d walkDir) lstat(name string) (entryStat, error) {
	var s unix.Stat_t
	if err := retryErr(func() error { return unix.Fstatat(d.fd, name, &s, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return entryStat{}, changed("fstatat", name, err)
	}
	return statOf(&s), nil
}

// openDir opens the directory name of d; a symlink or anything but a directory there is refused
// by the kernel (O_NOFOLLOW|O_DIRECTORY) and reported as errChanged.
func (d walkDir) openDir(name string) (walkDir, entryStat, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return walkDir{}, entryStat{}, changed("openat", name, err, unix.ELOOP, unix.ENOTDIR)
	}
	sub := walkDir{fd: fd}
	es, err := sub.stat()
	if err != nil {
		sub.close()
		return walkDir{}, entryStat{}, err
	}
	return sub, es, nil
}

// openFile opens the entry name of d for reading and describes what was opened. O_NOFOLLOW
// refuses a symlink put there since the listing (errChanged); O_NONBLOCK keeps a fifo put there
// from hanging the walk, and the caller checks es.kind before reading.
func (d walkDir) openFile(name string) (fileReader, entryStat, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		// ENXIO: a socket was put at the name.
		return nil, entryStat{}, changed("openat", name, err, unix.ELOOP, unix.ENXIO)
	}
	var s unix.Stat_t
	if err := retryErr(func() error { return unix.Fstat(fd, &s) }); err != nil {
		_ = unix.Close(fd)
		return nil, entryStat{}, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	return rawFile(fd), statOf(&s), nil
}

// readlink reads the target of the symlink name of d, reusing *buf.
func (d walkDir) readlink(name string, buf *[]byte) (string, error) {
	if len(*buf) == 0 {
		*buf = make([]byte, 256)
	}
	for {
		n, err := retryEINTR(func() (int, error) { return unix.Readlinkat(d.fd, name, *buf) })
		if err != nil {
			// EINVAL: not a symlink (any more).
			return "", changed("readlinkat", name, err, unix.EINVAL)
		}
		if n < len(*buf) {
			return string((*buf)[:n]), nil
		}
		*buf = make([]byte, 2*len(*buf))
	}
}

// direntHeader is the fixed part of struct linux_dirent64, the name following it.
const direntHeader = int(unsafe.Offsetof(unix.Dirent{}.Name))

// entries lists d (every entry but "." and ".."), in the directory's order, with the type each
// entry had when listed. The directory is read from its start only on a fresh descriptor.
func (d walkDir) entries(buf []byte) ([]walkEntry, error) {
	var out []walkEntry
	for {
		n, err := retryEINTR(func() (int, error) { return unix.Getdents(d.fd, buf) })
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: ".", Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) > 0; {
			if len(b) < direntHeader {
				return nil, errors.New("getdents: truncated entry")
			}
			reclen := int(binary.NativeEndian.Uint16(b[unsafe.Offsetof(unix.Dirent{}.Reclen):]))
			if reclen < direntHeader || reclen > len(b) {
				return nil, errors.New("getdents: malformed entry")
			}
			ino := binary.NativeEndian.Uint64(b[unsafe.Offsetof(unix.Dirent{}.Ino):])
			typ := b[unsafe.Offsetof(unix.Dirent{}.Type)]
			name := b[direntHeader:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			// Inode 0 marks a deleted entry on some filesystems; the kernel's own readdir
			// skips those too.
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			out = append(out, walkEntry{name: string(name), kind: kindOfDT(typ)})
		}
	}
}

func kindOfDT(t uint8) entryKind {
	switch t {
	case unix.DT_REG:
		return kindRegular
	case unix.DT_DIR:
		return kindDir
	case unix.DT_LNK:
		return kindSymlink
	case unix.DT_FIFO:
		return kindFifo
	case unix.DT_UNKNOWN:
		return kindUnknown
	default:
		return kindOther
	}
}

func statOf(s *unix.Stat_t) entryStat {
	es := entryStat{
		mode:  int64(s.Mode & 0o7777),
		size:  s.Size,
		mtime: time.Unix(s.Mtim.Sec, s.Mtim.Nsec),
		uid:   int(s.Uid),
		gid:   int(s.Gid),
		// st_blocks counts 512-byte units whatever the filesystem's block size.
		blocks: s.Blocks,
		nlink:  uint64(s.Nlink),
		id:     fileID{dev: uint64(s.Dev), ino: s.Ino},
	}
	switch s.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		es.kind = kindRegular
	case unix.S_IFDIR:
		es.kind = kindDir
	case unix.S_IFLNK:
		es.kind = kindSymlink
	case unix.S_IFIFO:
		es.kind = kindFifo
	default:
		es.kind = kindOther
	}
	return es
}

func retryErr(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// rawFile is a file being archived, as a bare descriptor: archiving is a loop over thousands of
// small files, and os.File registers each with the poller (an extra syscall) for no benefit on
// regular files.
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

// ReadAt reads from off without moving the file offset (a sparse file's data fragments).
func (f rawFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := retryEINTR(func() (int, error) { return unix.Pread(int(f), b, off) })
	switch {
	case err != nil:
		return 0, err
	case n == 0 && len(b) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// dataMap lists the data fragments of the file's first size bytes, as SEEK_DATA and
// SEEK_HOLE find them, at most maxFrags (the last one then runs to size: what follows is
// archived as data, zeros included), and leaves the offset at 0 for a plain read. A
// filesystem that cannot tell reports the whole file as data, so the error is only for a
// descriptor that cannot seek at all.
func (f rawFile) dataMap(size int64, maxFrags int) ([]fragment, error) {
	var frags []fragment
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(f), off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			break // only a hole from off on
		}
		if err != nil {
			return nil, err
		}
		if data >= size {
			break
		}
		hole, err := unix.Seek(int(f), data, unix.SEEK_HOLE)
		if err != nil {
			return nil, err
		}
		hole = min(hole, size)
		if len(frags) == maxFrags-1 {
			hole = size
		}
		frags = append(frags, fragment{off: data, len: hole - data})
		off = hole
	}
	if _, err := unix.Seek(int(f), 0, io.SeekStart); err != nil {
		return nil, err
	}
	return frags, nil
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

// WriteAt writes all of b at off (a sparse file's data: what lies between is left a hole).
func (f newFile) WriteAt(b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		n, err := retryEINTR(func() (int, error) { return unix.Pwrite(f.fd, b[done:], off+int64(done)) })
		if err != nil {
			return done, &os.PathError{Op: "pwrite", Path: f.path, Err: err}
		}
		done += n
	}
	return done, nil
}

// truncate sets the file's length: a sparse file's trailing hole is made by it, not written.
func (f newFile) truncate(size int64) error {
	if err := retryErr(func() error { return unix.Ftruncate(f.fd, size) }); err != nil {
		return &os.PathError{Op: "ftruncate", Path: f.path, Err: err}
	}
	return nil
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

// chown gives the file to own (nothing when nil) through its descriptor, so the file created
// is the one given away whatever happens to its name. It comes before finish: a chown clears
// setuid and setgid (the archive's modes have none anyway), and finish's mode is the last word.
func (f newFile) chown(own *owner) error {
	if own == nil {
		return nil
	}
	if err := retryErr(func() error { return unix.Fchown(f.fd, own.uid, own.gid) }); err != nil {
		return &os.PathError{Op: "fchown", Path: f.path, Err: err}
	}
	return nil
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
