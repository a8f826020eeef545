package ui

import (
	"cmp"
	"slices"

	"github.com/sailtui/sailtui/engine"
)

// sortBy names the Projects columns o cycles through, in that order.
type sortBy int

const (
	sortName sortBy = iota
	sortStatus
	sortActivity
	sortHibernates
	sortSnapshots
	sortCount
)

// projectSort is the Projects pane's order. desc is meant as the column reads: ↑ means the
// values shown grow down the list (ages too: 3m ago, then 1h ago).
type projectSort struct {
	by   sortBy
	desc bool
}

// next is the following column in its most useful direction: the fullest timelines first for
// snapshots, the smallest value first for the rest (soonest to hibernate, most recently used).
func (s projectSort) next() projectSort {
	by := (s.by + 1) % sortCount
	return projectSort{by: by, desc: by == sortSnapshots}
}

// column is the index in projectColumns the sort is on.
func (s projectSort) column() int {
	return [...]int{sortName: 0, sortStatus: 1, sortActivity: 3, sortHibernates: 4, sortSnapshots: 5}[s.by]
}

// rankKey is one row's place under a sort. Rows without a value (never active, no countdown,
// usage not fetched yet) go last in either direction: reversing should not bury the rows that
// have one under those that do not.
type rankKey struct {
	missing bool
	v       int64
}

func (p *projectsPane) setSort(s projectSort) {
	keep, _ := p.selected()
	p.sort = s
	p.resort()
	p.refilter(keep.ID)
}

// resort rebuilds order for the current sort. Ties keep the slug order in both directions.
func (p *projectsPane) resort() {
	p.resorts++
	p.order = slices.Grow(p.order[:0], len(p.rows))[:len(p.rows)]
	for i := range p.order {
		p.order[i] = i
	}
	if p.sort.by == sortName {
		// rows are already in slug order.
		if p.sort.desc {
			slices.Reverse(p.order)
		}
		return
	}
	keys := make([]rankKey, len(p.rows))
	for i := range p.rows {
		keys[i] = p.rank(&p.rows[i])
	}
	slices.SortFunc(p.order, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		switch {
		case ka.missing && kb.missing:
			return cmp.Compare(a, b)
		case ka.missing:
			return 1
		case kb.missing:
			return -1
		}
		c := cmp.Compare(ka.v, kb.v)
		if p.sort.desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a, b))
	})
}

func (p *projectsPane) rank(r *projectRow) rankKey {
	status := p.tables.status.get(r.status)
	switch p.sort.by {
	case sortStatus:
		return rankKey{v: int64(statusRank(status))}
	case sortActivity:
		// Ascending age is descending time.
		return rankKey{missing: r.lastActivity == 0, v: -r.lastActivity}
	case sortHibernates:
		// The countdown is LastActivity + idle - now; with one idle timeout for all, ordering by
		// LastActivity is the same order and does not go stale as the clock moves.
		counts := status == engine.StatusActive && r.lastActivity != 0 && p.env.idle > 0
		return rankKey{missing: !counts, v: r.lastActivity}
	case sortSnapshots:
		u, ok := p.usage[r.id]
		return snapshotRank(u, ok)
	}
	return rankKey{}
}

// snapshotRank is a row's place by manual snapshots. Usage is fetched for the rows on screen
// only, so in a long list this ranks the rows seen so far, ahead of the others.
func snapshotRank(u usage, ok bool) rankKey {
	if !ok || u.err != nil {
		return rankKey{missing: true}
	}
	return rankKey{v: int64(u.manual)}
}

// statusRank orders states as the header counts them.
func statusRank(s engine.ProjectStatus) int {
	if i := slices.Index(countOrder, s); i >= 0 {
		return i
	}
	return len(countOrder)
}
