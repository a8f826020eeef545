package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/theme"
)

// The smallest screen the console lays out; below it, it says so instead of garbling.
const (
	minWidth  = 80
	minHeight = 24
)

// model is the console's root: it lays out header, breadcrumb, the pane on top of the stack,
// running actions and the status bar; routes keys (dialog, command prompt, pane) and data
// messages to whom they belong; and owns the live-update machinery (live.go). Every engine
// call runs in a tea.Cmd.
type model struct {
	env      *env
	keys     globalKeys
	help     help.Model
	header   header
	projects *projectsPane
	// stack is the breadcrumb trail; stack[0] is always projects.
	stack    []pane
	showHelp bool
	w, h     int
	status   statusLine

	dialog dialog
	cmd    cmdline
	ops    ops
	// lastContainer remembers, per project id, the container last pointed at, so tab can
	// bring its logs back after the containers pane was left.
	lastContainer map[string]string

	live  liveState
	sweep sweepSeen
}

func newModel(ctx context.Context, src source, th theme.Theme, opts Options) *model {
	e := &env{
		ctx: ctx, src: src, theme: th, idle: src.IdleTimeout(), now: src.Now(),
		loc: time.Local, readOnly: opts.ReadOnly, busy: map[string]string{},
	}
	if opts.Location != nil {
		e.loc = opts.Location
	}
	hm := help.New()
	hm.Styles = help.Styles{
		Ellipsis:       th.HelpSep,
		ShortKey:       th.HelpKey,
		ShortDesc:      th.HelpDesc,
		ShortSeparator: th.HelpSep,
		FullKey:        th.HelpKey,
		FullDesc:       th.HelpDesc,
		FullSeparator:  th.HelpSep,
	}
	pp := newProjectsPane(e)
	m := &model{
		env:      e,
		keys:     newGlobalKeys(),
		help:     hm,
		header:   header{env: e, mode: opts.Mode, store: opts.StoreName, readOnly: opts.ReadOnly},
		projects: pp,
		stack:    []pane{pp},
		cmd:      newCmdline(e),
		live:     liveState{after: tick},
		sweep:    sweepSeen{since: e.now},

		lastContainer: map[string]string{},
	}
	m.cmd.slugs = pp.slugsWithPrefix
	e.after = func(d time.Duration, msg tea.Msg) tea.Cmd { return m.live.after(d, msg) }
	return m
}

func (m *model) top() pane { return m.stack[len(m.stack)-1] }

func (m *model) Init() tea.Cmd {
	return tea.Batch(m.reload(), m.subscribe(), m.scheduleRefresh())
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.env.now = m.env.src.Now()
	cmd := m.update(msg)
	// Whatever moved the projects window, fetch usage for the rows now on screen.
	if m.top() == pane(m.projects) && !m.showHelp {
		cmd = tea.Batch(cmd, m.projects.usageCmd())
	}
	return m, cmd
}

func (m *model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.resize()
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	case tea.PasteMsg:
		return m.paste(msg)
	case projectsLoadedMsg:
		return m.onProjects(msg)
	case usageLoadedMsg:
		if err := m.projects.applyUsage(msg); err != nil {
			m.setErr(err)
		}
	case containersLoadedMsg:
		for _, p := range m.stack {
			if c, ok := p.(*containersPane); ok && c.proj.ID == msg.projectID {
				if msg.err != nil {
					m.setErr(msg.err)
				}
				return c.apply(msg)
			}
		}
	case sweepPreviewMsg:
		// The dry run says what the next sweep would do even if its pane has been left.
		if msg.err == nil {
			m.sweep.previewed(msg.rep)
		}
		if m.onStack(msg.target()) {
			return msg.deliver()
		}
	case paneMsg:
		if m.onStack(msg.target()) {
			return msg.deliver()
		}
		if full, ok := msg.(timelineFullMsg); ok {
			// The operator left the timeline meanwhile: the offer would pop up out of place.
			m.status = statusLine{at: m.env.now, kind: statusHint,
				text: fmt.Sprintf("the timeline of %s is full; open it (t) and create again to replace one", full.to.proj.Slug)}
		}
	case errMsg:
		m.setErr(msg.err)
	case hintMsg:
		m.status = statusLine{at: m.env.now, text: msg.text, kind: statusHint}
	case infoMsg:
		m.status = statusLine{at: m.env.now, text: msg.text, kind: statusInfo}
	case showMsg:
		return m.show(msg.kind, msg.project, msg.container)
	case openDialogMsg:
		m.dialog = msg.d
	case startOpMsg:
		cmd := m.ops.start(m.env, msg.spec)
		m.resize()
		if len(m.ops.running) == 1 {
			cmd = tea.Batch(cmd, m.live.after(time.Second, opTickMsg{}))
		}
		return cmd
	case opTickMsg:
		// Only the elapsed time changes; the tick lives only while actions run.
		if len(m.ops.running) > 0 {
			return m.live.after(time.Second, opTickMsg{})
		}
	case opProgressMsg:
		return m.ops.progress(msg)
	case opDoneMsg:
		return m.opDone(msg)
	case runCommandMsg:
		return m.runCommand(msg)
	default:
		return m.updateLive(msg)
	}
	return nil
}

// opTickMsg moves the elapsed time of running actions on.
type opTickMsg struct{}

// errMsg reports a failure of background work to the status line.
type errMsg struct{ err error }

func (m *model) onStack(p pane) bool {
	for _, s := range m.stack {
		if s == p {
			return true
		}
	}
	return false
}

func (m *model) opDone(msg opDoneMsg) tea.Cmd {
	r, ok := m.ops.finish(m.env, msg.id)
	m.resize()
	if !ok {
		return nil
	}
	res := msg.res
	switch {
	case res.err != nil:
		m.setErr(res.err)
	case res.info != "":
		m.status = statusLine{at: m.env.now, text: res.info, kind: statusInfo}
	}
	cmds := []tea.Cmd{m.requestReload()}
	if r.spec.projectID != "" {
		if m.live.changed == nil {
			m.live.changed = map[string]bool{}
		}
		m.live.changed[r.spec.projectID] = true
	}
	if res.then != nil {
		cmds = append(cmds, msgCmd(res.then))
	}
	return tea.Batch(cmds...)
}

func (m *model) tooSmall() bool { return m.w < minWidth || m.h < minHeight }

func (m *model) handleKey(msg tea.KeyPressMsg) tea.Cmd {
	if key.Matches(msg, m.keys.ForceQuit) {
		return tea.Quit
	}
	if m.dialog != nil {
		cmd, closed := m.dialog.update(msg)
		if closed {
			m.dialog = nil
		}
		return cmd
	}
	if m.cmd.active {
		return m.cmd.update(msg)
	}
	if m.tooSmall() {
		// Nothing to aim at on a screen that shows no pane; quitting still works.
		if key.Matches(msg, m.keys.Quit) {
			return tea.Quit
		}
		return nil
	}
	top := m.top()
	if top.capturing() {
		return top.update(msg)
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		return tea.Quit
	case m.showHelp:
		// Any other key closes help; it does not also act on the pane underneath.
		m.showHelp = false
		return nil
	case key.Matches(msg, m.keys.Help):
		m.showHelp = true
		return nil
	case key.Matches(msg, m.keys.Command):
		return m.cmd.open()
	case key.Matches(msg, m.keys.NextPane):
		return m.cycle(1)
	case key.Matches(msg, m.keys.PrevPane):
		return m.cycle(-1)
	case key.Matches(msg, m.keys.Back) && len(m.stack) > 1:
		m.pop()
		return nil
	}
	return top.update(msg)
}

func (m *model) paste(msg tea.PasteMsg) tea.Cmd {
	switch {
	case m.dialog != nil:
		return m.dialog.paste(msg)
	case m.cmd.active:
		return m.cmd.update(msg)
	case m.projects.editing && m.top() == pane(m.projects):
		return m.projects.updateInput(msg)
	}
	if lp, ok := m.top().(*logsPane); ok && lp.searching {
		return lp.updateSearch(msg)
	}
	return nil
}

func (m *model) pop() {
	m.remember()
	last := m.top()
	m.stack = m.stack[:len(m.stack)-1]
	last.close()
	m.resize()
}

func (m *model) setErr(err error) {
	m.status = statusLine{at: m.env.now, text: err.Error(), kind: statusErr}
}

// bodyHeight is what is left for the pane: header, breadcrumb, running actions and the
// status bar take the rest.
func (m *model) bodyHeight() int {
	return max(m.h-headerLines-1-statusLines-m.ops.lines(), 0)
}

func (m *model) resize() {
	m.header.setSize(m.w)
	m.help.SetWidth(m.w)
	m.cmd.setWidth(m.w)
	for _, p := range m.stack {
		p.setSize(m.w, m.bodyHeight())
	}
}

func (m *model) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.WindowTitle = "sailtui"
	if m.w <= 0 || m.h <= 0 {
		return v
	}
	if m.tooSmall() {
		v.SetContent(m.tooSmallView())
		return v
	}
	top := m.top()
	lines := make([]string, 0, m.h)
	lines = append(lines, splitLines(m.header.view(m.projects.counts, m.projects.loaded))...)
	lines = append(lines, m.breadcrumb())
	bodyTop := len(lines)
	var body []string
	if m.showHelp {
		body = splitLines(block(m.helpBody(), m.w, m.bodyHeight()))
	} else {
		body = splitLines(top.view())
	}
	if m.dialog != nil {
		box, cur := frameDialog(m.env, m.dialog, dialogWidth(m.w))
		var x, y int
		body, x, y = overlay(body, box, m.w)
		if cur != nil {
			cur.Position.X += x
			cur.Position.Y += bodyTop + y
			v.Cursor = cur
		}
	}
	lines = append(lines, body...)
	lines = append(lines, m.ops.view(m.env, m.w)...)
	statusRow := len(lines)
	var line string
	var cur *tea.Cursor
	switch {
	case m.dialog != nil:
		line = m.statusBar()
	case m.cmd.active:
		line, cur = m.cmd.view(m.w)
	case top == pane(m.projects) && m.projects.editing:
		line, cur = m.projects.filterLine()
	default:
		if lp, ok := top.(*logsPane); ok && lp.searching {
			line, cur = lp.searchLine()
		} else {
			line = m.statusBar()
		}
	}
	if cur != nil && statusRow < m.h {
		cur.Position.Y += statusRow
		v.Cursor = cur
	}
	lines = append(lines, line)
	lines = append(lines, m.shortHelp())
	v.SetContent(block(lines, m.w, m.h))
	return v
}

// statusBar is the last message with what is known of hibernation sweeps at the right; the
// message keeps the room it needs.
func (m *model) statusBar() string {
	msg := m.status.view(m.env)
	// spread keeps two columns between the two sides.
	return spread(msg, m.sweep.view(m.env, m.w-width(msg)-2), m.w)
}

func (m *model) tooSmallView() string {
	th := m.env.theme
	msg := []string{
		th.Error.Render("terminal too small"),
		th.Value.Render(fmt.Sprintf("%d×%d, need at least %d×%d", m.w, m.h, minWidth, minHeight)),
		th.Muted.Render("enlarge the window, or q to quit"),
	}
	lines := make([]string, m.h)
	start := max((m.h-len(msg))/2, 0)
	for i, l := range msg {
		if start+i < m.h {
			lines[start+i] = center(l, m.w)
		}
	}
	return block(lines, m.w, m.h)
}

// shortHelp is the bottom line: the pane's keys that fit, then always the global ones, so
// "? help" never falls off a narrow screen.
func (m *model) shortHelp() string {
	hk := m.helpKeys()
	pane, global := hk.pane.ShortHelp(), hk.globals()
	// Measured untruncated: the help model's own truncation would cut the globals first.
	wide := m.help
	wide.SetWidth(0)
	for n := len(pane); ; n-- {
		keys := append(append([]keyBinding(nil), pane[:n]...), global...)
		line := wide.ShortHelpView(keys)
		if n == 0 || width(line) <= m.w {
			return line
		}
	}
}

func (m *model) helpKeys() helpKeys {
	top := m.top()
	switch {
	case m.dialog != nil:
		return helpKeys{pane: m.dialog.keyMap(), global: m.keys, capturing: true}
	case m.cmd.active:
		return helpKeys{pane: m.cmd.keyMap(), global: m.keys, capturing: true}
	}
	return helpKeys{pane: top.keyMap(), global: m.keys, back: len(m.stack) > 1, capturing: top.capturing()}
}

func (m *model) helpBody() []string {
	th := m.env.theme
	lines := []string{th.Title.Render("Keys") + th.Muted.Render("  (any key closes; q quits)"), ""}
	lines = append(lines, splitLines(m.help.FullHelpView(m.helpKeys().FullHelp()))...)
	if m.status.text != "" {
		// The status line cuts a long message; here it is whole.
		lines = append(lines, "", th.Title.Render("Last message"))
		for _, l := range wrapText(sanitize(m.status.text), max(m.w-2, 10)) {
			lines = append(lines, "  "+th.Value.Render(l))
		}
	}
	lines = append(lines, "", th.Title.Render("Commands")+th.Muted.Render("  (: then tab completes)"))
	for _, c := range commands {
		name := ":" + c.name
		if c.args != "" {
			name += " " + c.args
		}
		alias := ""
		if len(c.aliases) > 0 {
			alias = " (" + strings.Join(c.aliases, ", ") + ")"
		}
		lines = append(lines, th.HelpKey.Render(fmt.Sprintf("%-22s", name))+th.HelpDesc.Render(c.desc+alias))
	}
	return lines
}

func (m *model) breadcrumb() string {
	th := m.env.theme
	parts := make([]string, len(m.stack))
	for i, p := range m.stack {
		parts[i] = sanitize(p.crumb())
	}
	return th.Title.Render(strings.Join(parts, " › ")) + "  " + th.Muted.Render(sanitize(m.top().info()))
}

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
	case kindContainers, kindTimeline, kindDescribe:
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
	if lp, ok := p.(*logsPane); ok {
		return lp.container == container
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
		switch s := s.(type) {
		case *logsPane:
			m.lastContainer[s.proj.ID] = s.container
		case *containersPane:
			if cv, ok := s.selected(); ok {
				m.lastContainer[s.proj.ID] = cv.Name
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
	switch msg.cmd.name {
	case "quit":
		return tea.Quit
	case "help":
		m.showHelp = true
	case "projects":
		for len(m.stack) > 1 {
			m.pop()
		}
	case "sweep":
		return m.show(kindSweep, engine.Project{}, "")
	case "doctor":
		return m.show(kindDoctor, engine.Project{}, "")
	case "containers", "timeline", "describe":
		if p, ok := project(); ok {
			return m.show(map[string]paneKind{"containers": kindContainers, "timeline": kindTimeline, "describe": kindDescribe}[msg.cmd.name], p, "")
		}
	case "logs":
		p, ok := m.currentProject()
		if !ok {
			return hintCmd(":logs: no project selected")
		}
		name := msg.arg
		if name == "" {
			name = m.knownContainer(p)
		}
		if name != "" {
			return m.show(kindLogs, p, name)
		}
		// The containers are not known yet: list them, then open the first one's logs.
		cmd := m.show(kindContainers, p, "")
		if c, ok := m.top().(*containersPane); ok {
			if c.loaded && len(c.rows) > 0 {
				return tea.Batch(cmd, m.show(kindLogs, p, c.rows[0].Name))
			}
			c.thenLogs = "*"
		}
		return cmd
	}
	return nil
}
