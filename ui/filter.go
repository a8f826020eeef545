package ui

import (
	"regexp"
	"strings"
)

// filter is the `/` filter of a list, k9s style: a case-insensitive regular expression, or a
// plain substring when the text is not a valid expression (so typing "foo(" mid-word does not
// blank the list); a leading "!" keeps the rows that do not match.
type filter struct {
	raw    string
	invert bool
	re     *regexp.Regexp
	sub    string // lower-cased; used when re is nil
}

func parseFilter(raw string) filter {
	f := filter{raw: raw}
	expr := raw
	if strings.HasPrefix(expr, "!") {
		f.invert = true
		expr = expr[1:]
	}
	if expr == "" {
		// "!" alone hides nothing: an empty pattern inverted would empty the list while typing.
		return filter{raw: raw}
	}
	// Plain text matches the same either way, and a substring search is several times faster
	// than the case-folding regex engine on every keystroke over 10,000 rows.
	if regexp.QuoteMeta(expr) == expr {
		f.sub = strings.ToLower(expr)
		return f
	}
	if re, err := regexp.Compile("(?i)" + expr); err == nil {
		f.re = re
	} else {
		f.sub = strings.ToLower(expr)
	}
	return f
}

// active tells whether the filter hides anything at all.
func (f filter) active() bool { return f.re != nil || f.sub != "" }

// match reports whether a row passes: one of its fields matches (none, inverted). Fields are
// matched one by one so that anchors mean what they look like ("^api", "-web$"). They must
// already be lower-cased (rows cache them).
func (f filter) match(fields ...string) bool {
	if !f.active() {
		return true
	}
	ok := false
	for _, s := range fields {
		if f.re != nil {
			ok = f.re.MatchString(s)
		} else {
			ok = strings.Contains(s, f.sub)
		}
		if ok {
			break
		}
	}
	return ok != f.invert
}

// describe is the filter as shown in a pane title.
func (f filter) describe() string {
	if !f.active() {
		return ""
	}
	return "/" + f.raw
}
