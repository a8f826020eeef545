package ui

import "time"

// logLine is one line of a container's log as the console keeps it.
type logLine struct {
	text string
	// at is when the console received the line (runtimes do not all stamp their lines).
	at time.Time
	// marker is a line the console inserted itself (a reconnect), not the container's.
	marker bool
}

// logRing keeps the newest lines of a log in fixed memory: a long session never grows past
// its capacity, the oldest lines make room for new ones. Lines are numbered by sequence
// (seq), which keeps counting as old lines leave, so a scroll position stays on its line.
type logRing struct {
	buf   []logLine
	head  int   // index in buf of the oldest line
	n     int   // lines held
	first int64 // seq of the oldest line held
}

func newLogRing(capacity int) *logRing { return &logRing{buf: make([]logLine, max(capacity, 1))} }

func (r *logRing) push(l logLine) {
	if r.n < len(r.buf) {
		r.buf[(r.head+r.n)%len(r.buf)] = l
		r.n++
		return
	}
	r.buf[r.head] = l
	r.head = (r.head + 1) % len(r.buf)
	r.first++
}

// start and end bound the seqs held: [start, end).
func (r *logRing) start() int64 { return r.first }
func (r *logRing) end() int64   { return r.first + int64(r.n) }
func (r *logRing) len() int     { return r.n }

// at is the line with sequence seq, which must be held.
func (r *logRing) at(seq int64) logLine {
	return r.buf[(r.head+int(seq-r.first))%len(r.buf)]
}

// reset forgets every line; sequence numbers go on from where they were.
func (r *logRing) reset() {
	r.first += int64(r.n)
	r.head, r.n = 0, 0
	clear(r.buf)
}

// lines copies the lines held, oldest first (for saving to a file).
func (r *logRing) lines() []logLine {
	out := make([]logLine, 0, r.n)
	for s := r.start(); s < r.end(); s++ {
		out = append(out, r.at(s))
	}
	return out
}
