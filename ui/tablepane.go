package ui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// tablePane is the common part of the list panes (containers, timeline), after lazydocker's
// SideListPanel[T]: the pane says what its columns are, how a row becomes cells, what to say
// when there are none and which actions it offers; the table keeps the rows, the cursor (on
// the same row across reloads) and the load in flight, handles the navigation keys and
// renders exactly the size it was given; `/` filters the rows by what their cells show. It
// knows nothing of what a row means.
type tablePane[T any] struct {
	env     *env
	navKeys navKeys
	actions actionList
	gate    loadGate

	cols []column
	// laid is cols with the fit columns bounded by the rows of the last load (fitColumns).
	laid []column
	// rowID names a row, so the cursor follows it when a reload moves it.
	rowID    func(T) string
	rowCells func(T) []cell
	// empty is the line shown when the list is in and has no rows; waiting, before it is in.
	empty   func() string
	waiting string
	// noun names a row where no row passes the filter ("no container matches /x").
	noun string

	rows   []T
	loaded bool
	// hay is what the filter searches in each row (the text of its cells, lower-cased), made
	// once per load; shown is the rows that pass it (indexes into rows), which nav walks.
	hay    [][]string
	shown  []int
	filter filterBox
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
	t.filter.setWidth(w)
}

// keyMap is the actions that apply to the selected row and the filter's keys, and the
// navigation keys in full help; while the filter is typed, its own keys.
func (t *tablePane[T]) keyMap() help.KeyMap {
	if t.filter.editing {
		return t.filter.editKeys()
	}
	core, extra := t.actions.split()
	acts := append(append([]keyBinding(nil), core...), extra...)
	flt := t.filter.listKeys()
	short := append(append(core, flt...), extra...)
	return staticKeys{short: short, full: [][]keyBinding{t.navKeys.bindings(), acts, flt}}
}

func (t *tablePane[T]) update(msg tea.KeyPressMsg) tea.Cmd {
	if t.filter.editing {
		return t.updateFilter(msg)
	}
	if t.navKeys.handle(msg, &t.nav) {
		return nil
	}
	if cmd, ok := t.actions.handle(msg); ok {
		return cmd
	}
	switch {
	case key.Matches(msg, t.filter.keys.Filter):
		return t.filter.start()
	case key.Matches(msg, t.filter.keys.Clear):
		if t.filter.set("") {
			t.refilter()
		}
	}
	return nil
}

// updateFilter gives the filter a key or a paste while it is typed.
func (t *tablePane[T]) updateFilter(msg tea.Msg) tea.Cmd {
	cmd, changed := t.filter.update(msg)
	if changed {
		t.refilter()
	}
	return cmd
}

// inputLine is the filter while it is typed.
func (t *tablePane[T]) inputLine() (string, *tea.Cursor, bool) { return t.filter.inputLine() }

// paste goes into the filter while it is typed.
func (t *tablePane[T]) paste(msg tea.PasteMsg) tea.Cmd {
	if !t.filter.editing {
		return nil
	}
	return t.updateFilter(msg)
}

// escKey: esc clears a filter before it goes back.
func (t *tablePane[T]) escKey() (keyBinding, bool) { return t.filter.escKey() }

// refilter rebuilds the shown rows; the cursor stays on its row when that still passes.
func (t *tablePane[T]) refilter() {
	keep, had := t.selected()
	t.pass()
	if had {
		t.selectID(t.rowID(keep))
	}
}

// pass lists the rows that pass the filter.
func (t *tablePane[T]) pass() {
	t.shown = t.shown[:0]
	for i := range t.rows {
		if t.filter.flt.match(t.hay[i]...) {
			t.shown = append(t.shown, i)
		}
	}
	t.nav.setLen(len(t.shown))
}

// count is how many rows there are, "1 of 3 /web" while a filter hides some; noun, when
// given, is counted after the number.
func (t *tablePane[T]) count(noun string) string {
	n := strconv.Itoa(len(t.rows))
	if noun != "" {
		n = plural(len(t.rows), noun)
	}
	if !t.filter.flt.active() {
		return n
	}
	return fmt.Sprintf("%d of %s %s", len(t.shown), n, t.filter.flt.describe())
}

// selected is the row under the cursor.
func (t *tablePane[T]) selected() (T, bool) {
	if !t.loaded || t.nav.cursor >= len(t.shown) {
		var zero T
		return zero, false
	}
	return t.rows[t.shown[t.nav.cursor]], true
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
	t.hay = make([][]string, len(rows))
	widest := make([]int, len(t.cols))
	for i, r := range rows {
		cells := t.rowCells(r)
		t.hay[i] = cellTexts(cells)
		for j := range min(len(cells), len(widest)) {
			widest[j] = max(widest[j], cells[j].width())
		}
	}
	t.laid = fitColumns(t.cols, widest)
	t.pass()
	t.selectID(keep)
}

// cellTexts is the text of each cell, lower-cased, for the filter.
func cellTexts(cells []cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		var b strings.Builder
		for _, sg := range c {
			b.WriteString(sg.text)
		}
		out[i] = strings.ToLower(b.String())
	}
	return out
}

// selectID puts the cursor on the row named id, now or once the first list is in.
func (t *tablePane[T]) selectID(id string) {
	if !t.loaded {
		t.want = id
		return
	}
	for i, ri := range t.shown {
		if t.rowID(t.rows[ri]) == id {
			t.nav.selectIndex(i)
		}
	}
}

func (t *tablePane[T]) view() string {
	th := &t.env.theme
	cols := t.cols
	if t.laid != nil {
		cols = t.laid
	}
	widths := layout(cols, t.w)
	lines := make([]string, 0, t.h)
	lines = append(lines, headerLine(th, cols, widths, t.w))
	switch {
	case t.err != nil && !t.loaded:
		lines = append(lines, th.Error.Render("  "+sanitize(t.err.Error())))
	case !t.loaded:
		lines = append(lines, th.Muted.Render("  "+t.waiting))
	case len(t.rows) == 0:
		lines = append(lines, th.Muted.Render("  "+t.empty()))
	case len(t.shown) == 0:
		lines = append(lines, th.Muted.Render("  no "+t.noun+" matches "+t.filter.flt.describe()+"  (esc clears the filter)"))
	}
	start, end := t.nav.window()
	for i := start; i < end; i++ {
		lines = append(lines, rowLine(th, t.rowCells(t.rows[t.shown[i]]), widths, i == t.nav.cursor, t.w))
	}
	return block(lines, t.w, t.h)
}
