package ui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/theme"
)

// tableView is the body of a list pane (containers, timeline), after lazydocker's
// SideListPanel[T]: the pane says what its columns are, how a row becomes cells and what to say
// when there are none; the table keeps the rows, the cursor (on the same row across reloads)
// and renders exactly the size it was given. Panes keep their own keys and actions, so the
// table knows nothing of what a row means.
type tableView[T any] struct {
	cols []column
	// id names a row, so the cursor follows it when a reload moves it.
	id    func(T) string
	cells func(T) []cell
	// empty is the line shown when the list is in and has no rows; waiting, before it is in.
	empty   func() string
	waiting string

	rows   []T
	loaded bool
	// err is the last load's failure; it replaces the list only while there is none.
	err error
	nav listNav
	// want is the row to select once the first list arrives (a container named before the
	// containers were listed).
	want string
	w, h int
}

func (t *tableView[T]) setSize(w, h int) {
	t.w, t.h = w, h
	t.nav.setHeight(h - 1) // the column header takes a line
}

// move applies a navigation key and reports whether the key was one.
func (t *tableView[T]) move(k navKeys, msg tea.KeyPressMsg) bool { return k.handle(msg, &t.nav) }

// selected is the row under the cursor.
func (t *tableView[T]) selected() (T, bool) {
	if !t.loaded || t.nav.cursor >= len(t.rows) {
		var zero T
		return zero, false
	}
	return t.rows[t.nav.cursor], true
}

// first is the first row, once the list is in.
func (t *tableView[T]) first() (T, bool) {
	if !t.loaded || len(t.rows) == 0 {
		var zero T
		return zero, false
	}
	return t.rows[0], true
}

// set takes a load's answer. On success the rows are replaced and the cursor stays on the row
// it was on (or goes to the one wanted before the first list); a failure keeps the rows the
// operator was looking at.
func (t *tableView[T]) set(rows []T, err error) {
	t.err = err
	if err != nil {
		return
	}
	keep := t.want
	if cur, ok := t.selected(); ok {
		keep = t.id(cur)
	}
	t.want = ""
	t.rows, t.loaded = rows, true
	t.nav.setLen(len(t.rows))
	t.selectID(keep)
}

// selectID puts the cursor on the row named id, now or once the first list is in.
func (t *tableView[T]) selectID(id string) {
	if !t.loaded {
		t.want = id
		return
	}
	for i, r := range t.rows {
		if t.id(r) == id {
			t.nav.selectIndex(i)
		}
	}
}

func (t *tableView[T]) view(th theme.Theme) string {
	widths := layout(t.cols, t.w)
	lines := make([]string, 0, t.h)
	lines = append(lines, headerLine(th, t.cols, widths, t.w))
	switch {
	case t.err != nil && !t.loaded:
		lines = append(lines, th.Error.Render("  "+sanitize(t.err.Error())))
	case !t.loaded:
		lines = append(lines, th.Muted.Render("  "+t.waiting))
	case len(t.rows) == 0:
		lines = append(lines, th.Muted.Render("  "+t.empty()))
	}
	start, end := t.nav.window()
	for i := start; i < end; i++ {
		lines = append(lines, rowLine(th, t.cells(t.rows[i]), widths, i == t.nav.cursor, t.w))
	}
	return block(lines, t.w, t.h)
}
