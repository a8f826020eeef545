package ui

import (
	"context"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/theme"
)

// model is the console's root: it lays out header, breadcrumb, the pane on top of the stack and
// the status bar; routes data messages to the panes they belong to; and owns the live-update
// machinery (live.go). Every engine call runs in a tea.Cmd.
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
	lastErr  errLine

	live liveState
}

func newModel(ctx context.Context, src source, th theme.Theme, opts Options) *model {
	e := &env{ctx: ctx, src: src, theme: th, idle: src.IdleTimeout(), now: src.Now()}
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
	return &model{
		env:      e,
		keys:     newGlobalKeys(),
		help:     hm,
		header:   header{env: e, mode: opts.Mode, store: opts.StoreName, readOnly: opts.ReadOnly},
		projects: pp,
		stack:    []pane{pp},
		live:     liveState{after: tick},
	}
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
	case projectsLoadedMsg:
		return m.onProjects(msg)
	case usageLoadedMsg:
		if err := m.projects.applyUsage(msg); err != nil {
			m.setErr(err)
		}
	case containersLoadedMsg:
		if c, ok := m.top().(*containersPane); ok && c.project.ID == msg.projectID {
			if msg.err != nil {
				m.setErr(msg.err)
			}
			return c.apply(msg)
		}
	case tea.PasteMsg:
		if m.projects.editing && m.top() == pane(m.projects) {
			return m.projects.updateInput(msg)
		}
	case openContainersMsg:
		if m.top() != pane(m.projects) {
			return nil // a second enter pressed before the first drill-in arrived
		}
		c := newContainersPane(m.env, msg.project)
		m.stack = append(m.stack, c)
		m.resize()
		return c.load()
	default:
		return m.updateLive(msg)
	}
	return nil
}

func (m *model) handleKey(msg tea.KeyPressMsg) tea.Cmd {
	if key.Matches(msg, m.keys.ForceQuit) {
		return tea.Quit
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
	case key.Matches(msg, m.keys.Back) && len(m.stack) > 1:
		m.stack = m.stack[:len(m.stack)-1]
		m.resize()
		return nil
	}
	return top.update(msg)
}

func (m *model) setErr(err error) {
	m.lastErr = errLine{at: m.env.now, text: err.Error()}
}

// bodyHeight is what is left for the pane: header, breadcrumb and status bar take the rest.
func (m *model) bodyHeight() int { return max(m.h-headerLines-1-statusLines, 0) }

func (m *model) resize() {
	m.header.setSize(m.w)
	m.help.SetWidth(m.w)
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
	top := m.top()
	lines := make([]string, 0, m.h)
	lines = append(lines, splitLines(m.header.view(m.projects.counts, m.projects.loaded))...)
	lines = append(lines, m.breadcrumb())
	if m.showHelp {
		lines = append(lines, splitLines(block(m.helpBody(), m.w, m.bodyHeight()))...)
	} else {
		lines = append(lines, splitLines(top.view())...)
	}
	statusRow := len(lines)
	if pp, ok := top.(*projectsPane); ok && pp.editing {
		line, cur := pp.filterLine()
		lines = append(lines, line)
		if cur != nil && statusRow < m.h {
			cur.Position.Y += statusRow
			v.Cursor = cur
		}
	} else {
		lines = append(lines, m.lastErr.view(m.env))
	}
	lines = append(lines, m.help.ShortHelpView(m.helpKeys().ShortHelp()))
	v.SetContent(block(lines, m.w, m.h))
	return v
}

func (m *model) helpKeys() helpKeys {
	top := m.top()
	return helpKeys{pane: top.keyMap(), global: m.keys, back: len(m.stack) > 1, capturing: top.capturing()}
}

func (m *model) helpBody() []string {
	th := m.env.theme
	lines := []string{th.Title.Render("Keys") + th.Muted.Render("  (any key closes; q quits)"), ""}
	return append(lines, splitLines(m.help.FullHelpView(m.helpKeys().FullHelp()))...)
}

func (m *model) breadcrumb() string {
	th := m.env.theme
	parts := make([]string, len(m.stack))
	for i, p := range m.stack {
		parts[i] = sanitize(p.crumb())
	}
	return th.Title.Render(strings.Join(parts, " › ")) + "  " + th.Muted.Render(sanitize(m.top().info()))
}
