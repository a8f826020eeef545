package engine

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Limits of the free text a project carries; each is shown in a console column and a CLI table,
// and nothing past a few dozen characters of it is ever read. An owner is a user name, and one
// directory of the snapshot store besides (see checkOwner).
const (
	MaxNameLength  = 200
	MaxOwnerLength = 64
)

// maxOwnerSegment is the most bytes an owner may take path-escaped: it names a directory of the
// archive store (<prefix>/<owner>/<project>/...), and file systems allow 255 bytes a name.
const maxOwnerSegment = 255

// Unprintable reports a rune that must not reach a terminal as it is. C0 controls, DEL and C1
// controls start escape sequences (an OSC 52 writes the operator's clipboard, others retitle or
// clear the screen) or break a one-line row; the bidi embeddings, overrides and isolates
// (U+202A–U+202E, U+2066–U+2069) reorder the text around them, so what is shown is not what is
// stored. The CLI quotes text holding one, the console blanks it, and names, owners and labels
// refuse it at input.
func Unprintable(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r < 0xa0) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// checkText refuses free text (a project's name or owner, a snapshot's label) that is not valid
// UTF-8, is longer than maxRunes, or holds an Unprintable rune; what is the field, for the
// error.
func checkText(what, s string, maxRunes int) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8; give it as UTF-8 text: %w", what, ErrBadInput)
	}
	if n := utf8.RuneCountInString(s); n > maxRunes {
		return fmt.Errorf("%s is %d characters long; use at most %d: %w", what, n, maxRunes, ErrBadInput)
	}
	if i := strings.IndexFunc(s, Unprintable); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("%s %q holds %U, a control or bidi character (it would drive or reorder the terminals it is shown on); "+
			"use printable text only, on one line: %w", what, s, r, ErrBadInput)
	}
	return nil
}

// checkOwner is checkText for an owner, which must also fit as one directory name of the
// snapshot store once escaped (a non-ASCII letter takes up to twelve bytes there): an owner
// that did not would fail every snapshot of its projects.
func checkOwner(owner string) error {
	if err := checkText("owner", owner, MaxOwnerLength); err != nil {
		return err
	}
	if n := len(url.PathEscape(owner)); n > maxOwnerSegment {
		return fmt.Errorf("owner %q takes %d bytes as a directory name of the snapshot store (non-ASCII letters are escaped there), over the %d a file system allows; use a shorter owner: %w",
			owner, n, maxOwnerSegment, ErrBadInput)
	}
	return nil
}
