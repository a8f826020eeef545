package ui

import (
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// The Logs pane's filter mode (`&`, as in less): only the lines that match are shown, and
// scrolling and search walk those. The pane keeps the seqs of the lines shown and of the
// search's matches in two indexes, brought up to date as lines arrive and leave the ring, so
// neither a frame nor n/N scans the log.

// seqIndex is the seqs of some held lines, oldest first.
type seqIndex struct{ seqs []int64 }

func (x *seqIndex) len() int         { return len(x.seqs) }
func (x *seqIndex) at(i int) int64   { return x.seqs[i] }
func (x *seqIndex) add(seq int64)    { x.seqs = append(x.seqs, seq) }
func (x *seqIndex) reset()           { x.seqs = x.seqs[:0] }
func (x *seqIndex) prune(from int64) { x.seqs = x.seqs[x.firstFrom(from):] }

// firstFrom is the index of the first seq >= seq (len when none).
func (x *seqIndex) firstFrom(seq int64) int {
	return sort.Search(len(x.seqs), func(i int) bool { return x.seqs[i] >= seq })
}

// lastUpTo is the index of the last seq <= seq (-1 when none).
func (x *seqIndex) lastUpTo(seq int64) int {
	return sort.Search(len(x.seqs), func(i int) bool { return x.seqs[i] > seq }) - 1
}

func newLogsFilter(e *env) filterBox {
	f := newFilterBox(e)
	f.keys.Filter = key.NewBinding(key.WithKeys("&"), key.WithHelp("&", "filter"))
	f.input.Prompt = "&"
	f.input.Placeholder = "show only lines matching (regex or text; ! inverts)"
	return f
}

// filtering tells whether the filter hides lines.
func (l *logsPane) filtering() bool { return l.filter.flt.active() }

// passes tells whether a held line is shown.
func (l *logsPane) passes(ln logLine) bool {
	if !l.filtering() {
		return true
	}
	return !ln.marker && l.filter.flt.match(strings.ToLower(ln.text))
}

// hit tells whether a shown line matches the search.
func (l *logsPane) hit(ln logLine) bool {
	return l.re != nil && !ln.marker && l.re.MatchString(ln.text)
}

// index takes the lines from seq from on into the indexes, and forgets the ones that left the
// ring. Called after lines were added (or the ring was cleared).
func (l *logsPane) index(from int64) {
	start := l.ring.start()
	for s := max(from, start); s < l.ring.end(); s++ {
		ln := l.ring.at(s)
		if !l.passes(ln) {
			continue
		}
		if l.filtering() {
			l.shown.add(s)
		}
		if l.hit(ln) {
			l.hits.add(s)
		}
	}
	l.shown.prune(start)
	l.hits.prune(start)
	if l.hasCur && l.cur < start {
		l.hasCur = false
	}
}

// reindex builds the indexes over again, after the filter or the search changed.
func (l *logsPane) reindex() {
	l.shown.reset()
	l.hits.reset()
	l.index(l.ring.start())
	if l.hasCur {
		if i := l.hits.firstFrom(l.cur); i == l.hits.len() || l.hits.at(i) != l.cur {
			l.hasCur = false
		}
	}
}

// The lines shown are numbered 0..shownLen()-1, oldest first: every held line, or the ones
// that pass the filter.

func (l *logsPane) shownLen() int {
	if l.filtering() {
		return l.shown.len()
	}
	return l.ring.len()
}

// seqAt is the seq of shown line i.
func (l *logsPane) seqAt(i int) int64 {
	if l.filtering() {
		return l.shown.at(i)
	}
	return l.ring.start() + int64(i)
}

// posOf is the position of the last shown line at or before seq (-1 when none is).
func (l *logsPane) posOf(seq int64) int {
	if l.filtering() {
		return l.shown.lastUpTo(seq)
	}
	return int(min(max(seq-l.ring.start(), -1), int64(l.ring.len()-1)))
}

// bottomPos is the position of the line at the bottom of the screen.
func (l *logsPane) bottomPos() int {
	if l.follow {
		return l.shownLen() - 1
	}
	return max(l.posOf(l.bottom), min(0, l.shownLen()-1))
}

// updateFilter gives the filter a key or a paste while it is typed.
func (l *logsPane) updateFilter(msg tea.Msg) tea.Cmd {
	cmd, changed := l.filter.update(msg)
	if changed {
		l.reindex()
	}
	return cmd
}

// escKey: esc clears a search, then a filter, before it leaves the pane.
func (l *logsPane) escKey() (keyBinding, bool) {
	if l.query != "" {
		return l.keys.Clear, true
	}
	return l.filter.escKey()
}

// takesEsc tells that esc has a search or a filter to clear.
func (l *logsPane) takesEsc() bool {
	_, ok := l.escKey()
	return ok
}

// clearOne is esc on the pane: the search goes first, then the filter.
func (l *logsPane) clearOne() {
	switch {
	case l.query != "":
		l.setQuery("")
	case l.filter.set(""):
		l.reindex()
	}
}
