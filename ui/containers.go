package ui

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// containersKeys are the Containers pane's keys; esc (back) is global.
type containersKeys struct {
	navKeys
	Logs      key.Binding
	StartStop key.Binding
	Timeline  key.Binding
}

// containersPane is one project's containers.
type containersPane struct {
	noInput
	env     *env
	keys    containersKeys
	actions actionList
	w, h    int

	proj   engine.Project
	rows   []engine.ContainerView
	loaded bool
	err    error
	nav    listNav

	loading bool
	// again asks for one more load when a refresh came in while one was running.
	again bool
	// want is the container to select once the first list arrives (logs opened by tab or
	// :logs before the containers were listed).
	want string
	// thenLogs opens the logs of this container (or of the first, "*") once the list is in:
	// :logs asked for logs before the containers were known.
	thenLogs string
}

var containerColumns = []column{
	{title: "NAME", min: 8, max: 20},
	{title: "DIRECTORY", min: 9, max: 24, drop: 2},
	{title: "STATE", min: 8, max: 8},
	{title: "PORT", min: 11, max: 11, drop: 3},
	{title: "UPTIME", min: 6, max: 7, drop: 4},
	// Wide enough for a local URL (http://127.0.0.1:41001/) at 80 columns: a cut URL cannot
	// be copied.
	{title: "URL", min: 23, drop: 1},
}

func newContainersPane(e *env, p engine.Project) *containersPane {
	c := &containersPane{env: e, proj: p, keys: containersKeys{
		navKeys:   newNavKeys(),
		Logs:      key.NewBinding(key.WithKeys("enter", "l"), key.WithHelp("enter/l", "logs")),
		StartStop: key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "start/stop")),
		Timeline:  key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "timeline")),
	}}
	k := c.keys
	c.actions = newActions(e.readOnly,
		action{key: k.Logs, why: c.whySelected, do: c.openLogs},
		action{key: k.StartStop, mutates: true, why: c.whyStartStop, label: c.startStopLabel, do: c.startStop},
		action{key: k.Timeline, do: func() tea.Cmd { return showCmd(kindTimeline, c.proj, "") }},
	)
	return c
}

func (c *containersPane) kind() paneKind                  { return kindContainers }
func (c *containersPane) crumb() string                   { return c.proj.Slug }
func (c *containersPane) open() tea.Cmd                   { return c.load() }
func (c *containersPane) close()                          {}
func (c *containersPane) project() (engine.Project, bool) { return c.proj, true }

// selected is the container under the cursor.
func (c *containersPane) selected() (engine.ContainerView, bool) {
	if !c.loaded || c.nav.cursor >= len(c.rows) {
		return engine.ContainerView{}, false
	}
	return c.rows[c.nav.cursor], true
}

func (c *containersPane) whySelected() string {
	if _, ok := c.selected(); !ok {
		return "no container selected"
	}
	return ""
}

func (c *containersPane) openLogs() tea.Cmd {
	cv, _ := c.selected()
	return showCmd(kindLogs, c.proj, cv.Name)
}

func (c *containersPane) running(cv engine.ContainerView) bool {
	return cv.Status.State == engine.ContainerRunning || cv.Status.State == engine.ContainerStarting
}

func (c *containersPane) whyStartStop() string {
	cv, ok := c.selected()
	if !ok {
		return "no container selected"
	}
	if why := c.env.busyWhy(c.proj); why != "" {
		return why
	}
	if c.proj.Status != engine.StatusActive && !(c.proj.Status == engine.StatusHibernated && !c.running(cv)) {
		return fmt.Sprintf("%s is %s", c.proj.Slug, c.proj.Status)
	}
	return ""
}

func (c *containersPane) startStopLabel() string {
	if cv, _ := c.selected(); c.running(cv) {
		return "stop"
	}
	return "start"
}

func (c *containersPane) startStop() tea.Cmd {
	cv, _ := c.selected()
	src, p, name := c.env.src, c.proj, cv.Name
	if c.running(cv) {
		return startOp(opSpec{title: "stop " + p.Slug + "/" + name, projectID: p.ID, run: func(ctx context.Context) opResult {
			if err := src.StopContainer(ctx, p.ID, name); err != nil {
				return opResult{err: err}
			}
			return opResult{info: p.Slug + "/" + name + " stopped"}
		}})
	}
	return startOp(opSpec{title: "start " + p.Slug + "/" + name, projectID: p.ID, run: func(ctx context.Context) opResult {
		if _, err := src.StartContainer(ctx, p.ID, name); err != nil {
			return opResult{err: err}
		}
		return opResult{info: p.Slug + "/" + name + " started"}
	}})
}

func (c *containersPane) info() string {
	s := "Containers"
	switch {
	case c.loaded:
		s += fmt.Sprintf("  %d", len(c.rows))
	case c.loading:
		s += "  loading…"
	}
	return s + "  " + string(c.proj.Status)
}

func (c *containersPane) setSize(w, h int) {
	c.w, c.h = w, h
	c.nav.setHeight(h - 1)
}

func (c *containersPane) keyMap() help.KeyMap {
	k := c.keys
	acts := c.actions.available()
	return staticKeys{short: acts, full: [][]keyBinding{k.bindings(), acts}}
}

func (c *containersPane) update(msg tea.KeyPressMsg) tea.Cmd {
	if c.keys.handle(msg, &c.nav) {
		return nil
	}
	cmd, _ := c.actions.handle(msg)
	return cmd
}

// containersLoadedMsg answers a containers load of one project.
type containersLoadedMsg struct {
	to      *containersPane
	project engine.Project
	rows    []engine.ContainerView
	err     error
}

func (m containersLoadedMsg) target() pane     { return m.to }
func (m containersLoadedMsg) deliver() tea.Cmd { return m.to.apply(m) }

func (c *containersPane) load() tea.Cmd {
	if c.loading {
		c.again = true
		return nil
	}
	c.loading = true
	ctx, src, id := c.env.ctx, c.env.src, c.proj.ID
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		p, rows, err := src.Containers(ctx, id)
		return containersLoadedMsg{to: c, project: p, rows: rows, err: err}
	}
}

// apply takes a load's answer; it returns a follow-up load when one was asked for meanwhile.
func (c *containersPane) apply(msg containersLoadedMsg) tea.Cmd {
	c.loading = false
	c.err = msg.err
	var failed tea.Cmd
	if msg.err != nil {
		failed = msgCmd(errMsg{err: msg.err})
	} else {
		keep := c.want
		if c.nav.cursor < len(c.rows) {
			keep = c.rows[c.nav.cursor].Name
		}
		c.want = ""
		c.proj, c.rows, c.loaded = msg.project, msg.rows, true
		c.nav.setLen(len(c.rows))
		for i, r := range c.rows {
			if r.Name == keep {
				c.nav.selectIndex(i)
			}
		}
	}
	var then tea.Cmd
	if want := c.thenLogs; want != "" && c.loaded {
		c.thenLogs = ""
		for _, r := range c.rows {
			if want == "*" || r.Name == want {
				then = showCmd(kindLogs, c.proj, r.Name)
				break
			}
		}
		if then == nil {
			then = hintCmd(fmt.Sprintf("logs: %s has no container %q", c.proj.Slug, want))
		}
	}
	if c.again {
		c.again = false
		return tea.Batch(failed, then, c.load())
	}
	return tea.Batch(failed, then)
}

// selectName puts the cursor on the named container, now or once the list is in.
func (c *containersPane) selectName(name string) {
	if !c.loaded {
		c.want = name
		return
	}
	for i, r := range c.rows {
		if r.Name == name {
			c.nav.selectIndex(i)
		}
	}
}

func (c *containersPane) refresh(force bool, changed map[string]bool) tea.Cmd {
	if force || changed[c.proj.ID] {
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
		txt(string(state), th.Container(state)),
		txt(portText(cv.Port, cv.Status.HostPort), th.Value),
		c.uptime(cv),
		url,
	}
}

// uptime is how long a running container has run, from the runtime's start time.
func (c *containersPane) uptime(cv engine.ContainerView) cell {
	th := c.env.theme
	if !c.running(cv) || cv.Status.StartedAt.IsZero() {
		return txt("-", th.Muted)
	}
	// A start time ahead of this host's clock (another machine's runtime) is just now.
	return txt(span(max(c.env.now.Sub(cv.Status.StartedAt), 0).Truncate(time.Second)), th.Value)
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
