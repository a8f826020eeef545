package ui

import (
	"context"
	"fmt"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// describePane is the runtime's own view of a project (compose file and containers in docker;
// namespace, pods, PVC, Ingress and snapshots in kubernetes; directories and processes
// locally): what an operator would otherwise look up with docker or kubectl.
type describePane struct {
	noInput
	env  *env
	keys textKeys
	proj engine.Project
	text textView
	w, h int

	loaded, loading, again bool
	err                    error
}

func newDescribePane(e *env, p engine.Project) *describePane {
	return &describePane{env: e, keys: newTextKeys(), proj: p}
}

func (d *describePane) kind() paneKind                  { return kindDescribe }
func (d *describePane) crumb() string                   { return d.proj.Slug + " › Describe" }
func (d *describePane) open() tea.Cmd                   { return d.load() }
func (d *describePane) close()                          {}
func (d *describePane) project() (engine.Project, bool) { return d.proj, true }

func (d *describePane) info() string {
	switch {
	case d.loaded:
		return string(d.proj.Status) + "  " + plural(len(d.text.lines), "line")
	case d.loading:
		return "loading…"
	}
	return ""
}

func (d *describePane) setSize(w, h int) {
	d.w, d.h = w, h
	d.text.setSize(w, h)
}

func (d *describePane) keyMap() help.KeyMap {
	return d.text.keyMap(d.keys)
}

func (d *describePane) update(msg tea.KeyPressMsg) tea.Cmd {
	d.text.scroll(d.keys, msg)
	return nil
}

type describedMsg struct {
	to   *describePane
	text string
	err  error
}

func (m describedMsg) target() pane { return m.to }
func (m describedMsg) deliver() tea.Cmd {
	d := m.to
	d.loading = false
	d.err = m.err
	var cmd tea.Cmd
	if m.err == nil {
		d.text.setText(m.text)
		d.loaded = true
	} else {
		cmd = msgCmd(errMsg{err: fmt.Errorf("describe %s: %w", d.proj.Slug, m.err)})
	}
	if d.again {
		d.again = false
		return tea.Batch(cmd, d.load())
	}
	return cmd
}

func (d *describePane) load() tea.Cmd {
	if d.loading {
		d.again = true
		return nil
	}
	d.loading = true
	ctx, src, id := d.env.ctx, d.env.src, d.proj.ID
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		s, err := src.Describe(ctx, id)
		return describedMsg{to: d, text: s, err: err}
	}
}

// refresh follows events for the project only: the runtime's view does not age by itself.
func (d *describePane) refresh(_ bool, changed map[string]bool) tea.Cmd {
	if changed[d.proj.ID] {
		return d.load()
	}
	return nil
}

func (d *describePane) view() string {
	th := d.env.theme
	var lines []string
	switch {
	case d.err != nil && !d.loaded:
		lines = []string{th.Error.Render("  " + sanitize(d.err.Error()))}
	case !d.loaded:
		lines = []string{th.Muted.Render("  asking the runtime…")}
	default:
		for _, l := range d.text.view() {
			lines = append(lines, th.Value.Render(l))
		}
	}
	return block(lines, d.w, d.h)
}
