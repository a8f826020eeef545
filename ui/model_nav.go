package ui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// currentProject is the project the operator is looking at: the pane's, else the selected one.
func (m *model) currentProject() (engine.Project, bool) {
	if p, ok := m.top().project(); ok {
		return p, true
	}
	return m.projects.selected()
}

// show puts a pane on screen with its canonical trail behind it (Projects › slug › Timeline;
// Projects › slug › container › Logs), reusing the panes already open for the same thing so a
// tab back and forth keeps their place and their streams.
func (m *model) show(k paneKind, p engine.Project, container string) tea.Cmd {
	type want struct {
		kind      paneKind
		container string
	}
	var path []want
	switch k {
	case kindContainers, kindTimeline, kindDescribe, kindHistory:
		path = []want{{kind: k}}
	case kindLogs:
		path = []want{{kind: kindContainers}, {kind: kindLogs, container: container}}
	case kindSweep, kindDoctor:
		path = []want{{kind: k}}
	}
	if p.ID != "" {
		m.projects.selectID(p.ID)
	}
	next := []pane{m.projects}
	var cmds []tea.Cmd
	for _, w := range path {
		var found pane
		for _, s := range m.stack[1:] {
			if paneIs(s, w.kind, p.ID, w.container) {
				found = s
			}
		}
		if found == nil {
			found = m.newPane(w.kind, p, w.container)
			cmds = append(cmds, found.open())
		}
		if c, ok := found.(*containersPane); ok && container != "" {
			c.selectName(container)
		}
		next = append(next, found)
	}
	m.remember()
	for _, s := range m.stack {
		if !containsPane(next, s) {
			s.close()
		}
	}
	m.stack = next
	m.showHelp = false
	m.resize()
	return tea.Batch(cmds...)
}

func containsPane(ps []pane, p pane) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

// paneIs tells whether p shows kind k for project id (and container, for logs).
func paneIs(p pane, k paneKind, id, container string) bool {
	if p.kind() != k {
		return false
	}
	if k == kindSweep || k == kindDoctor {
		return true
	}
	pr, _ := p.project()
	if pr.ID != id {
		return false
	}
	if cp, ok := p.(containerPane); ok && k == kindLogs {
		name, _ := cp.pointsAt()
		return name == container
	}
	return true
}

func (m *model) newPane(k paneKind, p engine.Project, container string) pane {
	switch k {
	case kindContainers:
		return newContainersPane(m.env, p)
	case kindTimeline:
		return newTimelinePane(m.env, p)
	case kindLogs:
		return newLogsPane(m.env, p, container)
	case kindDescribe:
		return newDescribePane(m.env, p)
	case kindHistory:
		return newHistoryPane(m.env, p)
	case kindSweep:
		return newSweepPane(m.env)
	case kindDoctor:
		return newDoctorPane(m.env)
	}
	return m.projects
}

// tabOrder is the order tab walks the panes of the current project in.
var tabOrder = []paneKind{kindProjects, kindContainers, kindTimeline, kindLogs}

// cycle shows the next (dir 1) or previous (-1) pane of the current project; logs are in the
// cycle only once a container is known.
func (m *model) cycle(dir int) tea.Cmd {
	p, ok := m.currentProject()
	if !ok {
		return hintCmd("no project selected")
	}
	container := m.knownContainer(p)
	cur := 0
	for i, k := range tabOrder {
		if k == m.top().kind() {
			cur = i
		}
	}
	for step := 1; step <= len(tabOrder); step++ {
		k := tabOrder[((cur+dir*step)%len(tabOrder)+len(tabOrder))%len(tabOrder)]
		if k == kindLogs && container == "" {
			continue
		}
		if k == kindProjects {
			for len(m.stack) > 1 {
				m.pop()
			}
			return nil
		}
		return m.show(k, p, container)
	}
	return nil
}

// remember notes the containers pointed at on screen before the panes showing them go.
func (m *model) remember() {
	for _, s := range m.stack {
		if cp, ok := s.(containerPane); ok {
			if name, ok := cp.pointsAt(); ok {
				pr, _ := s.project()
				m.lastContainer[pr.ID] = name
			}
		}
	}
}

// knownContainer is the container the operator last pointed at in project p, if any.
func (m *model) knownContainer(p engine.Project) string {
	m.remember()
	return m.lastContainer[p.ID]
}

// runCommand carries out a `:` command.
func (m *model) runCommand(msg runCommandMsg) tea.Cmd {
	project := func() (engine.Project, bool) {
		if msg.arg == "" {
			p, ok := m.currentProject()
			if !ok {
				m.status = statusLine{at: m.env.now, text: ":" + msg.cmd.name + ": no project selected", kind: statusHint}
			}
			return p, ok
		}
		p, ok := m.projects.bySlug(msg.arg)
		if !ok {
			m.setErr(fmt.Errorf(":%s: no project %q: %w", msg.cmd.name, msg.arg, engine.ErrNotFound))
		}
		return p, ok
	}
	// What ends here ran; an undelete and a :logs NAME are known to have run only once they
	// answer (ranMsg).
	ran := func() { m.cmd.succeeded(msg.line) }
	switch msg.cmd.name {
	case "quit":
		return tea.Quit
	case "help":
		ran()
		m.showHelp = true
	case "projects":
		ran()
		for len(m.stack) > 1 {
			m.pop()
		}
	case "sweep":
		ran()
		return m.show(kindSweep, engine.Project{}, "")
	case "doctor":
		ran()
		return m.show(kindDoctor, engine.Project{}, "")
	case "undelete":
		return m.undeleteProject(msg.line, msg.arg)
	case "containers", "timeline", "describe", "history":
		if p, ok := project(); ok {
			ran()
			return m.show(map[string]paneKind{"containers": kindContainers, "timeline": kindTimeline, "describe": kindDescribe, "history": kindHistory}[msg.cmd.name], p, "")
		}
	case "logs":
		p, ok := m.currentProject()
		if !ok {
			return hintCmd(":logs: no project selected")
		}
		if msg.arg != "" {
			return m.logsOf(msg.line, p, msg.arg)
		}
		ran()
		if name := m.knownContainer(p); name != "" {
			return m.show(kindLogs, p, name)
		}
		// No container pointed at yet: the containers pane opens the first one's logs, once
		// it has listed them.
		cmd := m.show(kindContainers, p, "")
		if c, ok := m.top().(*containersPane); ok {
			return tea.Batch(cmd, c.firstLogs())
		}
		return cmd
	}
	return nil
}

// logsOf shows the log of container name of project p once the runtime says p has it (the
// command line that asked for it then ran); a name it does not have is refused with the ones
// it has, rather than opening a pane that retries forever.
func (m *model) logsOf(line string, p engine.Project, name string) tea.Cmd {
	ctx, src := m.env.ctx, m.env.src
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		pr, cs, err := src.Containers(ctx, p.ID)
		if err != nil {
			return errMsg{err: fmt.Errorf(":logs %s: %w", name, err)}
		}
		names := make([]string, len(cs))
		for i, c := range cs {
			if c.Name == name {
				return ranMsg{line: line, then: showMsg{kind: kindLogs, project: pr, container: name}}
			}
			names[i] = c.Name
		}
		has := "it has none"
		if len(names) > 0 {
			has = "it has " + strings.Join(names, ", ")
		}
		return hintMsg{text: fmt.Sprintf(":logs: %s has no container %q; %s", pr.Slug, name, has)}
	}
}

// containerNames are the containers known of the current project (from a containers pane on
// screen), for completing :logs.
func (m *model) containerNames() []string {
	p, ok := m.currentProject()
	if !ok {
		return nil
	}
	for _, s := range m.stack {
		if c, ok := s.(*containersPane); ok && c.proj.ID == p.ID && c.loaded {
			out := make([]string, len(c.rows))
			for i, r := range c.rows {
				out[i] = r.Name
			}
			return out
		}
	}
	if name := m.lastContainer[p.ID]; name != "" {
		return []string{name}
	}
	return nil
}

// lastCommand is `-`: the previous command line that ran without an error again (k9s: it
// toggles between the last two).
func (m *model) lastCommand() tea.Cmd {
	line, ok := m.cmd.last()
	if !ok {
		return hintCmd("no command has run yet (: runs one; - then runs the previous one that worked again)")
	}
	run, why := parseCommand(line)
	if why != "" {
		return hintCmd(why)
	}
	m.cmd.remember(line)
	return msgCmd(run)
}

// undeleteProject brings removed project slug back (the CLI's project undelete), asked for by
// the command line line: it is not in the list, so it is named, not selected. Its return
// shows through the engine's event.
func (m *model) undeleteProject(line, slug string) tea.Cmd {
	switch {
	case m.env.readOnly:
		return hintCmd("undelete: " + readOnlyHint)
	case slug == "":
		return hintCmd(":undelete: name the removed project, :undelete SLUG")
	}
	src := m.env.src
	return startOp(opSpec{title: "undelete " + slug, run: func(ctx context.Context) opResult {
		p, err := src.UndeleteProject(ctx, slug)
		if err != nil {
			return opResult{err: err}
		}
		return opResult{info: fmt.Sprintf("%s is back, %s on its final snapshot; w wakes it", p.Slug, p.Status), then: ranMsg{line: line}}
	}})
}
