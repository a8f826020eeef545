package engine

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// CleanRel is sailtui's one rule for a path relative to a project's root (invariant 8): file
// operations, container directories, exec working directories and archive entry names all go
// through it. It returns the path cleaned and slash-separated, "." for the root itself, and
// refuses rather than normalises what could reach outside: an absolute path, any ".."
// component (even one that would cancel out: a caller who sends one is confused or hostile and
// must hear about it), a NUL byte. Refusals wrap ErrBadPath and name the path.
func CleanRel(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte: %w", p, ErrBadPath)
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is an absolute path; paths are relative to the project root: %w", p, ErrBadPath)
	}
	for part := range strings.SplitSeq(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q has a .. component; a path that leaves the project, or could, is refused: %w", p, ErrBadPath)
		}
	}
	if p == "" {
		return ".", nil
	}
	return path.Clean(p), nil
}

// CheckKey is the one rule for object keys (and key prefixes): slash-separated components that
// are plain names, so a key names the same object in every ObjectStore, stays inside a
// directory store's root, and is not reinterpreted by S3-compatible servers that map keys to
// files. It refuses an empty key, empty components (absolute, trailing or double slash), "."
// and "..", NUL and backslash, and invalid UTF-8 (S3 keys are UTF-8). Refusals wrap ErrBadPath.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("empty key: %w", ErrBadPath)
	case !utf8.ValidString(key):
		return fmt.Errorf("key %q: not valid UTF-8: %w", key, ErrBadPath)
	case strings.ContainsAny(key, "\\\x00"):
		return fmt.Errorf("key %q: NUL or backslash: %w", key, ErrBadPath)
	}
	for part := range strings.SplitSeq(key, "/") {
		switch part {
		case "":
			return fmt.Errorf("key %q: empty component (absolute, trailing or double slash): %w", key, ErrBadPath)
		case ".", "..":
			return fmt.Errorf("key %q: %q component: %w", key, part, ErrBadPath)
		}
	}
	return nil
}
