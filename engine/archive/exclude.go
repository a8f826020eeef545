package archive

import (
	"fmt"
	"path"
	"strings"
)

// DefaultExcludes are left out of archives when WriteOptions.Exclude is nil. Only caches that
// tools rebuild on their own belong here: a snapshot must hold everything needed to carry on
// working, so source directories and node_modules itself are never excluded by default.
var DefaultExcludes = []string{
	".cache/",
	"__pycache__/",
	".pytest_cache/",
	".mypy_cache/",
	".ruff_cache/",
	".next/cache/",
	"node_modules/.cache/",
	"node_modules/.vite/",
}

// pattern is one compiled exclusion. The syntax is a small subset of .gitignore, chosen so the
// same line means the same thing to an operator who knows either: a trailing "/" matches
// directories only, a leading "/" anchors the pattern at the root, a pattern without "/" matches
// the base name at any depth, and one with "/" matches the same number of trailing path
// components at any depth ("node_modules/.cache" also excludes "web/node_modules/.cache").
type pattern struct {
	glob     string
	parts    int
	dirOnly  bool
	anchored bool
}

type matcher []pattern

func compileExcludes(pats []string) (matcher, error) {
	if pats == nil {
		pats = DefaultExcludes
	}
	m := make(matcher, 0, len(pats))
	for _, raw := range pats {
		p := pattern{glob: raw}
		if strings.HasSuffix(p.glob, "/") {
			p.dirOnly = true
			p.glob = strings.TrimRight(p.glob, "/")
		}
		if strings.HasPrefix(p.glob, "/") {
			p.anchored = true
			p.glob = strings.TrimLeft(p.glob, "/")
		}
		if p.glob == "" {
			return nil, fmt.Errorf("exclude pattern %q: empty", raw)
		}
		if _, err := path.Match(p.glob, ""); err != nil {
			return nil, fmt.Errorf("exclude pattern %q: %w", raw, err)
		}
		p.parts = strings.Count(p.glob, "/") + 1
		m = append(m, p)
	}
	return m, nil
}

// excluded reports whether the entry at rel (clean, relative to the root) is left out.
func (m matcher) excluded(rel string, isDir bool) bool {
	for _, p := range m {
		if p.dirOnly && !isDir {
			continue
		}
		subject, ok := lastComponents(rel, p.parts)
		if !ok || (p.anchored && subject != rel) {
			continue
		}
		if match, _ := path.Match(p.glob, subject); match {
			return true
		}
	}
	return false
}

// lastComponents returns the last n slash-separated components of rel.
func lastComponents(rel string, n int) (string, bool) {
	i := len(rel)
	for ; n > 0; n-- {
		j := strings.LastIndexByte(rel[:i], '/')
		if j < 0 {
			return rel, n == 1
		}
		i = j
	}
	return rel[i+1:], true
}

// Excluder is the exclusion rule of Write for code that builds archives from another source
// (a tar stream from a pod): the same patterns, the same meaning.
type Excluder struct{ m matcher }

// NewExcluder compiles patterns with Write's syntax (nil: DefaultExcludes).
func NewExcluder(pats []string) (Excluder, error) {
	m, err := compileExcludes(pats)
	return Excluder{m: m}, err
}

// Excluded reports whether the entry at rel (clean, relative to the root) is left out.
func (x Excluder) Excluded(rel string, isDir bool) bool { return x.m.excluded(rel, isDir) }
