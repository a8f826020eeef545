package ui

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// historyLines is how many lines the History pane asks for: a screenful many times over, and
// what `project history` shows by default.
const historyLines = 200

// historyPane answers "why is this project awake, asleep or about to sleep": its operations,
// the activity that kept it up and the sweep's warnings, newest first (engine.Engine.History).
type historyPane struct {
	textPane
	proj engine.Project
	asOf time.Time
	n    int
}

func newHistoryPane(e *env, p engine.Project) *historyPane {
	return &historyPane{textPane: newTextPane(e, "reading the history…", false), proj: p}
}

func (h *historyPane) kind() paneKind                  { return kindHistory }
func (h *historyPane) crumb() string                   { return h.proj.Slug + " › History" }
func (h *historyPane) open() tea.Cmd                   { return h.load() }
func (h *historyPane) project() (engine.Project, bool) { return h.proj, true }

func (h *historyPane) info() string {
	switch {
	case h.loaded:
		return plural(h.n, "line") + "  newest first  as of " + h.asOf.In(h.env.loc).Format("15:04:05")
	case h.gate.loading:
		return "loading…"
	}
	return ""
}

type historyMsg struct {
	to    *historyPane
	lines []engine.HistoryEntry
	err   error
	asked time.Time
}

func (m historyMsg) target() pane { return m.to }
func (m historyMsg) deliver() tea.Cmd {
	if m.err == nil {
		m.to.asOf, m.to.n = m.asked, len(m.lines)
	}
	return m.to.took(historyText(m.lines, m.asked, m.to.env.loc), m.err, "history of "+m.to.proj.Slug, m.to.load)
}

func (h *historyPane) load() tea.Cmd {
	src, id, asked := h.env.src, h.proj.ID, h.env.now
	return h.gate.load(h.env.ctx, func(ctx context.Context) tea.Msg {
		_, lines, err := src.History(ctx, id, historyLines)
		return historyMsg{to: h, lines: lines, err: err, asked: asked}
	})
}

// refresh reads the history again on events for the project and on the slow refresh (an
// activity line grows without an event).
func (h *historyPane) refresh(force bool, changed map[string]bool) tea.Cmd {
	if force || changed[h.proj.ID] {
		return h.load()
	}
	return nil
}

// historyText lays the lines out as the command's table does, each field sanitized before it
// is aligned (an error or an actor may carry anything).
func historyText(lines []engine.HistoryEntry, now time.Time, loc *time.Location) string {
	if len(lines) == 0 {
		return "nothing recorded yet"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tAGE\tWHAT\tBY\tDETAIL")
	for _, l := range lines {
		actor := l.Actor
		if actor == "" {
			actor = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.When(loc), ago(now, l.At), sanitize(l.What()), sanitize(actor), sanitize(l.Detail()))
	}
	tw.Flush()
	return b.String()
}
