package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// sweepPane previews the next hibernation sweep: the engine's own dry run, so what it lists
// is exactly what the CronJob would take, not the console's guess.
type sweepPane struct {
	textPane
	rep engine.SweepReport
}

func newSweepPane(e *env) *sweepPane {
	return &sweepPane{textPane: newTextPane(e, "asking the engine for a dry run…", true)}
}

func (s *sweepPane) kind() paneKind                  { return kindSweep }
func (s *sweepPane) crumb() string                   { return "Sweep preview" }
func (s *sweepPane) open() tea.Cmd                   { return s.load() }
func (s *sweepPane) project() (engine.Project, bool) { return engine.Project{}, false }

func (s *sweepPane) info() string {
	switch {
	case s.loaded:
		return fmt.Sprintf("dry run  would hibernate %d", len(s.rep.Hibernated))
	case s.gate.loading:
		return "dry run  loading…"
	}
	return "dry run"
}

type sweepPreviewMsg struct {
	to  *sweepPane
	rep engine.SweepReport
	err error
}

func (m sweepPreviewMsg) target() pane { return m.to }
func (m sweepPreviewMsg) deliver() tea.Cmd {
	s := m.to
	var text string
	if m.err == nil {
		s.rep = m.rep
		text = s.render()
	}
	return tea.Batch(m.stray(), s.took(text, m.err, "sweep preview", s.load))
}

// stray tells the status bar what the next sweep would do, even when the pane has been left.
func (m sweepPreviewMsg) stray() tea.Cmd {
	if m.err != nil {
		return nil
	}
	return msgCmd(dryRunMsg{rep: m.rep})
}

// dryRunMsg is a finished sweep preview, for the status bar.
type dryRunMsg struct{ rep engine.SweepReport }

func (s *sweepPane) load() tea.Cmd {
	src := s.env.src
	return s.gate.load(s.env.ctx, func(ctx context.Context) tea.Msg {
		rep, err := src.SweepHibernate(ctx, engine.SweepOptions{DryRun: true})
		return sweepPreviewMsg{to: s, rep: rep, err: err}
	})
}

// refresh re-runs the preview on every refresh: idleness grows with time alone.
func (s *sweepPane) refresh(bool, map[string]bool) tea.Cmd { return s.load() }

func (s *sweepPane) render() string {
	r := s.rep
	var b strings.Builder
	fmt.Fprintf(&b, "The next hibernation sweep, as of %s (idle timeout %s):\n",
		r.AsOf.In(s.env.loc).Format("2006-01-02 15:04:05"), r.Idle)
	fmt.Fprintf(&b, "would hibernate %d, finish %d interrupted operations\n", len(r.Hibernated), len(r.Recovered))
	section := func(title string, items []engine.SweepItem) {
		b.WriteString("\n" + title + "\n")
		if len(items) == 0 {
			b.WriteString("  none\n")
			return
		}
		w := 0
		for _, it := range items {
			w = max(w, len(it.Slug))
		}
		for _, it := range items {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, it.Slug, it.Reason)
		}
	}
	section("WOULD HIBERNATE", r.Hibernated)
	section("INTERRUPTED OPERATIONS TO FINISH", r.Recovered)
	if len(r.Skipped) > 0 {
		section("SKIPPED", r.Skipped)
	}
	return b.String()
}

// sweepSeen is the status bar's word on hibernation sweeps: the last hibernation known to the
// console (an event, or a project the store lists as hibernated, since when its record last
// changed: when its hibernation finished) and what its own last dry run said the next sweep
// would do. There is no "next sweep at": the schedule lives in a CronJob or a timer the
// console cannot see, and it does not guess one.
type sweepSeen struct {
	// since is when the console started watching, for "none since".
	since    time.Time
	lastAt   time.Time
	lastSlug string
	// previewAt is the as-of time of the last dry run; zero when none ran.
	previewAt time.Time
	previewN  int
}

// hibernated notes a project seen entering hibernated at t (now when unknown).
func (s *sweepSeen) hibernated(slug string, t, now time.Time) {
	// Another host's clock running ahead must not pin "last" in the future.
	if t.IsZero() || t.After(now) {
		t = now
	}
	if t.Before(s.lastAt) {
		return
	}
	s.lastAt, s.lastSlug = t, slug
}

// listed takes the hibernated projects of a list load: the newest of them is the last
// hibernation the store still shows (one woken since is not, unless an event told of it).
func (s *sweepSeen) listed(ps []engine.Project, now time.Time) {
	var newest *engine.Project
	for i := range ps {
		if p := &ps[i]; p.Status == engine.StatusHibernated && !p.UpdatedAt.IsZero() &&
			(newest == nil || p.UpdatedAt.After(newest.UpdatedAt)) {
			newest = p
		}
	}
	if newest != nil {
		s.hibernated(newest.Slug, newest.UpdatedAt, now)
	}
}

func (s *sweepSeen) previewed(rep engine.SweepReport) {
	s.previewAt, s.previewN = rep.AsOf, len(rep.Hibernated)
}

// view is the longest account that fits in room columns ("" when none does): the slug goes
// first, then the dry run, then the last hibernation's age.
func (s *sweepSeen) view(e *env, room int) string {
	var last, short string
	if s.lastAt.IsZero() {
		// None in the store's list, and none while this console watched.
		last = "no hibernation since this console started " + ago(e.now, s.since)
		short = "no hibernation in " + span(max(e.now.Sub(s.since), 0))
	} else {
		short = "last hibernation " + ago(e.now, s.lastAt)
		last = "last hibernation " + sanitize(s.lastSlug) + " " + ago(e.now, s.lastAt)
	}
	var next string
	// A hibernation seen after the dry run may be the sweep it previewed: it is out of date.
	if !s.previewAt.IsZero() && !s.lastAt.After(s.previewAt) {
		n := "none"
		if s.previewN > 0 {
			n = fmt.Sprint(s.previewN)
		}
		next = "dry run " + ago(e.now, s.previewAt) + ": next sweep hibernates " + n
	}
	cands := []string{last, short}
	if next != "" {
		cands = []string{last + " · " + next, short + " · " + next, last, short}
	}
	for _, c := range cands {
		if width(c) <= room {
			return e.theme.Muted.Render(c)
		}
	}
	return ""
}
