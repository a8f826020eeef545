package ui

import (
	"context"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

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
	env  *env
	keys globalKeys
	help help.Model
	// helpLine is the short help as last drawn, and what it was drawn from.
	helpLine struct{ key, line string }
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
		loc: time.Local, readOnly: opts.ReadOnly, busy: map[string]string{}, shell: opts.Shell,
		saveDir: opts.SaveDir,
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
		live:     liveState{after: tick, watchEvery: watchInterval, checked: new(atomic.Int64), current: new(currentFlag)},
		sweep:    sweepSeen{since: e.now},

		lastContainer: map[string]string{},
	}
	if src.EventsShared() {
		m.live.watchEvery = sharedWatchInterval
	}
	m.header.checked, m.header.current = m.live.checked, m.live.current
	m.cmd.slugs = pp.slugsWithPrefix
	m.cmd.containers = m.containerNames
	e.after = func(d time.Duration, msg tea.Msg) tea.Cmd { return m.live.after(d, msg) }
	return m
}

func (m *model) top() pane { return m.stack[len(m.stack)-1] }

func (m *model) Init() tea.Cmd {
	return tea.Batch(m.reload(), m.subscribe(), m.scheduleRefresh(), m.watchWrites())
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.env.now = m.env.src.Now()
	cmd := m.update(msg)
	// Whatever moved the projects window, fetch usage for the rows now on screen.
	if m.top() == pane(m.projects) && !m.showHelp {
		cmd = tea.Batch(cmd, m.projects.usageCmd())
	}
	return m, tea.Batch(cmd, m.paneChanged(), m.scheduleClock())
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
	case paneMsg:
		return m.route(msg)
	case dryRunMsg:
		m.sweep.previewed(msg.rep)
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
	case ranMsg:
		m.cmd.succeeded(msg.line)
		if msg.then != nil {
			return m.update(msg.then)
		}
	default:
		return m.updateLive(msg)
	}
	return nil
}

// opTickMsg moves the elapsed time of running actions on.
type opTickMsg struct{}

// errMsg reports a failure of background work to the status line.
type errMsg struct{ err error }

// route delivers an answer to the pane that asked for it while that pane is on screen; once
// it has left, only a strayMsg still has its say.
func (m *model) route(msg paneMsg) tea.Cmd {
	if m.onStack(msg.target()) {
		return msg.deliver()
	}
	if s, ok := msg.(strayMsg); ok {
		return s.stray()
	}
	return nil
}

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
		m.status.project = r.spec.projectID
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
	if m.capturing() {
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
	case key.Matches(msg, m.keys.Last):
		return m.lastCommand()
	case key.Matches(msg, m.keys.NextPane):
		return m.cycle(1)
	case key.Matches(msg, m.keys.PrevPane):
		return m.cycle(-1)
	case key.Matches(msg, m.keys.Back) && len(m.stack) > 1 && !m.paneTakesEsc():
		m.pop()
		return nil
	}
	return top.update(msg)
}

// paste goes where typed text would: the dialog, the command prompt, else the pane on top.
func (m *model) paste(msg tea.PasteMsg) tea.Cmd {
	switch {
	case m.dialog != nil:
		return m.dialog.paste(msg)
	case m.cmd.active:
		return m.cmd.update(msg)
	}
	return m.top().paste(msg)
}

// paneEsc is what esc does in the pane on top when that is not going back (clearing a filter
// or a search); ok is false when esc goes back.
func (m *model) paneEsc() (keyBinding, bool) {
	if e, ok := m.top().(escTaker); ok {
		return e.escKey()
	}
	return keyBinding{}, false
}

func (m *model) paneTakesEsc() bool {
	_, ok := m.paneEsc()
	return ok
}

// capturing is true while the pane on top takes text input.
func (m *model) capturing() bool {
	_, _, ok := m.top().inputLine()
	return ok
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
