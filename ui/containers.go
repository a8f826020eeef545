package ui

import (
	"context"
	"fmt"
	"strconv"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// containersKeys are the Containers pane's keys; esc (back) is global.
type containersKeys struct {
	navKeys
}

// containersPane is a read-only view of one project's containers.
type containersPane struct {
	env  *env
	keys containersKeys
	w, h int

	project engine.Project
	rows    []engine.ContainerView
	loaded  bool
	err     error
	nav     listNav

	loading bool
	// again asks for one more load when a refresh came in while one was running.
	again bool
}

var containerColumns = []column{
	{title: "NAME", min: 8, max: 20},
	{title: "DIRECTORY", min: 9, max: 24, drop: 2},
	{title: "STATE", min: 8, max: 8},
	{title: "PORT", min: 11, max: 11, drop: 3},
	{title: "URL", min: 10, drop: 1},
}

func newContainersPane(e *env, p engine.Project) *containersPane {
	return &containersPane{env: e, keys: containersKeys{navKeys: newNavKeys()}, project: p}
}

func (c *containersPane) crumb() string { return c.project.Slug }

func (c *containersPane) info() string {
	s := "Containers"
	switch {
	case c.loaded:
		s += fmt.Sprintf("  %d", len(c.rows))
	case c.loading:
		s += "  loading…"
	}
	return s + "  " + string(c.project.Status)
}

func (c *containersPane) setSize(w, h int) {
	c.w, c.h = w, h
	c.nav.setHeight(h - 1)
}

func (c *containersPane) capturing() bool { return false }

func (c *containersPane) keyMap() help.KeyMap {
	k := c.keys
	return staticKeys{short: []keyBinding{k.Up, k.Down}, full: [][]keyBinding{k.bindings()}}
}

func (c *containersPane) update(msg tea.KeyPressMsg) tea.Cmd {
	c.keys.handle(msg, &c.nav)
	return nil
}

// containersLoadedMsg answers a containers load of one project.
type containersLoadedMsg struct {
	projectID string
	project   engine.Project
	rows      []engine.ContainerView
	err       error
}

func (c *containersPane) load() tea.Cmd {
	if c.loading {
		c.again = true
		return nil
	}
	c.loading = true
	ctx, src, id := c.env.ctx, c.env.src, c.project.ID
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		p, rows, err := src.Containers(ctx, id)
		return containersLoadedMsg{projectID: id, project: p, rows: rows, err: err}
	}
}

// apply takes a load's answer; it returns a follow-up load when one was asked for meanwhile.
func (c *containersPane) apply(msg containersLoadedMsg) tea.Cmd {
	c.loading = false
	c.err = msg.err
	if msg.err == nil {
		keep := ""
		if c.nav.cursor < len(c.rows) {
			keep = c.rows[c.nav.cursor].Name
		}
		c.project, c.rows, c.loaded = msg.project, msg.rows, true
		c.nav.setLen(len(c.rows))
		for i, r := range c.rows {
			if r.Name == keep {
				c.nav.selectIndex(i)
			}
		}
	}
	if c.again {
		c.again = false
		return c.load()
	}
	return nil
}

func (c *containersPane) refresh(force bool, changed map[string]bool) tea.Cmd {
	if force || changed[c.project.ID] {
		return c.load()
	}
	return nil
}

func (c *containersPane) view() string {
	th := c.env.theme
	widths := layout(containerColumns, c.w)
	lines := []string{headerLine(th, containerColumns, widths, c.w)}
	switch {
	case c.err != nil && !c.loaded:
		lines = append(lines, th.Error.Render("  "+sanitize(c.err.Error())))
	case !c.loaded:
		lines = append(lines, th.Muted.Render("  loading containers…"))
	case len(c.rows) == 0:
		lines = append(lines, th.Muted.Render("  this project has no containers"))
	}
	start, end := c.nav.window()
	for i := start; i < end; i++ {
		lines = append(lines, rowLine(th, c.cells(c.rows[i]), widths, i == c.nav.cursor, c.w))
	}
	return block(lines, c.w, c.h)
}

func (c *containersPane) cells(cv engine.ContainerView) []cell {
	th := c.env.theme
	state := cv.Status.State
	if state == "" {
		state = engine.ContainerUnknown
	}
	url := txt(cv.Status.URL, th.Value)
	switch {
	case cv.Status.URL == "" && cv.Status.LocalURL != "":
		url = txt(cv.Status.LocalURL, th.Value)
	case cv.Status.URL == "" && cv.Status.Detail != "":
		url = txt(cv.Status.Detail, th.Muted)
	case cv.Status.URL == "":
		url = txt("-", th.Muted)
	}
	return []cell{
		txt(cv.Name, th.Value),
		txt(cv.Directory, th.Value),
		txt(state, th.Container(state)),
		txt(portText(cv.Port, cv.Status.HostPort), th.Value),
		url,
	}
}

// portText shows the service's port and, when it differs, where the host reaches it.
func portText(port, host int) string {
	switch {
	case host > 0 && port > 0 && host != port:
		return strconv.Itoa(port) + "->" + strconv.Itoa(host)
	case host > 0:
		return strconv.Itoa(host)
	case port > 0:
		return strconv.Itoa(port)
	}
	return "-"
}
