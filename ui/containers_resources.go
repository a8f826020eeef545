package ui

import (
	"context"
	"errors"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// resources is what the running containers of the pane's project use (CPU, memory), read
// at the console's refresh pace, never per frame: on opening the pane and at every refresh
// tick, one load at a time. An event about the project reloads the containers, not this: a
// status change does not make new figures, and a busy project must not have the runtime's
// stats asked for several times a second.
type resources struct {
	gate loadGate
	use  map[string]engine.ContainerUsage
	// note says why there are no figures (the runtime cannot measure, the last read failed);
	// told in the status line once each time it changes, and kept in the pane's info line.
	note        string
	unavailable bool
}

// resourcesLoadedMsg answers a resources load of one project.
type resourcesLoadedMsg struct {
	to  *containersPane
	use map[string]engine.ContainerUsage
	err error
}

func (m resourcesLoadedMsg) target() pane     { return m.to }
func (m resourcesLoadedMsg) deliver() tea.Cmd { return m.to.applyResources(m) }

func (c *containersPane) loadResources() tea.Cmd {
	src, id := c.env.src, c.proj.ID
	return c.res.gate.load(c.env.ctx, func(ctx context.Context) tea.Msg {
		u, err := src.Usage(ctx, id)
		return resourcesLoadedMsg{to: c, use: u, err: err}
	})
}

func (c *containersPane) applyResources(msg resourcesLoadedMsg) tea.Cmd {
	var cmds []tea.Cmd
	note := ""
	if msg.err != nil {
		note = msg.err.Error()
	}
	c.res.use = msg.use
	c.res.unavailable = errors.Is(msg.err, engine.ErrNotAvailable)
	if note != c.res.note && note != "" {
		cmds = append(cmds, hintCmd(note))
	}
	c.res.note = note
	if c.res.gate.done() {
		cmds = append(cmds, c.loadResources())
	}
	return tea.Batch(cmds...)
}

// resourceCells are a container's CPU and MEM cells: "-" while it does not run or has no
// figures.
func (c *containersPane) resourceCells(cv engine.ContainerView) (cpu, mem cell) {
	th := &c.env.theme
	u, ok := c.res.use[cv.Name]
	if !ok || !c.running(cv) {
		return txt("-", &th.Muted), txt("-", &th.Muted)
	}
	return txt(u.CPUText(), &th.Value), txt(u.MemoryText(), &th.Value)
}

// resourcesInfo is what the info line says of the figures when there are none.
func (c *containersPane) resourcesInfo() string {
	switch {
	case c.res.unavailable:
		return "  CPU/MEM not available"
	case c.res.note != "":
		return "  CPU/MEM not read"
	}
	return ""
}
