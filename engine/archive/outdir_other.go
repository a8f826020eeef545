//go:build !linux

package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// outDir is a directory of the tree being extracted, by path: without the Linux calls that
// resolve one name below a descriptor, each name is checked with Lstat before it is used, and
// the checks assume nothing else modifies the target meanwhile (see Extract).
type outDir struct{ path string }

func openOutRoot(target string) (outDir, error) { return outDir{path: target}, nil }

func (d outDir) close() {}

func (d outDir) join(name string) string {
	if name == "" {
		return d.path
	}
	return filepath.Join(d.path, name)
}

func (d outDir) mkdir(name string) error { return os.Mkdir(d.join(name), 0o755) }

// Errors of openDir for a name that is not a real directory.
var (
	errDirIsSymlink = fmt.Errorf("is a symlink; refusing to write through it: %w", engine.ErrBadPath)
	errDirNotDir    = fmt.Errorf("exists and is not a directory: %w", engine.ErrExists)
)

func (d outDir) openDir(name string) (outDir, error) {
	p := d.join(name)
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return outDir{}, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return outDir{}, errDirIsSymlink
	case !fi.IsDir():
		return outDir{}, errDirNotDir
	}
	return outDir{path: p}, nil
}

// createFile creates the file name of d for writing, refusing an existing name (symlinks
// included).
func (d outDir) createFile(name string, mode fs.FileMode) (newFile, error) {
	f, err := os.OpenFile(d.join(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return newFile{}, errDuplicate
	}
	return newFile{f: f}, err
}

func (d outDir) symlink(target, name string, own *owner, mtime time.Time) error {
	p := d.join(name)
	err := os.Symlink(target, p)
	if errors.Is(err, fs.ErrExist) {
		return errDuplicate
	}
	if err != nil {
		return err
	}
	if own != nil {
		if err := os.Lchown(p, own.uid, own.gid); err != nil {
			return err
		}
	}
	return lchtimes(p, mtime, true)
}

func (d outDir) finishDir(name string, own *owner, mode fs.FileMode, mtime time.Time) error {
	p := d.join(name)
	if own != nil {
		if err := os.Lchown(p, own.uid, own.gid); err != nil {
			return err
		}
	}
	if err := os.Chmod(p, mode); err != nil {
		return err
	}
	return lchtimes(p, mtime, false)
}

func isExist(err error) bool { return errors.Is(err, fs.ErrExist) }

// regular reports whether the entry name of d is a regular file (never following a symlink).
func (d outDir) regular(name string) (bool, error) {
	fi, err := os.Lstat(d.join(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return fi.Mode().IsRegular(), nil
}

// link makes name of d a hard link to the entry oldName of old.
func (d outDir) link(old outDir, oldName, name string) error {
	err := os.Link(old.join(oldName), d.join(name))
	if errors.Is(err, fs.ErrExist) {
		return errDuplicate
	}
	return err
}

// mkfifo cannot make a named pipe without the Linux calls; the archive keeps it all the same.
func (d outDir) mkfifo(name string, _ fs.FileMode, _ *owner, _ time.Time) error {
	return fmt.Errorf("%s: named pipes are restored on Linux only: %w", name, errors.ErrUnsupported)
}
