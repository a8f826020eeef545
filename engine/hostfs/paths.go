// Package hostfs is file access to a project tree kept in a directory of this machine, confined
// to that directory (DESIGN.md invariant 8). Runtimes whose project files live on the host
// (a host directory bind-mounted into containers, or the local runtime's directories) share it,
// so every one of them refuses the same paths with the same errors.
//
// Paths are relative to the tree's root: absolute paths, ".." components and NUL bytes are
// refused outright, and so is any path that resolves outside the root through a symlink, or
// through an absolute symlink at all (errors wrap engine.ErrBadPath and say which part was
// wrong). The operations then go through os.Root, which refuses escapes again if the tree
// changes underneath.
package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sailtui/sailtui/engine"
)

// CheckName accepts a slug or container name as one path component of a runtime's
// directories, so no name can point a directory operation somewhere else.
func CheckName(kind, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty: %w", kind, engine.ErrBadInput)
	case s == "." || s == "..":
		return fmt.Errorf("%s %q is not a name: %w", kind, s, engine.ErrBadInput)
	case strings.ContainsAny(s, "/\\\x00"):
		return fmt.Errorf("%s %q contains a slash or NUL byte: %w", kind, s, engine.ErrBadInput)
	case strings.HasPrefix(s, "."):
		// Runtimes keep records beside temp files that start with a dot.
		return fmt.Errorf("%s %q starts with a dot: %w", kind, s, engine.ErrBadInput)
	}
	return nil
}

// ProjectDirExists reports whether dir, the directory of project slug, is there. Something
// else than a directory in its place is an error.
func ProjectDirExists(slug, dir string) (bool, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("project exists %s: %w", slug, err)
	case !fi.IsDir():
		return false, fmt.Errorf("project %s: %s is not a directory", slug, dir)
	}
	return true, nil
}

// maxLinks bounds symlink resolution like the kernel's ELOOP limit.
const maxLinks = 40

// Resolve follows rel (already cleaned by CleanRel) inside root the way the kernel would,
// reading each existing component's symlinks itself, and returns the equivalent path with no
// symlinks left in it (the last component's only when followLast is false). A symlink that is
// absolute or climbs above root makes it fail with ErrBadPath naming the link. Components that
// do not exist yet are kept as they are: they will be created inside.
//
// The result is also what the path is inside a container that mounts root anywhere: it holds
// no link, so the container's own view of absolute links cannot change where it leads.
func Resolve(root, rel string, followLast bool) (string, error) {
	pending := splitPath(rel)
	var cur []string
	links := 0
	missing := false
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			// Only symlink targets bring ".." here; CleanRel refused it in rel.
			if len(cur) == 0 {
				return "", fmt.Errorf("path %q leaves the project root through a symlink: %w", rel, engine.ErrBadPath)
			}
			cur = cur[:len(cur)-1]
			continue
		}
		if missing {
			cur = append(cur, name)
			continue
		}
		here := path.Join(append(cur, name)...)
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(here)))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Left for the operation itself to report, in terms of the relative path.
			missing = true
			cur = append(cur, name)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("path %q: %w", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 || (len(pending) == 0 && !followLast) {
			cur = append(cur, name)
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("path %q: too many levels of symlinks: %w", rel, engine.ErrBadPath)
		}
		target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(here)))
		if err != nil {
			return "", fmt.Errorf("path %q: %w", rel, err)
		}
		if strings.HasPrefix(target, "/") || filepath.IsAbs(target) {
			return "", fmt.Errorf("path %q: symlink %q points to the absolute path %q; only relative links inside the project are followed: %w",
				rel, here, target, engine.ErrBadPath)
		}
		if depth(cur, target) < 0 {
			return "", fmt.Errorf("path %q: symlink %q points outside the project root (to %q): %w", rel, here, target, engine.ErrBadPath)
		}
		pending = append(splitPath(target), pending...)
	}
	if len(cur) == 0 {
		return ".", nil
	}
	return path.Join(cur...), nil
}

// depth is how deep a link target relative to dir cur lands, counted lexically; negative
// means it climbs above the root. It only sharpens the error message: Resolve's own walk
// catches the same escape.
func depth(cur []string, target string) int {
	d := len(cur)
	for _, part := range splitPath(target) {
		switch part {
		case "", ".":
		case "..":
			d--
			if d < 0 {
				return d
			}
		default:
			d++
		}
	}
	return d
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// escapeErr turns os.Root's refusal (its error type is not exported) into ErrBadPath, for the
// case where the tree changed between Resolve and the operation.
func escapeErr(err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w: %w", engine.ErrBadPath, err)
	}
	return err
}
