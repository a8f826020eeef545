package hostfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/stream"
)

// Owner is a numeric user and group.
type Owner struct {
	UID, GID int
}

// Tree is a project tree rooted at a directory of this machine.
type Tree struct {
	// Root is the tree's directory. A missing Root makes every operation fail with
	// engine.ErrNotFound ("project has no storage").
	Root string
	// Owner, when set, is given every file and directory the Tree creates, so a container that
	// runs as another user than this process can still change what the console wrote. A file
	// that is replaced keeps the owner it had.
	Owner *Owner
}

// open validates name and opens the root for a file operation; res is name with every
// symlink resolved (the last one only when followLast).
func (t Tree) open(name string, followLast bool) (root *os.Root, rel, res string, err error) {
	rel, err = engine.CleanRel(name)
	if err != nil {
		return nil, "", "", err
	}
	root, err = os.OpenRoot(t.Root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", "", fmt.Errorf("project has no storage: %w", engine.ErrNotFound)
		}
		return nil, "", "", err
	}
	res, err = Resolve(t.Root, rel, followLast)
	if err != nil {
		_ = root.Close()
		return nil, "", "", err
	}
	return root, rel, res, nil
}

// FileErr words an OS error from an operation on rel for the caller, with the sentinel the
// engine tests for: a missing path is engine.ErrNotFound, an escape engine.ErrBadPath.
func FileErr(rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q does not exist: %w", rel, engine.ErrNotFound)
	case errors.Is(err, engine.ErrBadPath):
		return err
	}
	return escapeErr(err)
}

// Dir resolves the directory rel of the tree (already checked by CleanRel or not) and returns
// it with no symlink left in it, relative to the root. It must exist and be a directory.
func (t Tree) Dir(rel string) (string, error) {
	root, rel, res, err := t.open(rel, true)
	if err != nil {
		return "", err
	}
	defer root.Close()
	fi, err := root.Stat(res)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("directory %q does not exist in the project: %w", rel, engine.ErrNotFound)
		}
		return "", escapeErr(err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%q is not a directory: %w", rel, engine.ErrBadInput)
	}
	return res, nil
}

// ReadFile copies a file to w, following symlinks that stay inside the tree.
func (t Tree) ReadFile(ctx context.Context, name string, w io.Writer) error {
	root, rel, res, err := t.open(name, true)
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.Open(res)
	if err != nil {
		return FileErr(rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%q is a directory: %w", rel, engine.ErrBadInput)
	}
	_, err = io.Copy(w, stream.WithContext(ctx, f))
	return err
}

// WriteFile replaces a file with the content of rd, atomically (a temp file beside it, then
// rename), creating missing parent directories. Writing through a symlink replaces the link's
// target, which must be inside the tree. An existing file keeps its permissions and owner.
func (t Tree) WriteFile(ctx context.Context, name string, rd io.Reader) error {
	root, rel, res, err := t.open(name, true)
	if err != nil {
		return err
	}
	defer root.Close()
	if res == "." {
		return fmt.Errorf("%q is the project root, not a file: %w", rel, engine.ErrBadInput)
	}
	if n := len(res); n > archive.MaxPathLen {
		return fmt.Errorf("%q: path too long: %d bytes below the project's root, snapshots hold at most %d; use a shorter path: %w",
			rel[:min(len(rel), 60)]+"…", n, archive.MaxPathLen, engine.ErrBadPath)
	}
	perm := fs.FileMode(0o644)
	owner := t.Owner
	switch fi, err := root.Lstat(res); {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%q is a directory: %w", rel, engine.ErrBadInput)
	case err == nil:
		perm = fi.Mode().Perm()
		if o, ok := statOwner(fi); ok {
			owner = &o
		}
	case !errors.Is(err, fs.ErrNotExist):
		return FileErr(rel, err)
	}
	parent := path.Dir(res)
	if err := t.mkdirAll(root, parent); err != nil {
		return fmt.Errorf("create parent directories: %w", FileErr(rel, err))
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(parent, "."+path.Base(res)+".sailtui-"+hex.EncodeToString(rnd[:])+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return FileErr(rel, err)
	}
	_, err = io.Copy(f, stream.WithContext(ctx, rd))
	if err == nil {
		err = f.Chmod(perm) // the umask applied at create
	}
	if err == nil && owner != nil {
		err = chown(f.Chown(owner.UID, owner.GID))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, res)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return FileErr(rel, err)
	}
	return nil
}

// mkdirAll creates dir (resolved, relative to root) and its missing parents, giving each one
// it creates to the Tree's owner.
func (t Tree) mkdirAll(root *os.Root, dir string) error {
	if dir == "." {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(dir, "/") {
		cur = path.Join(cur, part)
		err := root.Mkdir(cur, 0o755)
		switch {
		case err == nil:
			if t.Owner != nil {
				if err := chown(root.Lchown(cur, t.Owner.UID, t.Owner.GID)); err != nil {
					return err
				}
			}
		case errors.Is(err, fs.ErrExist):
		default:
			return err
		}
	}
	return nil
}

// chown lets a process that may not give files away (not root) go on without doing so: its
// files are then its own, which is what a runtime without an Owner gets anyway.
func chown(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return nil
	}
	return err
}

// DeleteFile removes a file, a symlink (the link itself, wherever it points) or a directory
// with everything in it. The walk never follows symlinks, so it cannot reach outside the tree.
// The root itself cannot be deleted this way, and a missing path is ErrNotFound.
func (t Tree) DeleteFile(ctx context.Context, name string) error {
	root, rel, res, err := t.open(name, false)
	if err != nil {
		return err
	}
	defer root.Close()
	if res == "." {
		return fmt.Errorf("%q is the project root; it is removed only with the project: %w", rel, engine.ErrBadPath)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := root.Lstat(res)
	if err != nil {
		return FileErr(rel, err)
	}
	if fi.IsDir() {
		err = root.RemoveAll(res)
	} else {
		err = root.Remove(res)
	}
	return FileErr(rel, err)
}

// ListFiles lists the entries of a directory ("" or "." is the root), sorted by name. Paths in
// the result are relative to the root; symlinks are listed as links, with their target.
func (t Tree) ListFiles(ctx context.Context, name string) ([]engine.FileInfo, error) {
	root, rel, res, err := t.open(name, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.Open(res)
	if err != nil {
		return nil, FileErr(rel, err)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%q is not a directory: %w", rel, engine.ErrBadInput)
	}
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]engine.FileInfo, 0, len(ents))
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while listing
		}
		if err != nil {
			return nil, err
		}
		fe := engine.FileInfo{
			Path:    path.Join(rel, e.Name()),
			Size:    info.Size(),
			Mode:    info.Mode().String(),
			IsDir:   info.IsDir(),
			ModTime: info.ModTime(),
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			fe.Target, _ = root.Readlink(path.Join(res, e.Name()))
		}
		out = append(out, fe)
	}
	return out, nil
}

// ChownAll gives dir and everything below it to o, never following symlinks (a link is
// re-owned itself). The walk goes through an os.Root of dir, so a directory that a process of
// the project swaps for a symlink meanwhile cannot lead it to re-own files outside the tree.
// Entries that already belong to o are left alone, so a tree that is mostly right costs one
// stat per entry. dir itself goes last: after an interrupted walk OwnedBy(dir) still says the
// work is to do.
func ChownAll(ctx context.Context, dir string, o Owner) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		return lchownIfNeeded(root, p, d, o)
	})
	if err != nil {
		return fmt.Errorf("give %s to %d:%d: %w", dir, o.UID, o.GID, err)
	}
	return os.Lchown(dir, o.UID, o.GID)
}

func lchownIfNeeded(root *os.Root, p string, d fs.DirEntry, o Owner) error {
	fi, err := d.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur, ok := statOwner(fi); !ok || cur == o {
		return nil
	}
	return root.Lchown(p, o.UID, o.GID)
}

// OwnedBy reports whether dir belongs to o.
func OwnedBy(dir string, o Owner) (bool, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false, err
	}
	cur, ok := statOwner(fi)
	if !ok {
		return true, nil // no numeric owners here: nothing to fix
	}
	return cur == o, nil
}

// WriteFileAtomic replaces the host file path with data so that a reader sees the old or the
// new content, never a partial file. It is for a runtime's own records, not for project files
// (no confinement: path is trusted).
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
