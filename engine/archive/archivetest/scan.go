package archivetest

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Entry is one entry of a tree on disk, as tests compare trees.
type Entry struct {
	// Info is the entry's own (Lstat: a symlink is not followed).
	Info fs.FileInfo
	// Link is a symlink's target.
	Link string
	// Sum is the SHA-256 of a regular file's contents.
	Sum [sha256.Size]byte
}

// Scan records every entry below root (root itself as "."), by slash-separated path relative to
// root, without following symlinks. Entries that are neither directories, symlinks nor regular
// files (sockets, fifos, devices) are recorded with their Info alone.
func Scan(tb testing.TB, root string) map[string]Entry {
	tb.Helper()
	out := map[string]Entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := Entry{Info: fi}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Sum = sha256.Sum256(b)
		}
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		tb.Fatalf("scan %s: %v", root, err)
	}
	return out
}
