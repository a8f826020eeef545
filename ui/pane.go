package ui

import (
	"context"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

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
}

// pane is one screen of the console's breadcrumb stack (Projects › slug › Containers). The
// root model owns layout, global keys and data routing; a pane owns its keys and rendering.
type pane interface {
	// crumb names the pane in the breadcrumb; info is shown after it (counts, filter).
	crumb() string
	info() string
	setSize(w, h int)
	// update handles a key press for the pane.
	update(msg tea.KeyPressMsg) tea.Cmd
	// view renders exactly the size last given to setSize.
	view() string
	keyMap() help.KeyMap
	// capturing is true while the pane takes text input, so global keys such as q and ? are
	// typed rather than acted upon.
	capturing() bool
	// refresh re-reads the pane's data: always when force, else when one of the changed
	// project ids concerns it.
	refresh(force bool, changed map[string]bool) tea.Cmd
}

// staticKeys is a help.KeyMap from fixed slices.
type staticKeys struct {
	short []keyBinding
	full  [][]keyBinding
}

func (s staticKeys) ShortHelp() []keyBinding  { return s.short }
func (s staticKeys) FullHelp() [][]keyBinding { return s.full }
