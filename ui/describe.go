package ui

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// describePane is the runtime's own view of a project (compose file and containers in docker;
// namespace, pods, PVC, Ingress and snapshots in kubernetes; directories and processes
// locally): what an operator would otherwise look up with docker or kubectl.
type describePane struct {
	textPane
	proj engine.Project
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
		return string(d.proj.Status) + "  " + plural(len(d.text.lines), "line")
	case d.gate.loading:
		return "loading…"
	}
	return ""
}

type describedMsg struct {
	to   *describePane
	text string
	err  error
}

func (m describedMsg) target() pane { return m.to }
func (m describedMsg) deliver() tea.Cmd {
	return m.to.took(m.text, m.err, "describe "+m.to.proj.Slug, m.to.load)
}

func (d *describePane) load() tea.Cmd {
	src, id := d.env.src, d.proj.ID
	return d.gate.load(d.env.ctx, func(ctx context.Context) tea.Msg {
		s, err := src.Describe(ctx, id)
		return describedMsg{to: d, text: s, err: err}
	})
}

// refresh follows events for the project only: the runtime's view does not age by itself.
func (d *describePane) refresh(_ bool, changed map[string]bool) tea.Cmd {
	if changed[d.proj.ID] {
		return d.load()
	}
	return nil
}
