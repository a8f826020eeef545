package ui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// describePane is the runtime's own view of a project (compose file and containers in docker;
// namespace, pods, PVC, Ingress and snapshots in kubernetes; directories and processes
// locally): what an operator would otherwise look up with docker or kubectl.
type describePane struct {
	textPane
	proj engine.Project
	// asOf is when the text shown was asked for: the runtime's view is read again at the
	// console's pace, so this is at most one refresh old.
	asOf time.Time
}

func newDescribePane(e *env, p engine.Project) *describePane {
	return &describePane{textPane: newTextPane(e, "asking the runtime…", false), proj: p}
}

func (d *describePane) kind() paneKind                  { return kindDescribe }
func (d *describePane) crumb() string                   { return d.proj.Slug + " › Describe" }
func (d *describePane) open() tea.Cmd                   { return d.load() }
func (d *describePane) project() (engine.Project, bool) { return d.proj, true }

func (d *describePane) info() string {
	switch {
	case d.loaded:
		// The project's state is the text's first line, as current as the text.
		return plural(len(d.text.raw), "line") + "  as of " + d.asOf.In(d.env.loc).Format("15:04:05")
	case d.gate.loading:
		return "loading…"
	}
	return ""
}

type describedMsg struct {
	to    *describePane
	text  string
	err   error
	asked time.Time
}

func (m describedMsg) target() pane { return m.to }
func (m describedMsg) deliver() tea.Cmd {
	if m.err == nil {
		m.to.asOf = m.asked
	}
	return m.to.took(m.text, m.err, "describe "+m.to.proj.Slug, m.to.load)
}

func (d *describePane) load() tea.Cmd {
	src, id, asked := d.env.src, d.proj.ID, d.env.now
	return d.gate.load(d.env.ctx, func(ctx context.Context) tea.Msg {
		s, err := src.Describe(ctx, id)
		return describedMsg{to: d, text: s, err: err, asked: asked}
	})
}

// refresh reads the runtime's view again on the slow refresh and on events for the project:
// uptimes, pids and exits change without an event. A load still running takes the request
// (loadGate), so a slow runtime gets one describe at a time.
func (d *describePane) refresh(force bool, changed map[string]bool) tea.Cmd {
	if force || changed[d.proj.ID] {
		return d.load()
	}
	return nil
}
