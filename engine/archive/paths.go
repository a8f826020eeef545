package archive

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// cleanName turns an entry name into the canonical relative form used for every decision during
// extraction: single slashes, no "." components, no trailing slash; "" is the target itself.
// Names are refused rather than repaired when they could reach outside the target, so an
// archive that relies on a lenient reading fails loudly instead of landing somewhere unexpected.
func cleanName(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("empty name")
	case strings.IndexByte(name, 0) >= 0:
		return "", errors.New("name contains a NUL byte")
	case strings.HasPrefix(name, "/"):
		return "", errors.New("absolute path")
	}
	var b strings.Builder
	b.Grow(len(name))
	for part := range strings.SplitSeq(name, "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			return "", errors.New("escapes target (contains \"..\")")
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(part)
	}
	return b.String(), nil
}

// CleanName is the entry-name rule of Extract for code that checks archives on their way
// elsewhere (a tar stream into a pod): the canonical relative form, "" for the root, and an
// error for any name that could reach outside.
func CleanName(name string) (string, error) { return cleanName(name) }

// checkLinkTarget decides whether a symlink stored at entry (a clean relative name) may point at
// link. Absolute targets and targets that climb above the root are refused. ".." is accepted
// only as a leading run: once a name has been descended into, that name may itself be a symlink,
// and a later ".." would then be resolved relative to wherever it points, which a lexical check
// cannot follow. With leading ".." only, every link resolves inside the root by induction: the
// climb goes through real parent directories (extraction never writes below a symlink) and the
// descent can only reach other links that obey the same rule.
func checkLinkTarget(entry, link string) error {
	switch {
	case link == "":
		return errors.New("empty symlink target")
	case strings.IndexByte(link, 0) >= 0:
		return errors.New("symlink target contains a NUL byte")
	case strings.HasPrefix(link, "/"):
		return fmt.Errorf("symlink to absolute path %q escapes target", link)
	}
	depth := 0
	if dir := path.Dir(entry); dir != "." {
		depth = strings.Count(dir, "/") + 1
	}
	descended := false
	for part := range strings.SplitSeq(link, "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			if descended {
				return fmt.Errorf("symlink target %q has \"..\" after a name", link)
			}
			depth--
			if depth < 0 {
				return fmt.Errorf("symlink target %q escapes target", link)
			}
		default:
			descended = true
		}
	}
	return nil
}

// parentOf returns the parent of a clean relative name ("" for top-level entries).
func parentOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// CheckPrefix refuses an object key prefix that would not name the same place in every object
// store: empty, "." or ".." components (a key path resolves them differently, or climbs out),
// backslashes, NUL bytes and invalid UTF-8. Checked when the configuration is read, so a bad
// prefix fails at start instead of every hibernation after the containers were stopped.
func CheckPrefix(prefix string) error {
	switch {
	case !utf8.ValidString(prefix):
		return errors.New("not valid UTF-8")
	case strings.ContainsAny(prefix, "\\\x00"):
		return errors.New("contains a backslash or a NUL byte")
	}
	for part := range strings.SplitSeq(strings.Trim(prefix, "/"), "/") {
		switch part {
		case "":
			return errors.New("has an empty component")
		case ".", "..":
			return fmt.Errorf("has a %q component", part)
		}
	}
	return nil
}
