package local

import (
	"context"
	"fmt"
	"io"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// The file operations work on the project's directory with engine/hostfs's confinement
// (invariant 8): paths are relative to the project root; absolute paths, ".." components, NUL
// bytes and symlinks that lead outside the project (or are absolute) are refused with
// engine.ErrBadPath.

// tree is the project's directory as a hostfs.Tree.
func (r *Runtime) tree(p engine.Project) (hostfs.Tree, error) {
	dir, err := r.projectDir(p)
	return hostfs.Tree{Root: dir}, err
}

// ReadFile copies a project file to w, following symlinks that stay inside the project.
func (r *Runtime) ReadFile(ctx context.Context, p engine.Project, name string, w io.Writer) error {
	t, err := r.tree(p)
	if err == nil {
		err = t.ReadFile(ctx, name, w)
	}
	if err != nil {
		return fmt.Errorf("read %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

// WriteFile replaces a project file with the content of rd, atomically (a temp file beside it,
// then rename), creating missing parent directories. Writing through a symlink replaces the
// link's target, which must be inside the project. An existing file keeps its permissions.
func (r *Runtime) WriteFile(ctx context.Context, p engine.Project, name string, rd io.Reader) error {
	t, err := r.tree(p)
	if err == nil {
		err = t.WriteFile(ctx, name, rd)
	}
	if err != nil {
		return fmt.Errorf("write %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

// DeleteFile removes a file, a symlink (the link itself, wherever it points) or a directory
// with everything in it. Directories go recursively because a project tree is the unit the
// console manages (node_modules, build output); the walk never follows symlinks, so it cannot
// reach outside the project. The project root itself cannot be deleted this way (that is
// DestroyProject), and a missing path is ErrNotFound.
func (r *Runtime) DeleteFile(ctx context.Context, p engine.Project, name string) error {
	t, err := r.tree(p)
	if err == nil {
		err = t.DeleteFile(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("delete %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

// ListFiles lists the entries of a project directory ("" or "." is the root), sorted by name.
// Paths in the result are relative to the project root; symlinks are listed as links, with
// their target.
func (r *Runtime) ListFiles(ctx context.Context, p engine.Project, name string) ([]engine.FileInfo, error) {
	t, err := r.tree(p)
	var out []engine.FileInfo
	if err == nil {
		out, err = t.ListFiles(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("list %s:%s: %w", p.Slug, name, err)
	}
	return out, nil
}
