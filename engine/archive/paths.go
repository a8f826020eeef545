package archive

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sailtui/sailtui/engine"
)

// cleanName turns an entry name into the canonical relative form used for every decision during
// extraction: engine.CleanRel's (refused rather than repaired when it could reach outside, so an
// archive that relies on a lenient reading fails loudly), with "" for the target itself and no
// empty name.
func cleanName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty entry name: %w", engine.ErrBadPath)
	}
	c, err := engine.CleanRel(name)
	if err != nil {
		return "", err
	}
	if c == "." {
		return "", nil
	}
	return c, nil
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

// CheckPrefix refuses an object key prefix that engine.CheckKey would (surrounding slashes
// aside, which the sandwich trims). Checked when the configuration is read, so a bad prefix
// fails at start instead of every hibernation after the containers were stopped.
func CheckPrefix(prefix string) error {
	return engine.CheckKey(strings.Trim(prefix, "/"))
}

// baseOf returns the last name of a clean relative name.
func baseOf(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}
