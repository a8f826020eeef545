package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// projectsKeys are the Projects pane's keys.
type projectsKeys struct {
	navKeys
	Sort    key.Binding
	Reverse key.Binding
	Open    key.Binding
	// Actions on the selected project.
	Timeline  key.Binding
	Describe  key.Binding
	StartStop key.Binding
	Hibernate key.Binding
	Wake      key.Binding
	History   key.Binding
	KeepAlive key.Binding
}

func newProjectsKeys() projectsKeys {
	return projectsKeys{
		navKeys:   newNavKeys(),
		Sort:      key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "sort")),
		Reverse:   key.NewBinding(key.WithKeys("O"), key.WithHelp("O", "reverse")),
		Open:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "containers")),
		Timeline:  key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "timeline")),
		Describe:  key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "describe")),
		StartStop: key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "start/stop")),
		Hibernate: key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "hibernate")),
		Wake:      key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wake")),
		History:   key.NewBinding(key.WithKeys("H"), key.WithHelp("H", "history")),
		KeepAlive: key.NewBinding(key.WithKeys("K"), key.WithHelp("K", "keep alive")),
	}
}

// projectsPane is the fleet: one row per live project.
type projectsPane struct {
	env     *env
	keys    projectsKeys
	actions actionList
	w, h    int

	loaded bool
	// rows stay sorted by slug whatever the sort shown, for slug lookups, completion and
	// merging incremental reads.
	rows   []projectRow
	tables rowTables
	// order is rows in the chosen sort (indexes into rows); shown is order filtered. Both are
	// rebuilt only when the data, the sort or the filter change, never per frame or key.
	order  []int
	shown  []int
	sort   projectSort
	counts map[engine.ProjectStatus]int
	nav    listNav
	// resorts counts order rebuilds, so tests can hold the cache to its promise.
	resorts int

	filter filterBox
	// drawn holds the rows on screen as last drawn, by project id.
	drawn map[string]drawnRow

	// usage is fetched for the rows on screen only; see usageCmd.
	usage     map[string]usage
	usageBusy bool
	inFlight  map[string]bool
	// dirtyInFlight remembers rows invalidated while their fetch was running, so the older
	// answer is not taken as fresh.
	dirtyInFlight map[string]bool
}

var projectColumns = []column{
	{title: "NAME/SLUG", min: 12},
	{title: "STATUS", min: 11, max: 11},
	{title: "CONTAINERS", min: 10, max: 10, drop: 1},
	{title: "LAST ACTIVITY", min: 13, max: 13, drop: 3},
	{title: "HIBERNATES IN", min: 13, max: 13, drop: 2},
	{title: "SNAPSHOTS", min: 9, max: 9, drop: 4},
}

func newProjectsPane(e *env) *projectsPane {
	p := &projectsPane{
		env:           e,
		keys:          newProjectsKeys(),
		filter:        newFilterBox(e),
		counts:        map[engine.ProjectStatus]int{},
		usage:         map[string]usage{},
		inFlight:      map[string]bool{},
		dirtyInFlight: map[string]bool{},
	}
	k := p.keys
	p.actions = newActions(e.readOnly,
		action{key: k.Open, why: p.whySelected, do: p.show(kindContainers)},
		action{key: k.Timeline, why: p.whySelected, do: p.show(kindTimeline)},
		action{key: k.Describe, why: p.whySelected, do: p.show(kindDescribe)},
		action{key: k.StartStop, mutates: true, why: p.whyStartStop, label: p.startStopLabel, do: p.startStop},
		action{key: k.Hibernate, mutates: true, why: p.whyHibernate, do: p.hibernate},
		action{key: k.Wake, mutates: true, why: p.whyWake, do: p.wake},
		action{key: k.History, why: p.whySelected, do: p.show(kindHistory), extra: true},
		action{key: k.KeepAlive, mutates: true, why: p.whyKeepAlive, do: p.keepAlive, extra: true},
	)
	return p
}

func (p *projectsPane) kind() paneKind { return kindProjects }
func (p *projectsPane) crumb() string  { return "Projects" }
func (p *projectsPane) open() tea.Cmd  { return nil }
func (p *projectsPane) close()         {}

func (p *projectsPane) project() (engine.Project, bool) { return p.selected() }

func (p *projectsPane) info() string {
	if !p.loaded {
		return "loading…"
	}
	s := fmt.Sprintf("%d", len(p.rows))
	if p.filter.flt.active() {
		s = fmt.Sprintf("%d of %d", len(p.shown), len(p.rows))
		s += "  " + p.filter.flt.describe()
	}
	// A failed project needs an operator: the selected one's way on is in sight.
	if sel, ok := p.selected(); ok && sel.Status == engine.StatusFailed {
		s += "  " + sel.Slug + " failed; next: " + engine.NextStep(sel) + "; why: " + sel.StatusReason
	} else if ok && engine.StartFailed(sel) {
		s += "  " + sel.Slug + ": " + sel.StatusReason + "; enter shows its containers, l their logs"
	}
	return s
}

func (p *projectsPane) setSize(w, h int) {
	p.w, p.h = w, h
	p.nav.setHeight(h - 1) // the column header takes a line
	p.filter.setWidth(w)
}

// inputLine is the filter while it is typed.
func (p *projectsPane) inputLine() (string, *tea.Cursor, bool) { return p.filter.inputLine() }

// escKey: esc clears the filter applied.
func (p *projectsPane) escKey() (keyBinding, bool) { return p.filter.escKey() }

// paste goes into the filter while it is typed.
func (p *projectsPane) paste(msg tea.PasteMsg) tea.Cmd {
	if !p.filter.editing {
		return nil
	}
	return p.updateFilter(msg)
}

func (p *projectsPane) keyMap() help.KeyMap {
	k := p.keys
	if p.filter.editing {
		return p.filter.editKeys()
	}
	acts := p.actions.available()
	core, extra := p.actions.split()
	flt := p.filter.listKeys()
	// History and keep-alive come after the filter and the sort: a narrow screen drops them first.
	short := append(append(append(core, flt...), k.Sort), extra...)
	list := append(flt, k.Sort, k.Reverse)
	return staticKeys{short: short, full: [][]keyBinding{k.bindings(), acts, list}}
}

func (p *projectsPane) update(msg tea.KeyPressMsg) tea.Cmd {
	if p.filter.editing {
		return p.updateFilter(msg)
	}
	if p.keys.handle(msg, &p.nav) {
		return nil
	}
	if cmd, ok := p.actions.handle(msg); ok {
		return cmd
	}
	switch {
	case key.Matches(msg, p.filter.keys.Filter):
		return p.filter.start()
	case key.Matches(msg, p.filter.keys.Clear):
		if p.filter.clearable() {
			p.setFilter("")
		}
	case key.Matches(msg, p.keys.Sort):
		p.setSort(p.sort.next())
	case key.Matches(msg, p.keys.Reverse):
		p.setSort(projectSort{by: p.sort.by, desc: !p.sort.desc})
	}
	return nil
}

// updateFilter gives the filter a key or a paste while it is typed, and applies what it holds.
func (p *projectsPane) updateFilter(msg tea.Msg) tea.Cmd {
	keep, _ := p.selected()
	cmd, changed := p.filter.update(msg)
	if changed {
		p.refilter(keep.ID)
	}
	return cmd
}

func (p *projectsPane) setFilter(raw string) {
	keep, _ := p.selected()
	if p.filter.set(raw) {
		p.refilter(keep.ID)
	}
}

// selected is the project under the cursor.
func (p *projectsPane) selected() (engine.Project, bool) {
	if p.nav.cursor < 0 || p.nav.cursor >= len(p.shown) {
		return engine.Project{}, false
	}
	return p.tables.project(&p.rows[p.shown[p.nav.cursor]]), true
}

// selectID puts the cursor on a project when the filter shows it.
func (p *projectsPane) selectID(id string) {
	for i, ri := range p.shown {
		if p.rows[ri].id == id {
			p.nav.selectIndex(i)
			return
		}
	}
}

// bySlug finds a listed project by slug or id.
func (p *projectsPane) bySlug(ref string) (engine.Project, bool) {
	i, found := slices.BinarySearchFunc(p.rows, ref, func(r projectRow, s string) int { return cmp.Compare(r.slug, s) })
	if found {
		return p.tables.project(&p.rows[i]), true
	}
	for i := range p.rows {
		if p.rows[i].id == ref {
			return p.tables.project(&p.rows[i]), true
		}
	}
	return engine.Project{}, false
}

// slugsWithPrefix lists up to limit slugs starting with prefix, for completion.
func (p *projectsPane) slugsWithPrefix(prefix string, limit int) []string {
	i, _ := slices.BinarySearchFunc(p.rows, prefix, func(r projectRow, s string) int { return cmp.Compare(r.slug, s) })
	var out []string
	for ; i < len(p.rows) && len(out) < limit && strings.HasPrefix(p.rows[i].slug, prefix); i++ {
		out = append(out, p.rows[i].slug)
	}
	return out
}

// refilter rebuilds the shown rows from the sorted order; the cursor stays on keepID when it
// still passes.
func (p *projectsPane) refilter(keepID string) {
	p.shown = p.shown[:0]
	for _, i := range p.order {
		if p.tables.matches(p.filter.flt, &p.rows[i]) {
			p.shown = append(p.shown, i)
		}
	}
	p.nav.setLen(len(p.shown))
	if keepID == "" {
		return
	}
	for i, ri := range p.shown {
		if p.rows[ri].id == keepID {
			p.nav.selectIndex(i)
			return
		}
	}
}

// invalidate marks a project's usage for refetching; the old value stays on screen meanwhile.
func (p *projectsPane) invalidate(id string) {
	if p.inFlight[id] {
		p.dirtyInFlight[id] = true
	}
	if u, ok := p.usage[id]; ok {
		u.stale = true
		p.usage[id] = u
	}
}

func (p *projectsPane) invalidateAll() {
	for id := range p.usage {
		p.invalidate(id)
	}
	for id := range p.inFlight {
		p.dirtyInFlight[id] = true
	}
}

// usageLoadedMsg carries the usage of some projects.
type usageLoadedMsg struct{ got map[string]usage }

// usageCmd fetches usage for the rows on screen that lack a fresh value; one fetch runs at a
// time and the root asks again after every update, so scrolling fast costs one batch per
// screen the operator actually stops at, not one per row passed.
func (p *projectsPane) usageCmd() tea.Cmd {
	if p.usageBusy || !p.loaded {
		return nil
	}
	start, end := p.nav.window()
	var want []engine.Project
	for _, i := range p.shown[start:end] {
		if u, ok := p.usage[p.rows[i].id]; !ok || u.stale {
			want = append(want, p.tables.project(&p.rows[i]))
		}
	}
	if len(want) == 0 {
		return nil
	}
	p.usageBusy = true
	for _, pr := range want {
		p.inFlight[pr.ID] = true
	}
	ctx, src := p.env.ctx, p.env.src
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		return usageLoadedMsg{got: fetchUsage(ctx, src, want)}
	}
}

// applyUsage stores fetched usage and returns the first error among it.
func (p *projectsPane) applyUsage(msg usageLoadedMsg) error {
	p.usageBusy = false
	var first error
	moved := false
	for id, u := range msg.got {
		u.stale = p.dirtyInFlight[id]
		if old, ok := p.usage[id]; snapshotRank(old, ok) != snapshotRank(u, true) {
			moved = true
		}
		p.usage[id] = u
		if u.err != nil && first == nil {
			first = u.err
		}
	}
	clear(p.inFlight)
	clear(p.dirtyInFlight)
	if moved && p.sort.by == sortSnapshots {
		keep, _ := p.selected()
		p.resort()
		p.refilter(keep.ID)
	}
	return first
}

func (p *projectsPane) refresh(force bool, changed map[string]bool) tea.Cmd {
	if force {
		p.invalidateAll()
	}
	for id := range changed {
		p.invalidate(id)
	}
	return nil // the root reloads the list itself; usage follows through usageCmd
}

func (p *projectsPane) view() string {
	th := &p.env.theme
	widths := layout(projectColumns, p.w)
	lines := make([]string, 0, p.h)
	lines = append(lines, sortedHeaderLine(th, projectColumns, widths, p.w, p.sort.column(), p.sort.desc))
	switch {
	case !p.loaded:
		lines = append(lines, th.Muted.Render("  loading projects…"))
	case len(p.rows) == 0:
		lines = append(lines, th.Muted.Render("  no projects yet"))
		// Where to go from an empty fleet: the console creates none itself.
		lines = append(lines, th.Hint.Render("  create one from a directory: sailtui project create NAME --from DIR"))
		lines = append(lines, th.Hint.Render("  or try the demo workspace: make run (sailtui --demo)"))
	case len(p.shown) == 0:
		lines = append(lines, th.Muted.Render("  no project matches "+p.filter.flt.describe()+"  (esc clears the filter)"))
	}
	start, end := p.nav.window()
	drawn := make(map[string]drawnRow, end-start)
	for vi := start; vi < end; vi++ {
		r := &p.rows[p.shown[vi]]
		cells := p.cells(r)
		// Styling is most of a frame's cost; a row that reads as it did is not styled again,
		// so a frame for one countdown moving costs one row.
		key := rowKey(cells, vi == p.nav.cursor)
		d, ok := p.drawn[r.id]
		if !ok || d.key != key || d.width != p.w {
			d = drawnRow{key: key, width: p.w, line: rowLine(th, cells, widths, vi == p.nav.cursor, p.w)}
		}
		drawn[r.id] = d
		lines = append(lines, d.line)
	}
	p.drawn = drawn
	return block(lines, p.w, p.h)
}

// drawnRow is a row as last drawn: its line, and what it was drawn from.
type drawnRow struct {
	key   string
	width int
	line  string
}

// rowKey is what a row's line is drawn from: its cells' text (each text has one style) and
// whether it is selected.
func rowKey(cells []cell, selected bool) string {
	var b strings.Builder
	if selected {
		b.WriteByte('>')
	}
	for _, c := range cells {
		for _, sg := range c {
			b.WriteString(sg.text)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	return b.String()
}

func (p *projectsPane) cells(r *projectRow) []cell {
	th := &p.env.theme
	name := txt(r.slug, &th.Value)
	if r.name != "" && r.name != r.slug {
		name = cell{{text: r.name, style: &th.Value}, {text: "  " + r.slug, style: &th.Muted}}
	}
	status := p.tables.status.get(r.status)
	containers, snaps := txt("…", &th.Muted), txt("…", &th.Muted)
	if u, ok := p.usage[r.id]; ok {
		if u.err != nil {
			containers, snaps = txt("?", &th.Error), txt("?", &th.Error)
		} else {
			containers = txt(fmt.Sprintf("%d/%d", u.running, u.total), &th.Value)
			snaps = txt(fmt.Sprintf("%d/%d", u.manual, engine.MaxManualSnapshots), &th.Value)
		}
	}
	return []cell{
		name,
		p.statusCell(status, r.reason),
		containers,
		txt(ago(p.env.now, fromMicros(r.lastActivity)), &th.Value),
		p.hibernatesIn(status, fromMicros(r.lastActivity), fromMicros(r.keepAlive)),
		snaps,
	}
}

// statusCell is the project's status, "start failed" (styled as failed) for an active project
// whose last start failed: "active" would read as all is well.
func (p *projectsPane) statusCell(status engine.ProjectStatus, reason string) cell {
	th := &p.env.theme
	if pr := (engine.Project{Status: status, StatusReason: reason}); engine.StartFailed(pr) {
		return txt(engine.DisplayStatus(pr), th.Status(engine.StatusFailed))
	}
	return txt(string(status), th.Status(status))
}

// hibernatesIn is when the sweep will take an active project, by the idle timeout, or until
// when a keep-alive holds it off.
func (p *projectsPane) hibernatesIn(status engine.ProjectStatus, last, keptUntil time.Time) cell {
	th := &p.env.theme
	if status != engine.StatusActive || last.IsZero() || p.env.idle <= 0 {
		return txt("-", &th.Muted)
	}
	if keptUntil.After(p.env.now) {
		return txt("kept to "+keptUntil.In(p.env.loc).Format("15:04"), &th.Value)
	}
	left := last.Add(p.env.idle).Sub(p.env.now)
	if left <= 0 {
		return txt("due", th.Status(engine.StatusHibernating))
	}
	return txt(span(left.Truncate(time.Second)), &th.Value)
}
