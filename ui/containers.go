package ui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/theme"
)

// containersKeys are the Containers pane's action keys; the table has the navigation keys and
// esc (back) is global.
type containersKeys struct {
	Logs      key.Binding
	StartStop key.Binding
	Shell     key.Binding
	Restart   key.Binding
	CopyURL   key.Binding
	Timeline  key.Binding
}

// containersPane is one project's containers.
type containersPane struct {
	tablePane[engine.ContainerView]
	proj engine.Project
	// thenLogs opens the first container's logs once the list is in: :logs asked for logs
	// before the containers were known.
	thenLogs bool
	// acting names, per container, the start or stop this pane runs on it ("stopping…"),
	// shown in place of its state until the action ends and the list is read again.
	acting map[string]string
	// res is what the running containers use (containers_resources.go).
	res resources
}

var containerColumns = []column{
	{title: "NAME", min: 8, max: 20, fit: true},
	// An app's directory, a service's image and data volume, an external service's endpoint.
	{title: "SOURCE", min: 9, max: 32, drop: 2, fit: true},
	// Wide enough for "stopping…" while an action runs, and for "exited 127".
	{title: "STATE", min: 9, max: 10, fit: true},
	{title: "PORT", min: 11, max: 11, drop: 5},
	{title: "UPTIME", min: 6, max: 7, drop: 6},
	// What a running container uses: percent of one core ("150%") and memory ("1.2G"). At 80
	// columns they stay and UPTIME and PORT go (the local URL has the port).
	{title: "CPU", min: 5, max: 5, drop: 4},
	{title: "MEM", min: 4, max: 4, drop: 3},
	// Wide enough for a local URL (http://127.0.0.1:41001/) at 80 columns: a cut URL cannot
	// be copied.
	{title: "URL", min: 23, drop: 1},
}

func newContainersPane(e *env, p engine.Project) *containersPane {
	c := &containersPane{proj: p}
	c.tablePane = tablePane[engine.ContainerView]{
		env:      e,
		navKeys:  newNavKeys(),
		filter:   newFilterBox(e),
		noun:     "container",
		cols:     containerColumns,
		rowID:    func(cv engine.ContainerView) string { return cv.Name },
		rowCells: c.cells,
		empty:    func() string { return "this project has no containers" },
		waiting:  "loading containers…",
	}
	k := containersKeys{
		Logs:      key.NewBinding(key.WithKeys("enter", "l"), key.WithHelp("enter/l", "logs")),
		StartStop: key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "start/stop")),
		Shell:     key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "shell")),
		Restart:   key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "restart")),
		CopyURL:   key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy URL")),
		Timeline:  key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "timeline")),
	}
	c.actions = newActions(e.readOnly,
		action{key: k.Logs, why: c.whySelected, do: c.openLogs},
		action{key: k.StartStop, mutates: true, why: c.whyStartStop, label: c.startStopLabel, do: c.startStop},
		// A shell can change the project's files: read-only mode keeps it out, as the engine
		// refuses exec there.
		action{key: k.Shell, mutates: true, why: c.whyShell, do: c.shell, extra: true},
		action{key: k.Restart, mutates: true, why: c.whyRunning, do: c.restart, extra: true},
		action{key: k.CopyURL, why: c.whyCopyURL, do: c.copyURL, extra: true},
		action{key: k.Timeline, do: func() tea.Cmd { return showCmd(kindTimeline, c.proj, "") }},
	)
	return c
}

func (c *containersPane) kind() paneKind                  { return kindContainers }
func (c *containersPane) crumb() string                   { return c.proj.Slug }
func (c *containersPane) open() tea.Cmd                   { return tea.Batch(c.load(), c.loadResources()) }
func (c *containersPane) project() (engine.Project, bool) { return c.proj, true }

// pointsAt is the container under the cursor.
func (c *containersPane) pointsAt() (string, bool) {
	cv, ok := c.selected()
	return cv.Name, ok
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
	done := containerActedMsg{to: c, name: name}
	if c.acting == nil {
		c.acting = map[string]string{}
	}
	if c.running(cv) {
		c.acting[name] = "stopping…"
		return startOp(opSpec{title: "stop " + p.Slug + "/" + name, projectID: p.ID, run: func(ctx context.Context) opResult {
			if err := src.StopContainer(ctx, p.ID, name); err != nil {
				return opResult{err: err, then: done}
			}
			return opResult{info: p.Slug + "/" + name + " stopped", then: done}
		}})
	}
	c.acting[name] = "starting…"
	return startOp(opSpec{title: "start " + p.Slug + "/" + name, projectID: p.ID, run: func(ctx context.Context) opResult {
		if _, err := src.StartContainer(ctx, p.ID, name); err != nil {
			return opResult{err: err, then: done}
		}
		return opResult{info: p.Slug + "/" + name + " started", then: done}
	}})
}

// containerActedMsg is a start or stop of one container ended (well or not): the pane reads
// its containers at once rather than at the next refresh, so the row says what happened.
type containerActedMsg struct {
	to   *containersPane
	name string
}

func (m containerActedMsg) target() pane { return m.to }
func (m containerActedMsg) deliver() tea.Cmd {
	delete(m.to.acting, m.name)
	return m.to.load()
}

func (c *containersPane) info() string {
	s := "Containers"
	switch {
	case c.loaded:
		s += "  " + c.count("")
	case c.gate.loading:
		s += "  loading…"
	}
	s += "  " + engine.DisplayStatus(c.proj) + c.resourcesInfo()
	if engine.StartFailed(c.proj) {
		s += "  " + strings.TrimPrefix(c.proj.StatusReason, "start failed: ")
	}
	return s
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
	src, id := c.env.src, c.proj.ID
	return c.gate.load(c.env.ctx, func(ctx context.Context) tea.Msg {
		p, rows, err := src.ProbeContainers(ctx, id)
		return containersLoadedMsg{to: c, project: p, rows: rows, err: err}
	})
}

// apply takes a load's answer; it returns a follow-up load when one was asked for meanwhile.
func (c *containersPane) apply(msg containersLoadedMsg) tea.Cmd {
	var cmds []tea.Cmd
	if msg.err != nil {
		cmds = append(cmds, msgCmd(errMsg{err: msg.err}))
	} else {
		c.proj = msg.project
	}
	c.set(msg.rows, msg.err)
	if c.thenLogs && c.loaded {
		c.thenLogs = false
		cmds = append(cmds, c.firstLogs())
	}
	if c.gate.done() {
		cmds = append(cmds, c.load())
	}
	return tea.Batch(cmds...)
}

// firstLogs opens the first container's logs now when the list is in, else once it is (:logs
// before the containers were known).
func (c *containersPane) firstLogs() tea.Cmd {
	if cv, ok := c.first(); ok {
		return showCmd(kindLogs, c.proj, cv.Name)
	}
	if c.loaded {
		return hintCmd(fmt.Sprintf("logs: %s has no containers", c.proj.Slug))
	}
	c.thenLogs = true
	return nil
}

// selectName puts the cursor on the named container, now or once the list is in.
func (c *containersPane) selectName(name string) { c.selectID(name) }

// refresh reads the containers again on a tick (force) or an event about the project, and
// what they use on a tick only (see resources).
func (c *containersPane) refresh(force bool, changed map[string]bool) tea.Cmd {
	switch {
	case force:
		return tea.Batch(c.load(), c.loadResources())
	case changed[c.proj.ID]:
		return c.load()
	}
	return nil
}

func (c *containersPane) cells(cv engine.ContainerView) []cell {
	th := &c.env.theme
	state := cv.Status.State
	if state == "" {
		state = engine.ContainerUnknown
	}
	// Unrouted: no router serves the route, the loopback port is what works here.
	url := txt(shownURL(cv), &th.Value)
	switch {
	case cv.Status.Detail != "" && state != engine.ContainerRunning:
		// Why it does not run (ImagePullBackOff, a crash loop...) matters more than a URL
		// that does not answer.
		url = txt(cv.Status.Detail, &th.Muted)
	case shownURL(cv) != "":
		// The URL it has, as set above.
	case cv.Status.URL == "" && cv.Status.Detail != "":
		url = txt(cv.Status.Detail, &th.Muted)
	case cv.Status.URL == "":
		url = txt("-", &th.Muted)
	}
	if a := cv.Status.PortAnswers; a != nil && !*a && state == engine.ContainerRunning {
		// Running, but nothing answers on its port (still compiling, or listening elsewhere):
		// its URL is not live.
		url = append(cell{{text: "not answering ", style: &th.Error}}, seg{text: url[0].text, style: &th.Muted})
	}
	stateText := string(state)
	if state == engine.ContainerExited {
		stateText += " " + strconv.Itoa(cv.Status.ExitCode)
	}
	stateCell := txt(stateText, th.Container(state))
	if doing, ok := c.acting[cv.Name]; ok {
		stateCell = txt(doing, &th.Hint)
	}
	name := txt(cv.Name, &th.Value)
	if cv.Primary {
		name = append(name, seg{text: " *", style: &th.Hint})
	}
	cpu, mem := c.resourceCells(cv)
	return []cell{
		name,
		containerSource(cv, th),
		stateCell,
		txt(portText(servicePort(cv), cv.Status.HostPort), &th.Value),
		c.uptime(cv),
		cpu,
		mem,
		url,
	}
}

// containerSource is what a container runs from: an app's directory; a service's image and
// the volume its data lives in; the endpoint of an external service, which runs elsewhere.
func containerSource(cv engine.ContainerView, th *theme.Theme) cell {
	switch cv.Kind {
	case engine.KindService:
		vol := cv.Status.Volume
		if vol == "" {
			vol = cv.DataPath
		}
		return cell{{text: cv.Image, style: &th.Value}, {text: " vol " + vol, style: &th.Muted}}
	case engine.KindExternal:
		return cell{{text: "external ", style: &th.Muted}, {text: cv.Endpoint, style: &th.Value}}
	}
	return txt(cv.Directory, &th.Value)
}

// uptime is how long a running container has run, from the runtime's start time.
func (c *containersPane) uptime(cv engine.ContainerView) cell {
	th := &c.env.theme
	if !c.running(cv) || cv.Status.StartedAt.IsZero() {
		return txt("-", &th.Muted)
	}
	// A start time ahead of this host's clock (another machine's runtime) is just now.
	return txt(span(max(c.env.now.Sub(cv.Status.StartedAt), 0).Truncate(time.Second)), &th.Value)
}

// servicePort is the port the service listens on: the runtime's word when it has one (the
// port a docker container was made with), else the container's own.
func servicePort(cv engine.ContainerView) int {
	if cv.Status.Port > 0 {
		return cv.Status.Port
	}
	return cv.Port
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
