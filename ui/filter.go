package ui

import (
	"regexp"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
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

// filterKeys are the keys of a list's `/` filter.
type filterKeys struct {
	Filter key.Binding
	Clear  key.Binding
	// While the filter is typed.
	Accept key.Binding
	Cancel key.Binding
}

func newFilterKeys() filterKeys {
	return filterKeys{
		Filter: key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Clear:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		Accept: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply filter")),
		Cancel: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
	}
}

// filterBox is a list's `/` filter with the input it is typed in: every list pane has one,
// so `/` means the same in each. The pane applies the filter to its rows when it changes.
type filterBox struct {
	keys    filterKeys
	flt     filter
	input   textinput.Model
	editing bool
}

func newFilterBox(e *env) filterBox {
	return filterBox{keys: newFilterKeys(), input: newInput(e, "/", "regex or text; ! inverts")}
}

func (f *filterBox) setWidth(w int) { f.input.SetWidth(max(w-2, 1)) }

// start begins typing the filter, from the one applied.
func (f *filterBox) start() tea.Cmd {
	f.editing = true
	f.input.SetValue(f.flt.raw)
	f.input.CursorEnd()
	return f.input.Focus()
}

// update takes a key (or a paste) while the filter is typed; changed tells that the filter
// applied is another one now (it applies as it is typed).
func (f *filterBox) update(msg tea.Msg) (cmd tea.Cmd, changed bool) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, f.keys.Accept):
			f.editing = false
			f.input.Blur()
			return nil, false
		case key.Matches(k, f.keys.Cancel):
			f.editing = false
			f.input.Blur()
			f.input.SetValue("")
			return nil, f.set("")
		}
	}
	f.input, cmd = f.input.Update(msg)
	return cmd, f.set(f.input.Value())
}

// set applies raw and tells whether that changed the filter.
func (f *filterBox) set(raw string) bool {
	if raw == f.flt.raw {
		return false
	}
	f.flt = parseFilter(raw)
	return true
}

// clearable tells that esc has a filter to clear (before it goes back).
func (f *filterBox) clearable() bool { return f.flt.raw != "" }

// inputLine is the filter while it is typed.
func (f *filterBox) inputLine() (string, *tea.Cursor, bool) {
	if !f.editing {
		return "", nil, false
	}
	return f.input.View(), f.input.Cursor(), true
}

// editKeys is the help while the filter is typed.
func (f *filterBox) editKeys() help.KeyMap {
	ks := []keyBinding{f.keys.Accept, f.keys.Cancel}
	return staticKeys{short: ks, full: [][]keyBinding{ks}}
}

// listKeys are the filter's keys in a pane's help.
func (f *filterBox) listKeys() []keyBinding { return []keyBinding{f.keys.Filter} }

// escKey is esc clearing the filter, while one is applied.
func (f *filterBox) escKey() (keyBinding, bool) { return f.keys.Clear, f.clearable() }

// escTaker is a pane with something for esc to undo before it leaves the screen (a filter or
// a search applied): the root hands it esc instead of going back, and help shows what esc
// does there in place of "esc back". ok is false when there is nothing to undo.
type escTaker interface {
	escKey() (b keyBinding, ok bool)
}
