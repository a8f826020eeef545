package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
)

// opSpec is an engine action a pane asks the root to run in the background: the console stays
// usable meanwhile and shows the action's progress under the pane.
type opSpec struct {
	// title names the action in the progress line ("restore storefront to …").
	title     string
	projectID string
	run       func(ctx context.Context) opResult
}

// opResult is what an action left for the operator.
type opResult struct {
	// info is the status line after a success; err replaces it after a failure.
	info string
	err  error
	// then is delivered to the root once the action ended (the timeline's replace offer, the
	// safety snapshot to point at).
	then tea.Msg
}

type (
	startOpMsg struct{ spec opSpec }
	opDoneMsg  struct {
		id  int
		res opResult
	}
	opProgressMsg struct {
		id int
		p  engine.Progress
	}
)

func startOp(spec opSpec) tea.Cmd { return msgCmd(startOpMsg{spec: spec}) }

// progressEvery bounds progress messages per operation: an archive reporting every 32 KiB
// would otherwise cost an Update (and a frame) per report.
const progressEvery = 100 * time.Millisecond

// maxOpLines is how many running operations get a line of their own under the pane.
const maxOpLines = 2

// progressFeed hands the latest report of one operation from the engine's goroutine to the
// console without ever blocking the engine: a newer report overwrites an unread one.
type progressFeed struct {
	mu     sync.Mutex
	last   engine.Progress
	notify chan struct{}
	done   chan struct{}
}

func newProgressFeed() *progressFeed {
	return &progressFeed{notify: make(chan struct{}, 1), done: make(chan struct{})}
}

func (f *progressFeed) report(p engine.Progress) {
	f.mu.Lock()
	f.last = p
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

func (f *progressFeed) latest() engine.Progress {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// wait delivers the next report, at most one per progressEvery; nothing once the op ended.
func (f *progressFeed) wait(id int) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-f.notify:
		case <-f.done:
			return nil
		}
		t := time.NewTimer(progressEvery)
		defer t.Stop()
		select {
		case <-t.C:
		case <-f.done:
			return nil
		}
		return opProgressMsg{id: id, p: f.latest()}
	}
}

type runningOp struct {
	id       int
	spec     opSpec
	started  time.Time
	progress engine.Progress
	feed     *progressFeed
}

// ops tracks the actions running in the background.
type ops struct {
	next    int
	running []*runningOp
}

func (o *ops) start(e *env, spec opSpec) tea.Cmd {
	o.next++
	r := &runningOp{id: o.next, spec: spec, started: e.now, feed: newProgressFeed()}
	o.running = append(o.running, r)
	e.busy[spec.projectID] = spec.title
	ctx := engine.WithProgress(e.ctx, r.feed.report)
	id, feed := r.id, r.feed
	run := func() tea.Msg {
		res := spec.run(ctx)
		close(feed.done)
		return opDoneMsg{id: id, res: res}
	}
	return tea.Batch(run, feed.wait(id))
}

func (o *ops) progress(msg opProgressMsg) tea.Cmd {
	for _, r := range o.running {
		if r.id == msg.id {
			r.progress = msg.p
			return r.feed.wait(r.id)
		}
	}
	return nil
}

// finish forgets a finished op and returns it.
func (o *ops) finish(e *env, id int) (*runningOp, bool) {
	for i, r := range o.running {
		if r.id == id {
			o.running = append(o.running[:i], o.running[i+1:]...)
			delete(e.busy, r.spec.projectID)
			// Another op on the same project (a second tab of work) keeps it busy.
			for _, rest := range o.running {
				if rest.spec.projectID == r.spec.projectID {
					e.busy[rest.spec.projectID] = rest.spec.title
				}
			}
			return r, true
		}
	}
	return nil, false
}

func (o *ops) lines() int { return min(len(o.running), maxOpLines) }

// view renders the progress lines, w wide.
func (o *ops) view(e *env, w int) []string {
	n := o.lines()
	out := make([]string, 0, n)
	for i, r := range o.running[:n] {
		if i == n-1 && len(o.running) > n {
			out = append(out, e.theme.Muted.Render(fmt.Sprintf("⟳ %d more actions running…", len(o.running)-n+1)))
			break
		}
		out = append(out, progressLine(e, r, w))
	}
	return out
}

// progressLine is "⟳ title  phase ████░░░░ 45%  12.0 MiB / 27.0 MiB  3s": the bar only when
// the total is known, the byte counts only when there are some. The title gives way first.
func progressLine(e *env, r *runningOp, w int) string {
	th := &e.theme
	p := r.progress
	right := ""
	if p.Phase != "" {
		right = "  " + th.Value.Render(p.Phase)
	}
	var frac float64
	var nums string
	switch {
	case p.Total > 0:
		frac = min(float64(p.Done)/float64(p.Total), 1)
		nums = fmt.Sprintf(" %3d%%  %s / %s", int(frac*100), bytesText(p.Done), bytesText(p.Total))
	case p.Done > 0:
		nums = "  " + bytesText(p.Done)
	}
	elapsed := "  " + span(max(e.now.Sub(r.started), 0).Truncate(time.Second))
	fixed := width(right) + width(nums) + width(elapsed)
	const minTitle, minBar, maxBar = 16, 10, 30
	title := sanitize(r.spec.title)
	bar := ""
	if p.Total > 0 {
		// The bar takes what the whole title leaves, between minBar and maxBar; below
		// minBar the title is cut (down to minTitle) before the bar goes.
		bw := min(w-fixed-2-width(title)-1, maxBar)
		if bw < minBar && w-fixed-2-minTitle-1 >= minBar {
			bw = minBar
		}
		if bw >= minBar {
			full := int(float64(bw) * frac)
			bar = " " + th.ProgressFull.Render(strings.Repeat("█", full)) + th.ProgressEmpty.Render(strings.Repeat("░", bw-full))
		}
	}
	tail := right + bar + th.Value.Render(nums) + th.Muted.Render(elapsed)
	title = ansi.Truncate(title, max(w-2-width(tail), 1), "…")
	return fit(th.Title.Render("⟳ ")+th.Value.Render(title)+tail, w)
}

// bytesText renders a byte count with a binary unit and one decimal.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// statusKind orders what the status line can say.
type statusKind int

const (
	statusInfo statusKind = iota
	statusHint
	statusErr
)

// How long the status line shows a message: what an action reported, or why a key did
// nothing, is news for a moment; an error stays long enough to be read by an operator who
// looked away, but not beside rows that have changed since. The message stays whole in the
// help screen (?) after it left the status line. No ticker of its own: the line is drawn
// again on the console's own ticks (the slow refresh, a running action's second).
const (
	infoShownFor = 5 * time.Second
	errShownFor  = 30 * time.Second
)

// statusLine is the last thing worth telling: an error, a finished action, or why a key did
// nothing. It expires (infoShownFor, errShownFor); an error about a project also goes once
// that project's row changes after the error (the row then says what is true).
type statusLine struct {
	at   time.Time
	text string
	kind statusKind
	// project is the id of the project an action's error is about ("" for none). row is
	// that project as the first list load asked for after the error saw it (based); a
	// later load that finds it changed ends the message.
	project string
	based   bool
	row     engine.Project
	// over is set when the row changed: the message is left to the help screen.
	over bool
}

// shown tells whether the message is still on the status line at now.
func (s statusLine) shown(now time.Time) bool {
	if s.text == "" || s.over {
		return false
	}
	d := infoShownFor
	if s.kind == statusErr {
		d = errShownFor
	}
	return now.Sub(s.at) < d
}

// rowLoaded takes the project list a load asked for at asked found: the first one after the
// error is its baseline; the row changing after it ends the message (false).
func (s *statusLine) rowLoaded(ps []engine.Project, full bool, asked time.Time) (keep bool) {
	if s.project == "" || asked.Before(s.at) {
		return true
	}
	for _, p := range ps {
		if p.ID != s.project {
			continue
		}
		if !s.based {
			s.based, s.row = true, p
			return true
		}
		return p.Status == s.row.Status && p.UpdatedAt.Equal(s.row.UpdatedAt) && p.OpID == s.row.OpID
	}
	// Not in a full list: the project is gone (removed), and so is what the error was about.
	// Not in an incremental read: its row did not change.
	return !full || !s.based
}

func (s statusLine) view(e *env) string {
	if !s.shown(e.now) {
		return ""
	}
	th := &e.theme
	stamp := s.at.In(e.loc).Format("15:04:05") + " "
	switch s.kind {
	case statusErr:
		return th.Error.Render("✗ "+stamp) + th.Error.Render(sanitize(s.text))
	case statusHint:
		return th.Hint.Render("! ") + th.Hint.Render(sanitize(s.text))
	}
	return th.Info.Render("✓ "+stamp) + th.Value.Render(sanitize(s.text))
}
