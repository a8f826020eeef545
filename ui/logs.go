package ui

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

const (
	// logRingLines bounds a log session's memory (about 2-3 MiB of ordinary lines).
	logRingLines = 20_000
	// reconnectTail is what a reconnect asks for again, to find where the old stream stopped.
	reconnectTail = 200
	// quietAfter is when a stream with no new lines reads as quiet rather than streaming.
	quietAfter = 10 * time.Second
	// stallAfter is when a quiet stream is reconnected to prove it is alive: a stream whose
	// connection died without closing looks exactly like a quiet container.
	stallAfter = 60 * time.Second
	// maxReconnectDelay caps the back-off between reconnects of a stream that keeps failing.
	maxReconnectDelay = 30 * time.Second
)

// tailSizes are the initial lengths T cycles through.
var tailSizes = []int{100, 1000, 10_000}

// streamState is where a log stream is, shown in the pane so a stream never stalls silently.
type streamState int

const (
	streamConnecting streamState = iota
	streamOpen
	streamEnded
	streamFailed
)

type logsKeys struct {
	navKeys
	Follow     key.Binding
	Wrap       key.Binding
	Timestamps key.Binding
	Search     key.Binding
	Next       key.Binding
	Prev       key.Binding
	Tail       key.Binding
	Save       key.Binding
	Reconnect  key.Binding
	// Clear is esc on a search (or a filter) applied: it goes before the pane does.
	Clear key.Binding
	// While the search is typed.
	Accept key.Binding
	Cancel key.Binding
}

func newLogsKeys() logsKeys {
	return logsKeys{
		navKeys:    newNavKeys(),
		Follow:     key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "follow")),
		Wrap:       key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wrap")),
		Timestamps: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "timestamps")),
		Search:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		Next:       key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "older match")),
		Prev:       key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "newer match")),
		Tail:       key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "tail size")),
		Save:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "save to file")),
		Reconnect:  key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "reconnect")),
		Clear:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear search")),
		Accept:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "search")),
		Cancel:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear search")),
	}
}

// logsPane streams one container's log. Lines gather in a feed off the event loop and arrive
// in batches (logstream.go) into a ring of fixed size; a frame renders only the lines on
// screen, so neither a fast container nor a long session slows the console down.
type logsPane struct {
	env       *env
	keys      logsKeys
	actions   actionList
	proj      engine.Project
	container string
	w, h      int

	ring    *logRing
	dropped int
	follow  bool
	wrap    bool
	stamps  bool
	tailIdx int
	// bottom is the seq of the last line on screen when not following.
	bottom int64

	// The stream: gen numbers connections so a batch from a replaced one is ignored.
	gen       int
	cancel    context.CancelFunc
	sctx      context.Context
	feed      *logFeed
	state     streamState
	err       error
	lastLine  time.Time // when the last line was written (zero: none yet); kept across reconnects
	openedAt  time.Time // when the current connection opened
	checked   time.Time // when a silent stream was last reconnected to prove it alive
	retries   int
	retryAt   time.Time
	dedupe    bool // the next batch repeats the tail of the last stream
	reconnect bool // a reconnect is scheduled

	// cstat is the container's state as last read (logs_status.go), statGate its loads.
	cstat    logStatus
	statGate loadGate

	searching bool
	input     textinput.Model
	query     string
	re        *regexp.Regexp
	// cur is the current match (when hasCur): n and N go on from it.
	cur    int64
	hasCur bool

	// filter shows only the lines that match it (&); shown is their seqs while it is on,
	// hits the seqs of the search's matches among the lines shown (logs_filter.go).
	filter filterBox
	shown  seqIndex
	hits   seqIndex
}

func newLogsPane(e *env, p engine.Project, container string) *logsPane {
	l := &logsPane{
		env: e, keys: newLogsKeys(), proj: p, container: container,
		ring: newLogRing(logRingLines), follow: true, tailIdx: 1,
		input:  newInput(e, "/", "search (regex or text)"),
		filter: newLogsFilter(e),
	}
	k := l.keys
	l.actions = newActions(e.readOnly,
		action{key: k.Follow, label: func() string { return pick(l.follow, "pause", "follow") }, do: l.toggleFollow},
		action{key: k.Wrap, label: func() string { return pick(l.wrap, "no wrap", "wrap") }, do: func() tea.Cmd { l.wrap = !l.wrap; return nil }},
		action{key: k.Timestamps, label: func() string { return pick(l.stamps, "hide times", "times") }, do: func() tea.Cmd { l.stamps = !l.stamps; return nil }},
		action{key: k.Search, do: l.startSearch},
		action{key: k.Next, why: l.whyMatch, do: func() tea.Cmd { return l.jump(-1) }},
		action{key: k.Prev, why: l.whyMatch, do: func() tea.Cmd { return l.jump(1) }},
		action{key: l.filter.keys.Filter, do: l.filter.start},
		action{key: k.Tail, label: func() string {
			return fmt.Sprintf("tail %d→%d", tailSizes[l.tailIdx], tailSizes[(l.tailIdx+1)%len(tailSizes)])
		}, do: l.cycleTail},
		action{key: k.Save, why: l.whySave, do: l.save},
		action{key: k.Reconnect, do: func() tea.Cmd { return l.connect(tailSizes[l.tailIdx], false, true) }},
	)
	return l
}

// pick is a when b, else c (help labels that say what a toggle will do).
func pick(b bool, a, c string) string {
	if b {
		return a
	}
	return c
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (l *logsPane) kind() paneKind                  { return kindLogs }
func (l *logsPane) crumb() string                   { return l.container + " › Logs" }
func (l *logsPane) project() (engine.Project, bool) { return l.proj, true }
func (l *logsPane) pointsAt() (string, bool)        { return l.container, true }

func (l *logsPane) info() string {
	s := plural(l.ring.len(), "line")
	if l.filtering() {
		s = fmt.Sprintf("%d of %s", l.shownLen(), s)
	}
	if l.dropped > 0 {
		s += fmt.Sprintf(" (%d dropped)", l.dropped)
	}
	return s
}

func (l *logsPane) setSize(w, h int) {
	l.w, l.h = w, h
	l.input.SetWidth(max(w-2, 1))
	l.filter.setWidth(w)
}

func (l *logsPane) open() tea.Cmd {
	return tea.Batch(l.connect(tailSizes[l.tailIdx], false, true), l.loadStatus())
}

func (l *logsPane) close() {
	if l.cancel != nil {
		l.cancel()
		l.cancel = nil
	}
}

// connect (re)opens the stream. A fresh one (clear) starts the ring over from the tail; a
// reconnect asks for a short tail again and drops what it already has (dedupe).
func (l *logsPane) connect(tail int, dedupe, clear bool) tea.Cmd {
	l.close()
	l.gen++
	if clear {
		l.ring.reset()
		l.dropped = 0
		l.index(l.ring.end())
	}
	l.dedupe = dedupe && l.ring.len() > 0
	l.reconnect = false
	l.setState(streamConnecting, nil)
	ctx, cancel := context.WithCancel(l.env.ctx)
	feed := newLogFeed(logRingLines)
	l.cancel, l.sctx, l.feed = cancel, ctx, feed
	src, ref, name := l.env.src, l.proj.ID, l.container
	opts := engine.LogOptions{Follow: true, Tail: tail}
	read := func() tea.Msg {
		readLog(ctx, src, ref, name, opts, feed)
		return nil
	}
	return tea.Batch(read, feed.wait(ctx, l, l.gen))
}

func (l *logsPane) setState(s streamState, err error) { l.state, l.err = s, err }

// apply takes a batch into the ring, and reconnects a stream that ended while following.
func (l *logsPane) apply(m logBatchMsg) tea.Cmd {
	if m.gen != l.gen {
		return nil // from a stream already replaced
	}
	from := l.ring.end()
	lines, times := m.lines, m.times
	if l.dedupe && len(lines) > 0 {
		lines = l.skipSeen(lines)
		times = times[min(len(m.lines)-len(lines), len(times)):]
		l.dedupe = false
	}
	now := l.env.now
	for i, s := range lines {
		at := now
		if i < len(times) && !times[i].IsZero() {
			at = times[i] // the runtime's record of when the line was written
		}
		l.ring.push(logLine{text: s, at: at})
	}
	l.index(from)
	l.dropped += m.dropped
	if len(lines) > 0 {
		// Quiet counts from when the last line was written (a backlog's last line may be
		// hours old), never from the future a skewed clock may give.
		l.lastLine = l.ring.at(l.ring.end() - 1).at
		if l.lastLine.After(now) {
			l.lastLine = now
		}
		l.retries = 0
	}
	if m.opened && l.state == streamConnecting {
		l.setState(streamOpen, nil)
		l.openedAt = now
	}
	if !m.ended {
		return l.feed.wait(l.sctx, l, l.gen)
	}
	if m.err != nil {
		l.setState(streamFailed, m.err)
	} else {
		l.setState(streamEnded, nil)
	}
	if !l.follow {
		return nil
	}
	return l.scheduleReconnect()
}

// skipSeen drops the lines of a reconnect's tail that the ring already holds: it looks for
// the ring's last lines in the new batch. When they are not there, lines may have been missed
// in between, and a marker says so.
func (l *logsPane) skipSeen(lines []string) []string {
	k := min(3, l.ring.len())
	var last []string
	for s := l.ring.end() - int64(k); s < l.ring.end(); s++ {
		if ln := l.ring.at(s); !ln.marker {
			last = append(last, ln.text)
		}
	}
	for i := len(lines) - len(last); i >= 0; i-- {
		match := true
		for j := range last {
			if lines[i+j] != last[j] {
				match = false
				break
			}
		}
		if match && len(last) > 0 {
			return lines[i+len(last):]
		}
	}
	l.ring.push(logLine{text: "── reconnected; lines written meanwhile may be missing ──", at: l.env.now, marker: true})
	return lines
}

// logReconnectMsg is a scheduled reconnect of a stream generation.
type logReconnectMsg struct {
	to  *logsPane
	gen int
}

func (m logReconnectMsg) target() pane { return m.to }
func (m logReconnectMsg) deliver() tea.Cmd {
	l := m.to
	if m.gen != l.gen || !l.reconnect {
		return nil
	}
	return l.connect(reconnectTail, true, false)
}

func (l *logsPane) scheduleReconnect() tea.Cmd {
	if l.reconnect {
		return nil
	}
	d := time.Second << min(l.retries, 5)
	d = min(d, maxReconnectDelay)
	l.retries++
	l.reconnect = true
	l.retryAt = l.env.now.Add(d)
	return l.env.after(d, logReconnectMsg{to: l, gen: l.gen})
}

// refresh is the slow tick and the project's events: the container's state is read again,
// and a following stream silent for stallAfter is reconnected.
func (l *logsPane) refresh(force bool, changed map[string]bool) tea.Cmd {
	var status tea.Cmd
	if force || changed[l.proj.ID] {
		status = l.loadStatus()
	}
	return tea.Batch(status, l.checkStall(force))
}

func (l *logsPane) checkStall(force bool) tea.Cmd {
	if !force || !l.follow || l.state != streamOpen {
		return nil
	}
	// Silent since the last line, or since the connection opened when that is later.
	last := l.lastLine
	for _, t := range []time.Time{l.openedAt, l.checked} {
		if t.After(last) {
			last = t
		}
	}
	if l.env.now.Sub(last) < stallAfter {
		return nil
	}
	l.checked = l.env.now // one reconnect per stall, not one per tick
	return l.connect(reconnectTail, true, false)
}

func (l *logsPane) toggleFollow() tea.Cmd {
	l.follow = !l.follow
	if !l.follow {
		l.bottom = l.ring.end() - 1
		return nil
	}
	// Following again: a stream that ended meanwhile comes back.
	if l.state == streamEnded || l.state == streamFailed {
		return l.connect(reconnectTail, true, false)
	}
	return nil
}

func (l *logsPane) cycleTail() tea.Cmd {
	l.tailIdx = (l.tailIdx + 1) % len(tailSizes)
	l.follow = true
	return l.connect(tailSizes[l.tailIdx], false, true)
}

func (l *logsPane) keyMap() help.KeyMap {
	k := l.keys
	if l.searching {
		ks := []keyBinding{k.Accept, k.Cancel}
		return staticKeys{short: ks, full: [][]keyBinding{ks}}
	}
	if l.filter.editing {
		return l.filter.editKeys()
	}
	acts := l.actions.available()
	return staticKeys{short: acts, full: [][]keyBinding{k.bindings(), acts}}
}

func (l *logsPane) update(msg tea.KeyPressMsg) tea.Cmd {
	if l.searching {
		return l.updateSearch(msg)
	}
	if l.filter.editing {
		return l.updateFilter(msg)
	}
	if key.Matches(msg, l.keys.Clear) && l.takesEsc() {
		l.clearOne()
		return nil
	}
	if l.scroll(msg) {
		return nil
	}
	cmd, _ := l.actions.handle(msg)
	return cmd
}

// scroll moves the view over the lines shown; moving up leaves follow, reaching the newest
// line (G) resumes it.
func (l *logsPane) scroll(msg tea.KeyPressMsg) bool {
	k := l.keys
	page := max(l.h-2, 1)
	cur := l.bottomPos()
	switch {
	case key.Matches(msg, k.Up):
		cur--
	case key.Matches(msg, k.Down):
		cur++
	case key.Matches(msg, k.PageUp):
		cur -= page
	case key.Matches(msg, k.PageDown):
		cur += page
	case key.Matches(msg, k.Top):
		cur = page - 1
	case key.Matches(msg, k.Bottom):
		l.follow = true
		return true
	default:
		return false
	}
	last := l.shownLen() - 1
	if cur >= last {
		// Scrolling down past the newest line is following again, as in less +F.
		if key.Matches(msg, k.Down, k.PageDown) || last < 0 {
			l.follow = true
			return true
		}
		cur = last
	}
	l.follow = false
	l.bottom = l.seqAt(max(cur, min(page-1, last)))
	return true
}
