//go:build !unix

package logfile

import (
	"os"
	"path/filepath"
)

// openFile opens the kept log at path, refusing a symbolic link in its name or its
// directory's, checked before the open and again on what was opened (no openat here).
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	for _, p := range []string{filepath.Dir(path), path} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, linked(p)
		}
	}
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	opened, err1 := f.Stat()
	at, err2 := os.Lstat(path)
	if err1 != nil || err2 != nil || !os.SameFile(opened, at) {
		_ = f.Close()
		return nil, linked(path)
	}
	if !opened.Mode().IsRegular() {
		_ = f.Close()
		return nil, notRegular(path)
	}
	return f, nil
}
