package ui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// globalKeys work in every pane (unless a pane is taking text input).
type globalKeys struct {
	Quit      key.Binding
	ForceQuit key.Binding
	Help      key.Binding
	Back      key.Binding
	Command   key.Binding
	Last      key.Binding
	NextPane  key.Binding
	PrevPane  key.Binding
}

func newGlobalKeys() globalKeys {
	return globalKeys{
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Command:   key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "command")),
		Last:      key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "last command")),
		NextPane:  key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane:  key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
	}
}

// navKeys move through a list; every list pane embeds them.
type navKeys struct {
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
}

func newNavKeys() navKeys {
	return navKeys{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "bottom")),
	}
}

func (k navKeys) bindings() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}
}

// handle moves l for a navigation key and reports whether the key was one.
func (k navKeys) handle(msg tea.KeyPressMsg, l *listNav) bool {
	switch {
	case key.Matches(msg, k.Up):
		l.move(-1)
	case key.Matches(msg, k.Down):
		l.move(1)
	case key.Matches(msg, k.PageUp):
		l.page(-1)
	case key.Matches(msg, k.PageDown):
		l.page(1)
	case key.Matches(msg, k.Top):
		l.top()
	case key.Matches(msg, k.Bottom):
		l.bottom()
	default:
		return false
	}
	return true
}

// helpKeys is the help shown for the pane on top: its own keys, then the global ones.
type helpKeys struct {
	pane   help.KeyMap
	global globalKeys
	// back is offered only when there is somewhere to go back to.
	back bool
	// esc, when set, is what esc does in the pane instead (clear its filter, its search).
	esc *keyBinding
	// capturing: the pane takes text, so q and ? are letters and only its own keys apply.
	capturing bool
}

func (h helpKeys) globals() []key.Binding {
	if h.capturing {
		return nil
	}
	bs := []key.Binding{h.global.Help}
	switch {
	case h.esc != nil:
		bs = append(bs, *h.esc)
	case h.back:
		bs = append(bs, h.global.Back)
	}
	return append(bs, h.global.Quit)
}

func (h helpKeys) ShortHelp() []key.Binding {
	return append(h.pane.ShortHelp(), h.globals()...)
}

func (h helpKeys) FullHelp() [][]key.Binding {
	g := h.globals()
	if !h.capturing {
		g = append(g, h.global.Command, h.global.Last, h.global.NextPane, h.global.PrevPane)
	}
	return append(h.pane.FullHelp(), append(g, h.global.ForceQuit))
}

type keyBinding = key.Binding
