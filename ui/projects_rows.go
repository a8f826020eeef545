package ui

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// projectRow is one project as the list keeps it: what the table shows and the actions look
// at, nothing more. A fleet of 100,000 is held as 100,000 of these, so statuses and operation
// kinds are small numbers into a shared table, times are integers, and strings that most rows
// leave empty cost a header only. The whole engine.Project is rebuilt for the selected row on
// demand (project).
type projectRow struct {
	id, slug, name string
	// owner is interned: a fleet has a few owners, not one per project.
	owner string
	// lname is the name lower-cased for the filter, "" when the name is lower-case already; it
	// is made by the first filter that looks at the row (lowered), not by the load: at 100k
	// projects lower-casing every name was a quarter of the time the list took to build.
	lname string
	// reason, hibSnap and opID are empty for most projects.
	reason, hibSnap, opID string
	// lastActivity, updated, heartbeat and keepAlive (until when) are Unix microseconds (0:
	// never), the stores' precision.
	lastActivity, updated, heartbeat, keepAlive int64
	status                                      uint8
	opKind                                      uint8
	lowered                                     bool
}

// interned maps the few distinct values of a column to small numbers, in order of first sight.
type interned[T ~string] struct {
	vals []T
	idx  map[T]uint8
}

func (t *interned[T]) id(v T) uint8 {
	if i, ok := t.idx[v]; ok {
		return i
	}
	if t.idx == nil {
		t.idx = map[T]uint8{}
	}
	if len(t.vals) >= 255 {
		// More than 255 kinds is not a fleet's statuses: the rest read as unknown ("").
		return 255
	}
	t.vals = append(t.vals, v)
	t.idx[v] = uint8(len(t.vals) - 1)
	return uint8(len(t.vals) - 1)
}

func (t *interned[T]) get(i uint8) T {
	if int(i) < len(t.vals) {
		return t.vals[i]
	}
	return ""
}

// rowTables are the shared tables of a projects pane's rows.
type rowTables struct {
	status interned[engine.ProjectStatus]
	opKind interned[engine.OpKind]
	owners map[string]string
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func (t *rowTables) row(p engine.Project) projectRow {
	if t.owners == nil {
		t.owners = map[string]string{}
	}
	owner, ok := t.owners[p.Owner]
	if !ok {
		owner = strings.Clone(p.Owner)
		t.owners[owner] = owner
	}
	r := projectRow{
		id: p.ID, slug: p.Slug, name: p.Name, owner: owner,
		reason: p.StatusReason, hibSnap: p.HibernationSnapshot, opID: p.OpID,
		lastActivity: micros(p.LastActivity), updated: micros(p.UpdatedAt), heartbeat: micros(p.OpHeartbeat),
		keepAlive: micros(p.KeepAliveUntil),
		status:    t.status.id(p.Status), opKind: t.opKind.id(p.OpKind),
	}
	return r
}

// project rebuilds the engine's view of the row: what the actions and the panes opened on it
// need (times at the stores' microsecond precision).
func (t *rowTables) project(r *projectRow) engine.Project {
	return engine.Project{
		ID: r.id, Slug: r.slug, Name: r.name, Owner: r.owner,
		Status: t.status.get(r.status), StatusReason: r.reason,
		LastActivity: fromMicros(r.lastActivity), UpdatedAt: fromMicros(r.updated),
		HibernationSnapshot: r.hibSnap, KeepAliveUntil: fromMicros(r.keepAlive),
		OpID: r.opID, OpKind: t.opKind.get(r.opKind), OpHeartbeat: fromMicros(r.heartbeat),
	}
}

// matches reports whether f lets r through; it searches slug, name, owner and status,
// lower-cased.
func (t *rowTables) matches(f filter, r *projectRow) bool {
	if !f.active() {
		return true
	}
	if !r.lowered {
		if l := strings.ToLower(r.name); l != r.name {
			r.lname = l
		}
		r.lowered = true
	}
	name := r.name
	if r.lname != "" {
		name = r.lname
	}
	return f.match(strings.ToLower(r.slug), name, strings.ToLower(r.owner), string(t.status.get(r.status)))
}

func compareRows(a, b *projectRow) int {
	return cmp.Or(cmp.Compare(a.slug, b.slug), cmp.Compare(a.id, b.id))
}

// setProjects replaces the list after a full load, keeping the cursor on the same project.
func (p *projectsPane) setProjects(ps []engine.Project) {
	keep, _ := p.selected()
	old := p.rows
	rows := make([]projectRow, len(ps))
	counts := map[engine.ProjectStatus]int{}
	for i, pr := range ps {
		rows[i] = p.tables.row(pr)
		counts[pr.Status]++
	}
	slices.SortFunc(rows, func(a, b projectRow) int { return compareRows(&a, &b) })
	// A project whose record changed may have started or stopped containers; one no longer
	// listed loses its usage.
	live := make(map[string]bool, len(old))
	for i := range rows {
		r := &rows[i]
		if j, ok := p.find(old, r); ok && rowChanged(&old[j], r) {
			p.invalidate(r.id)
		}
		if len(p.usage) > 0 {
			live[r.id] = true
		}
	}
	for id := range p.usage {
		if !live[id] {
			delete(p.usage, id)
		}
	}
	p.rows, p.counts, p.loaded = rows, counts, true
	p.resort()
	p.refilter(keep.ID)
}

// applyChanges merges an incremental read into the list: changed projects are updated in
// place, new ones added, deleted ones dropped. It reports whether anything the list shows
// changed; when nothing did, nothing is re-sorted or re-filtered.
func (p *projectsPane) applyChanges(ps []engine.Project) bool {
	keep, _ := p.selected()
	var added []projectRow
	removed := false
	changed := false
	for _, pr := range ps {
		r := p.tables.row(pr)
		i, found := p.find(p.rows, &r)
		switch {
		case found && pr.Status == engine.StatusDeleted:
			p.counts[p.tables.status.get(p.rows[i].status)]--
			p.rows[i].id = "" // dropped below
			delete(p.usage, r.id)
			removed, changed = true, true
		case found:
			if !rowChanged(&p.rows[i], &r) {
				continue
			}
			p.counts[p.tables.status.get(p.rows[i].status)]--
			p.counts[pr.Status]++
			p.rows[i] = r
			p.invalidate(r.id)
			changed = true
		case pr.Status != engine.StatusDeleted:
			added = append(added, r)
			p.counts[pr.Status]++
			changed = true
		}
	}
	if !changed {
		return false
	}
	if removed {
		p.rows = slices.DeleteFunc(p.rows, func(r projectRow) bool { return r.id == "" })
	}
	if len(added) > 0 {
		slices.SortFunc(added, func(a, b projectRow) int { return compareRows(&a, &b) })
		p.rows = mergeRows(p.rows, added)
	}
	for s, n := range p.counts {
		if n <= 0 {
			delete(p.counts, s)
		}
	}
	p.resort()
	p.refilter(keep.ID)
	return true
}

// mergeRows merges two slug-sorted lists into a new one.
func mergeRows(a, b []projectRow) []projectRow {
	out := make([]projectRow, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if compareRows(&a[0], &b[0]) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// find is the index of r's project in the slug-sorted rows.
func (p *projectsPane) find(rows []projectRow, r *projectRow) (int, bool) {
	return slices.BinarySearchFunc(rows, r, func(a projectRow, b *projectRow) int { return compareRows(&a, b) })
}

// rowChanged reports whether the stored record moved on: a change the row shows, or an update
// that may have started or stopped containers.
func rowChanged(a, b *projectRow) bool {
	x, y := *a, *b
	x.lname, x.lowered, y.lname, y.lowered = "", false, "", false // the filter's cache
	return x != y
}
