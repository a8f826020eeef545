package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// The file operations work on the directory every container of the project mounts (the host
// directory, or the volume's directory on the Docker host), with engine/hostfs's confinement
// (invariant 8); they need no container to be running. Files and directories they create
// belong to the container user.

// ReadFile copies a project file to w, following symlinks that stay inside the project.
func (r *Runtime) ReadFile(ctx context.Context, p engine.Project, name string, w io.Writer) error {
	dir, err := r.projectDir(ctx, p)
	if err == nil {
		err = r.tree(dir).ReadFile(ctx, name, w)
	}
	if err != nil {
		return fmt.Errorf("read %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

// WriteFile replaces a project file with the content of rd, atomically, creating parents.
func (r *Runtime) WriteFile(ctx context.Context, p engine.Project, name string, rd io.Reader) error {
	dir, err := r.projectDir(ctx, p)
	if err == nil {
		err = r.tree(dir).WriteFile(ctx, name, rd)
	}
	if err != nil {
		return fmt.Errorf("write %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

// DeleteFile removes a file, a symlink (not what it points to) or a directory tree.
func (r *Runtime) DeleteFile(ctx context.Context, p engine.Project, name string) error {
	dir, err := r.projectDir(ctx, p)
	if err == nil {
		err = r.tree(dir).DeleteFile(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("delete %s:%s: %w", p.Slug, name, err)
	}
	return nil
}

// ListFiles lists a project directory; paths in the result are relative to the project root.
func (r *Runtime) ListFiles(ctx context.Context, p engine.Project, name string) ([]engine.FileInfo, error) {
	dir, err := r.projectDir(ctx, p)
	var out []engine.FileInfo
	if err == nil {
		out, err = r.tree(dir).ListFiles(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("list %s:%s: %w", p.Slug, name, err)
	}
	return out, nil
}

// ImportTree copies the directory src into the project's directory through the archive format,
// like the local runtime: symlinks, modes and empty directories come along, extraction's checks
// apply, and the copy is then given to the container user.
func (r *Runtime) ImportTree(ctx context.Context, p engine.Project, src string) error {
	dst, err := r.projectDir(ctx, p)
	if err != nil {
		return fmt.Errorf("import %s: %w", src, err)
	}
	pr, pw := io.Pipe()
	werr := make(chan error, 1)
	go func() {
		_, err := archive.Write(ctx, src, pw, archive.WriteOptions{Exclude: []string{}})
		pw.CloseWithError(err)
		werr <- err
	}()
	_, xerr := archive.Extract(ctx, pr, dst, archive.Limits{})
	pr.CloseWithError(xerr)
	if err := <-werr; err != nil {
		return fmt.Errorf("import %s: read: %w", src, err)
	}
	if xerr != nil {
		return fmt.Errorf("import %s: %w", src, xerr)
	}
	if r.chown {
		if err := hostfs.ChownAll(ctx, dst, r.owner); err != nil {
			return fmt.Errorf("import %s: give the files to the container user: %w", src, err)
		}
	}
	return nil
}

// notFound words a missing project directory with the engine's sentinel.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("project has no storage: %w", engine.ErrNotFound)
	}
	return err
}

// StorageDir is the directory holding all of the project's files: what a snapshot archives and
// a restore replaces. With host directories it is <ProjectsDir>/<owner>/<slug>, a pure function
// of the project. With volumes it is the volume's directory on the Docker host (see
// volumeStorageDir), found by asking the engine, and "" when the volume is missing, not the
// project's or not reachable from this process. "" (also for a slug that is not one path
// component) means there is no storage to use, which callers must treat as an error.
func (r *Runtime) StorageDir(p engine.Project) string {
	if hostfs.CheckName("project slug", p.Slug) != nil {
		return ""
	}
	if r.cfg.Volumes {
		return r.volumeStorageDir(p)
	}
	return r.hostDir(p)
}

// hostDir is the project's host directory, <ProjectsDir>/<owner>/<slug>, whichever the mode.
func (r *Runtime) hostDir(p engine.Project) string {
	return filepath.Join(r.cfg.ProjectsDir, ownerDir(p.Owner), p.Slug)
}

// ownerDir makes an owner one path component, whatever it holds.
func ownerDir(owner string) string {
	s := url.PathEscape(owner)
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// projectDir is the directory of this machine holding the project's files: its host directory,
// or its volume's directory (an error, saying why, when that cannot be used).
func (r *Runtime) projectDir(ctx context.Context, p engine.Project) (string, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return "", err
	}
	if r.cfg.Volumes {
		return r.volumeDir(ctx, p)
	}
	dir := r.hostDir(p)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		// No directory: say so plainly when the files are in a volume (only a volume found
		// counts; an engine that does not answer leaves the plain "no storage").
		if err := r.refuseVolumeInHostMode(ctx, p); errors.Is(err, engine.ErrBadState) {
			return "", err
		}
	}
	return dir, nil
}

func (r *Runtime) tree(dir string) hostfs.Tree {
	t := hostfs.Tree{Root: dir}
	if r.chown {
		o := r.owner
		t.Owner = &o
	}
	return t
}
