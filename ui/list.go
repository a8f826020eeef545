package ui

// listNav is the cursor and scroll position of a virtualised list: panes render only the rows
// in [offset, offset+height), so a list of 10,000 costs what a screenful costs.
type listNav struct {
	n, height      int
	cursor, offset int
}

func (l *listNav) setLen(n int) {
	l.n = max(n, 0)
	l.clamp()
}

func (l *listNav) setHeight(h int) {
	l.height = max(h, 0)
	l.clamp()
}

func (l *listNav) move(delta int) {
	l.cursor += delta
	l.clamp()
}

func (l *listNav) page(dir int) { l.move(dir * max(l.height-1, 1)) }

func (l *listNav) top()    { l.move(-l.n) }
func (l *listNav) bottom() { l.move(l.n) }

// selectIndex puts the cursor on row i, scrolling only as far as needed.
func (l *listNav) selectIndex(i int) {
	l.cursor = i
	l.clamp()
}

// window is the range of rows on screen.
func (l listNav) window() (start, end int) {
	return l.offset, min(l.offset+l.height, l.n)
}

func (l *listNav) clamp() {
	l.cursor = min(max(l.cursor, 0), max(l.n-1, 0))
	if l.height <= 0 {
		l.offset = l.cursor
		return
	}
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+l.height {
		l.offset = l.cursor - l.height + 1
	}
	// Never leave blank rows at the bottom while rows above are scrolled away (after a filter
	// or a reload shrank the list).
	l.offset = max(min(l.offset, l.n-l.height), 0)
}
