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
	}
}

type projectRow struct {
	p engine.Project
	// hay is what the filter searches (slug, name, owner, status), lower-cased once per load
	// rather than per keystroke.
	hay []string
}

// projectsPane is the fleet: one row per live project.
type projectsPane struct {
	env     *env
	keys    projectsKeys
	actions actionList
	w, h    int

	loaded bool
	// rows stay sorted by slug whatever the sort shown, for slug lookups and completion.
	rows []projectRow
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
	flt := p.filter.listKeys()
	short := append(append(acts, flt...), k.Sort)
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
	return p.rows[p.shown[p.nav.cursor]].p, true
}

// selectID puts the cursor on a project when the filter shows it.
func (p *projectsPane) selectID(id string) {
	for i, ri := range p.shown {
		if p.rows[ri].p.ID == id {
			p.nav.selectIndex(i)
			return
		}
	}
}

// bySlug finds a listed project by slug or id.
func (p *projectsPane) bySlug(ref string) (engine.Project, bool) {
	i, found := slices.BinarySearchFunc(p.rows, ref, func(r projectRow, s string) int { return cmp.Compare(r.p.Slug, s) })
	if found {
		return p.rows[i].p, true
	}
	for _, r := range p.rows {
		if r.p.ID == ref {
			return r.p, true
		}
	}
	return engine.Project{}, false
}

// slugsWithPrefix lists up to limit slugs starting with prefix, for completion.
func (p *projectsPane) slugsWithPrefix(prefix string, limit int) []string {
	i, _ := slices.BinarySearchFunc(p.rows, prefix, func(r projectRow, s string) int { return cmp.Compare(r.p.Slug, s) })
	var out []string
	for ; i < len(p.rows) && len(out) < limit && strings.HasPrefix(p.rows[i].p.Slug, prefix); i++ {
		out = append(out, p.rows[i].p.Slug)
	}
	return out
}

// setProjects replaces the list after a load, keeping the cursor on the same project. It
// returns the project that most recently went into hibernated since the previous load.
func (p *projectsPane) setProjects(ps []engine.Project) {
	keep, _ := p.selected()
	old := make(map[string]engine.Project, len(p.rows))
	for _, r := range p.rows {
		old[r.p.ID] = r.p
	}
	rows := make([]projectRow, len(ps))
	counts := map[engine.ProjectStatus]int{}
	live := make(map[string]bool, len(ps))
	for i, pr := range ps {
		rows[i] = projectRow{p: pr, hay: []string{
			strings.ToLower(pr.Slug), strings.ToLower(pr.Name), strings.ToLower(pr.Owner), string(pr.Status),
		}}
		counts[pr.Status]++
		live[pr.ID] = true
		// A project whose record changed may have started or stopped containers.
		o, seen := old[pr.ID]
		if seen && (o.Status != pr.Status || !o.UpdatedAt.Equal(pr.UpdatedAt)) {
			p.invalidate(pr.ID)
		}
	}
	for id := range p.usage {
		if !live[id] {
			delete(p.usage, id)
		}
	}
	slices.SortFunc(rows, func(a, b projectRow) int {
		return cmp.Or(cmp.Compare(a.p.Slug, b.p.Slug), cmp.Compare(a.p.ID, b.p.ID))
	})
	p.rows, p.counts, p.loaded = rows, counts, true
	p.resort()
	p.refilter(keep.ID)
}

// refilter rebuilds the shown rows from the sorted order; the cursor stays on keepID when it
// still passes.
func (p *projectsPane) refilter(keepID string) {
	p.shown = p.shown[:0]
	for _, i := range p.order {
		if p.filter.flt.match(p.rows[i].hay...) {
			p.shown = append(p.shown, i)
		}
	}
	p.nav.setLen(len(p.shown))
	if keepID == "" {
		return
	}
	for i, ri := range p.shown {
		if p.rows[ri].p.ID == keepID {
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
		r := p.rows[i]
		if u, ok := p.usage[r.p.ID]; !ok || u.stale {
			want = append(want, r.p)
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
	th := p.env.theme
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
	for vi := start; vi < end; vi++ {
		r := p.rows[p.shown[vi]]
		lines = append(lines, rowLine(th, p.cells(r.p), widths, vi == p.nav.cursor, p.w))
	}
	return block(lines, p.w, p.h)
}

func (p *projectsPane) cells(pr engine.Project) []cell {
	th := p.env.theme
	name := txt(pr.Slug, th.Value)
	if pr.Name != "" && pr.Name != pr.Slug {
		name = cell{{text: pr.Name, style: th.Value}, {text: "  " + pr.Slug, style: th.Muted}}
	}
	containers, snaps := txt("…", th.Muted), txt("…", th.Muted)
	if u, ok := p.usage[pr.ID]; ok {
		if u.err != nil {
			containers, snaps = txt("?", th.Error), txt("?", th.Error)
		} else {
			containers = txt(fmt.Sprintf("%d/%d", u.running, u.total), th.Value)
			snaps = txt(fmt.Sprintf("%d/%d", u.manual, engine.MaxManualSnapshots), th.Value)
		}
	}
	return []cell{
		name,
		p.statusCell(pr),
		containers,
		txt(ago(p.env.now, pr.LastActivity), th.Value),
		p.hibernatesIn(pr),
		snaps,
	}
}

// statusCell is the project's status, "start failed" (styled as failed) for an active project
// whose last start failed: "active" would read as all is well.
func (p *projectsPane) statusCell(pr engine.Project) cell {
	th := p.env.theme
	if engine.StartFailed(pr) {
		return txt(engine.DisplayStatus(pr), th.Status(engine.StatusFailed))
	}
	return txt(string(pr.Status), th.Status(pr.Status))
}

// hibernatesIn is when the sweep will take an active project, by the idle timeout.
func (p *projectsPane) hibernatesIn(pr engine.Project) cell {
	th := p.env.theme
	if pr.Status != engine.StatusActive || pr.LastActivity.IsZero() || p.env.idle <= 0 {
		return txt("-", th.Muted)
	}
	left := pr.LastActivity.Add(p.env.idle).Sub(p.env.now)
	if left <= 0 {
		return txt("due", th.Status(engine.StatusHibernating))
	}
	return txt(span(left.Truncate(time.Second)), th.Value)
}
