package ui

import (
	"slices"
	"strings"

	"github.com/sailtui/sailtui/theme"
)

// column describes one table column. Fixed columns have min == max; max 0 means the column takes
// whatever width is left.
type column struct {
	title    string
	min, max int
	// drop orders which columns go first when the terminal is too narrow (highest first);
	// 0 means the column is never dropped.
	drop int
	// fit keeps a bounded column no wider than its widest cell (and title) of the rows
	// listed, so width it would only pad goes to the columns that need it (a URL).
	fit bool
}

const (
	colGap    = 2
	markerW   = 2
	selMarker = "> "
)

// layout gives each column its width for a table w columns wide; a dropped column gets 0.
func layout(cols []column, w int) []int {
	widths := make([]int, len(cols))
	shown := make([]bool, len(cols))
	for i := range cols {
		shown[i] = true
	}
	avail := w - markerW
	need := func() int {
		n, k := 0, 0
		for i, c := range cols {
			if shown[i] {
				n += c.min
				k++
			}
		}
		return n + colGap*max(k-1, 0)
	}
	for need() > avail {
		victim := -1
		for i, c := range cols {
			if shown[i] && c.drop > 0 && (victim < 0 || c.drop > cols[victim].drop) {
				victim = i
			}
		}
		if victim < 0 {
			break
		}
		shown[victim] = false
	}
	extra := avail - need()
	for i, c := range cols {
		if shown[i] {
			widths[i] = c.min
		}
	}
	// Flexible columns share the extra width evenly, bounded ones up to their max, so a wide
	// terminal widens names and URLs rather than padding between short columns.
	for extra > 0 {
		var grow []int
		for i, c := range cols {
			if shown[i] && (c.max == 0 || widths[i] < c.max) {
				grow = append(grow, i)
			}
		}
		if len(grow) == 0 {
			break
		}
		share := max(extra/len(grow), 1)
		for _, i := range grow {
			g := min(share, extra)
			if cols[i].max > 0 {
				g = min(g, cols[i].max-widths[i])
			}
			widths[i] += g
			extra -= g
		}
	}
	return widths
}

// fitColumns bounds each fit column by the widest of its cells (widest, by column) and its
// title, within the column's own min and max.
func fitColumns(cols []column, widest []int) []column {
	out := slices.Clone(cols)
	for i, c := range out {
		if !c.fit {
			continue
		}
		w := max(widest[i], width(c.title), c.min)
		if c.max > 0 {
			w = min(w, c.max)
		}
		out[i].max = w
	}
	return out
}

// headerLine renders the column titles.
func headerLine(th *theme.Theme, cols []column, widths []int, w int) string {
	return sortedHeaderLine(th, cols, widths, w, -1, false)
}

// sortedHeaderLine renders the column titles with an arrow on column sortCol (none when < 0).
// The arrow sits in the gap before the title: the narrowest layout has no column to spare for
// it, and a title cut to make room would read worse than one with an arrow in front.
func sortedHeaderLine(th *theme.Theme, cols []column, widths []int, w, sortCol int, desc bool) string {
	cells := make([]cell, len(cols))
	for i, c := range cols {
		cells[i] = txt(c.title, &th.TableHeader)
	}
	arrow := "↑"
	if desc {
		arrow = "↓"
	}
	return joinRow(th, cells, widths, false, w, sortCol, " "+th.TableHeader.Render(arrow))
}

// rowLine renders one table row, w columns wide. The selected row carries a marker, so it stays
// visible when NO_COLOR leaves the selection style plain.
func rowLine(th *theme.Theme, cells []cell, widths []int, selected bool, w int) string {
	return joinRow(th, cells, widths, selected, w, -1, "")
}

// joinRow lays cells out in their widths; the gap before column mark (two columns wide, like
// the selection marker) is replaced by gap.
func joinRow(th *theme.Theme, cells []cell, widths []int, selected bool, w, mark int, gap string) string {
	var b strings.Builder
	lead := strings.Repeat(" ", markerW)
	if selected {
		lead = selMarker
	}
	// Cells render to exactly their width, so the line's width is known without measuring it.
	used := markerW
	first := true
	for i, c := range cells {
		if i >= len(widths) || widths[i] == 0 {
			continue
		}
		sep := strings.Repeat(" ", colGap)
		if first {
			sep = lead
		} else {
			used += colGap
		}
		if i == mark {
			sep = gap
		}
		b.WriteString(sep)
		first = false
		b.WriteString(c.render(widths[i], !selected))
		used += widths[i]
	}
	if first {
		b.WriteString(lead)
	}
	line := b.String()
	switch {
	case used < w:
		line += strings.Repeat(" ", w-used)
	case used > w:
		line = fit(line, w)
	}
	if selected {
		return th.Selected.Render(line)
	}
	return line
}
