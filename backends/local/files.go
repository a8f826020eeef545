package local

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

	"github.com/sailtui/sailtui/engine"
)

// openFiles validates path and opens the project root for a file operation. Paths are relative
// to the project root: absolute paths, ".." components and NUL bytes are refused outright, and
// so is any path that resolves outside the root through a symlink, or through an absolute
// symlink at all (errors wrap engine.ErrBadPath and say which part was wrong). The operations
// then go through os.Root, which refuses escapes again if the tree changes underneath.
func (r *Runtime) openFiles(p engine.Project, p0 string, followLast bool) (root *os.Root, rel, res string, err error) {
	dir, err := r.projectDir(p)
	if err != nil {
		return nil, "", "", err
	}
	rel, err = cleanRel(p0)
	if err != nil {
		return nil, "", "", err
	}
	root, err = os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", "", fmt.Errorf("project has no storage: %w", engine.ErrNotFound)
		}
		return nil, "", "", err
	}
	res, err = resolve(dir, rel, followLast)
	if err != nil {
		_ = root.Close()
		return nil, "", "", err
	}
	return root, rel, res, nil
}

// fileErr words an OS error for the caller, with the sentinel the engine tests for.
func fileErr(rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q does not exist: %w", rel, engine.ErrNotFound)
	case errors.Is(err, engine.ErrBadPath):
		return err
	}
	return escapeErr(err)
}

// ReadFile copies a project file to w, following symlinks that stay inside the project.
func (r *Runtime) ReadFile(ctx context.Context, p engine.Project, name string, w io.Writer) error {
	if err := r.readFile(ctx, p, name, w); err != nil {
		return fmt.Errorf("read %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

func (r *Runtime) readFile(ctx context.Context, p engine.Project, name string, w io.Writer) error {
	root, rel, res, err := r.openFiles(p, name, true)
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.Open(res)
	if err != nil {
		return fileErr(rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%q is a directory: %w", rel, engine.ErrBadInput)
	}
	_, err = io.Copy(w, ctxReader{ctx, f})
	return err
}

// WriteFile replaces a project file with the content of rd, atomically (a temp file beside it,
// then rename), creating missing parent directories. Writing through a symlink replaces the
// link's target, which must be inside the project. An existing file keeps its permissions.
func (r *Runtime) WriteFile(ctx context.Context, p engine.Project, name string, rd io.Reader) error {
	if err := r.writeFile(ctx, p, name, rd); err != nil {
		return fmt.Errorf("write %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

func (r *Runtime) writeFile(ctx context.Context, p engine.Project, name string, rd io.Reader) error {
	root, rel, res, err := r.openFiles(p, name, true)
	if err != nil {
		return err
	}
	defer root.Close()
	if res == "." {
		return fmt.Errorf("%q is the project root, not a file: %w", rel, engine.ErrBadInput)
	}
	perm := fs.FileMode(0o644)
	switch fi, err := root.Lstat(res); {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%q is a directory: %w", rel, engine.ErrBadInput)
	case err == nil:
		perm = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return fileErr(rel, err)
	}
	parent := path.Dir(res)
	if parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("create parent directories: %w", fileErr(rel, err))
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(parent, "."+path.Base(res)+".sailtui-"+hex.EncodeToString(rnd[:])+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fileErr(rel, err)
	}
	_, err = io.Copy(f, ctxReader{ctx, rd})
	if err == nil {
		err = f.Chmod(perm) // the umask applied at create
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
		return fileErr(rel, err)
	}
	return nil
}

// DeleteFile removes a file, a symlink (the link itself, wherever it points) or a directory
// with everything in it. Directories go recursively because a project tree is the unit the
// console manages (node_modules, build output); the walk never follows symlinks, so it cannot
// reach outside the project. The project root itself cannot be deleted this way (that is
// DestroyProject), and a missing path is ErrNotFound.
func (r *Runtime) DeleteFile(ctx context.Context, p engine.Project, name string) error {
	if err := r.deleteFile(ctx, p, name); err != nil {
		return fmt.Errorf("delete %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

func (r *Runtime) deleteFile(ctx context.Context, p engine.Project, name string) error {
	root, rel, res, err := r.openFiles(p, name, false)
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
		return fileErr(rel, err)
	}
	if fi.IsDir() {
		err = root.RemoveAll(res)
	} else {
		err = root.Remove(res)
	}
	return fileErr(rel, err)
}

// ListFiles lists the entries of a project directory ("" or "." is the root), sorted by name.
// Paths in the result are relative to the project root; symlinks are listed as links, with
// their target.
func (r *Runtime) ListFiles(ctx context.Context, p engine.Project, name string) ([]engine.FileInfo, error) {
	out, err := r.listFiles(ctx, p, name)
	if err != nil {
		return nil, fmt.Errorf("list %s:%s: %w", p.Slug, name, err)
	}
	return out, nil
}

func (r *Runtime) listFiles(ctx context.Context, p engine.Project, name string) ([]engine.FileInfo, error) {
	root, rel, res, err := r.openFiles(p, name, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.Open(res)
	if err != nil {
		return nil, fileErr(rel, err)
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

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
