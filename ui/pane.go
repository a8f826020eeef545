package ui

import (
	"context"
	"os/exec"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/theme"
)

// env is what every pane shares: where data comes from, how it looks, and the time the
// current frame is drawn for (taken from the source's clock, so tests get a fixed "now").
type env struct {
	ctx   context.Context
	src   source
	theme theme.Theme
	idle  time.Duration
	now   time.Time
	// loc is the zone clock times are shown in (UTC in tests, so goldens do not move).
	loc *time.Location
	// readOnly drops the mutating actions when panes register them.
	readOnly bool
	// busy names the action this console runs on a project (by id), so panes do not offer a
	// second one the engine would refuse as busy.
	busy map[string]string
	// after delivers msg once d has passed (tea.Tick; tests catch what was scheduled).
	after func(d time.Duration, msg tea.Msg) tea.Cmd
	// shell is the command a container's shell runs in (Options.Shell); nil: none.
	shell func(project, container string) *exec.Cmd
	// saveDir is where saved logs go (Options.SaveDir).
	saveDir string
}

// busyWhy tells why a project cannot take an action now ("" when it can): this console or
// another process holds it.
func (e *env) busyWhy(p engine.Project) string {
	if t, ok := e.busy[p.ID]; ok {
		return "busy: " + t
	}
	if p.OpID != "" {
		return "busy: " + string(p.OpKind) + " running"
	}
	return ""
}

// paneKind names the console's panes, in tab order.
type paneKind int

const (
	kindProjects paneKind = iota
	kindContainers
	kindTimeline
	kindLogs
	kindDescribe
	kindHistory
	kindSweep
	kindDoctor
)

// pane is one screen of the console's breadcrumb stack (Projects › slug › Timeline). The
// root model owns layout, global keys and data routing; a pane owns its keys, its text input
// and its rendering.
type pane interface {
	kind() paneKind
	// crumb names the pane in the breadcrumb; info is shown after it (counts, filter).
	crumb() string
	info() string
	setSize(w, h int)
	// update handles a key press for the pane.
	update(msg tea.KeyPressMsg) tea.Cmd
	// view renders exactly the size last given to setSize.
	view() string
	keyMap() help.KeyMap
	// inputLine is the text input the pane is taking (a filter, a search) as the status bar
	// shows it, with where its cursor is on that line; ok is false when it takes none. While
	// it takes one, global keys such as q and ? are typed rather than acted upon.
	inputLine() (line string, cur *tea.Cursor, ok bool)
	// paste hands the pane pasted text; one taking no text input ignores it.
	paste(msg tea.PasteMsg) tea.Cmd
	// refresh re-reads the pane's data: always when force, else when one of the changed
	// project ids concerns it.
	refresh(force bool, changed map[string]bool) tea.Cmd
	// open starts the pane's work when it is shown (its first load, a log stream); close
	// stops whatever is still running for it when it leaves the screen.
	open() tea.Cmd
	close()
	// project is the project the pane is about (the selected one in Projects).
	project() (engine.Project, bool)
}

// containerPane is a pane about one container of its project at a time (logs: the one it
// shows; containers: the one under the cursor). A capability asked for with a type assertion,
// as k9s does, since most panes have no container to point at.
type containerPane interface {
	pane
	pointsAt() (name string, ok bool)
}

// paneMsg is a message addressed to one pane instance: every answer to a pane's command is one,
// routed the same way. It is dropped when that pane has left the screen (a load answering
// after esc), unless it is a strayMsg.
type paneMsg interface {
	target() pane
	deliver() tea.Cmd
}

// strayMsg is a paneMsg with something to say even when its pane has left the screen (an offer
// that would pop up out of place becomes a hint; a dry run still informs the status bar).
type strayMsg interface {
	paneMsg
	stray() tea.Cmd
}

// noInput is embedded by panes that never take text input.
type noInput struct{}

func (noInput) inputLine() (string, *tea.Cursor, bool) { return "", nil, false }
func (noInput) paste(tea.PasteMsg) tea.Cmd             { return nil }

// loadGate runs a pane's loads one at a time: a load asked for while one runs is remembered
// and run once it ends, so a burst of refreshes costs two loads, not one per refresh, and an
// older answer never lands after a newer one.
type loadGate struct{ loading, again bool }

// start tells whether a load may start now; when not, one more is remembered.
func (g *loadGate) start() bool {
	if g.loading {
		g.again = true
		return false
	}
	g.loading = true
	return true
}

// load is the command that runs fetch (the engine calls) under loadTimeout; nil when a load is
// running already, and one more is remembered instead. fetch runs off the event loop, so it
// must not read the pane's fields: take what it needs (ids, the source) before.
func (g *loadGate) load(ctx context.Context, fetch func(context.Context) tea.Msg) tea.Cmd {
	if !g.start() {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		return fetch(ctx)
	}
}

// done ends the running load and tells whether another was asked for meanwhile.
func (g *loadGate) done() (again bool) {
	again = g.again
	g.loading, g.again = false, false
	return again
}

// showMsg asks the root to show a pane for a project (and container, for logs).
type showMsg struct {
	kind      paneKind
	project   engine.Project
	container string
}

func showCmd(k paneKind, p engine.Project, container string) tea.Cmd {
	return msgCmd(showMsg{kind: k, project: p, container: container})
}

// staticKeys is a help.KeyMap from fixed slices.
type staticKeys struct {
	short []keyBinding
	full  [][]keyBinding
}

func (s staticKeys) ShortHelp() []keyBinding  { return s.short }
func (s staticKeys) FullHelp() [][]keyBinding { return s.full }
