package ui

import (
	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
)

// tablePane is the common part of the list panes (containers, timeline), after lazydocker's
// SideListPanel[T]: the pane says what its columns are, how a row becomes cells, what to say
// when there are none and which actions it offers; the table keeps the rows, the cursor (on
// the same row across reloads) and the load in flight, handles the navigation keys and
// renders exactly the size it was given. It knows nothing of what a row means.
type tablePane[T any] struct {
	noInput
	env     *env
	navKeys navKeys
	actions actionList
	gate    loadGate

	cols []column
	// rowID names a row, so the cursor follows it when a reload moves it.
	rowID    func(T) string
	rowCells func(T) []cell
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

func (t *tablePane[T]) close() {}

func (t *tablePane[T]) setSize(w, h int) {
	t.w, t.h = w, h
	t.nav.setHeight(h - 1) // the column header takes a line
}

// keyMap is the actions that apply to the selected row, and the navigation keys in full help.
func (t *tablePane[T]) keyMap() help.KeyMap {
	acts := t.actions.available()
	return staticKeys{short: acts, full: [][]keyBinding{t.navKeys.bindings(), acts}}
}

func (t *tablePane[T]) update(msg tea.KeyPressMsg) tea.Cmd {
	if t.navKeys.handle(msg, &t.nav) {
		return nil
	}
	cmd, _ := t.actions.handle(msg)
	return cmd
}

// selected is the row under the cursor.
func (t *tablePane[T]) selected() (T, bool) {
	if !t.loaded || t.nav.cursor >= len(t.rows) {
		var zero T
		return zero, false
	}
	return t.rows[t.nav.cursor], true
}

// first is the first row, once the list is in.
func (t *tablePane[T]) first() (T, bool) {
	if !t.loaded || len(t.rows) == 0 {
		var zero T
		return zero, false
	}
	return t.rows[0], true
}

// set takes a load's answer. On success the rows are replaced and the cursor stays on the row
// it was on (or goes to the one wanted before the first list); a failure keeps the rows the
// operator was looking at.
func (t *tablePane[T]) set(rows []T, err error) {
	t.err = err
	if err != nil {
		return
	}
	keep := t.want
	if cur, ok := t.selected(); ok {
		keep = t.rowID(cur)
	}
	t.want = ""
	t.rows, t.loaded = rows, true
	t.nav.setLen(len(t.rows))
	t.selectID(keep)
}

// selectID puts the cursor on the row named id, now or once the first list is in.
func (t *tablePane[T]) selectID(id string) {
	if !t.loaded {
		t.want = id
		return
	}
	for i, r := range t.rows {
		if t.rowID(r) == id {
			t.nav.selectIndex(i)
		}
	}
}

func (t *tablePane[T]) view() string {
	th := t.env.theme
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
		lines = append(lines, rowLine(th, t.rowCells(t.rows[i]), widths, i == t.nav.cursor, t.w))
	}
	return block(lines, t.w, t.h)
}
