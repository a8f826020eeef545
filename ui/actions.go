package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// action is one thing a pane can do to its selection. Panes register their actions once, when
// they are built; --readonly leaves the mutating ones out right there, so no key handler has to
// remember to check it (k9s registers its read-only actions the same way).
type action struct {
	key key.Binding
	// mutates marks an action that changes something; read-only consoles never register it.
	mutates bool
	// why tells why the action does not apply to the current selection ("" when it does):
	// help lists only the actions that apply, and a key for one that does not says why instead
	// of failing inside the engine.
	why func() string
	// label overrides the help text for the current selection (start vs stop); nil keeps it.
	label func() string
	do    func() tea.Cmd
}

// actionList is a pane's registered actions.
type actionList []action

// newActions registers the actions a console may offer; under readOnly the mutating ones are
// dropped for good.
func newActions(readOnly bool, all ...action) actionList {
	out := make(actionList, 0, len(all))
	for _, a := range all {
		if readOnly && a.mutates {
			continue
		}
		out = append(out, a)
	}
	return out
}

// handle runs the action bound to msg. ok is false when no registered action has the key; a
// registered action that does not apply answers with a hint instead of running.
func (as actionList) handle(msg tea.KeyPressMsg) (cmd tea.Cmd, ok bool) {
	for _, a := range as {
		if !key.Matches(msg, a.key) {
			continue
		}
		if a.why != nil {
			if why := a.why(); why != "" {
				h := a.key.Help()
				return hintCmd(h.Desc + ": " + why), true
			}
		}
		return a.do(), true
	}
	return nil, false
}

// available is the bindings that apply now, labelled for the current selection.
func (as actionList) available() []key.Binding {
	out := make([]key.Binding, 0, len(as))
	for _, a := range as {
		if a.why != nil && a.why() != "" {
			continue
		}
		b := a.key
		if a.label != nil {
			b.SetHelp(b.Help().Key, a.label())
		}
		out = append(out, b)
	}
	return out
}

// has tells whether an action with this key was registered (tests of --readonly use it).
func (as actionList) has(k string) bool {
	for _, a := range as {
		for _, bk := range a.key.Keys() {
			if bk == k {
				return true
			}
		}
	}
	return false
}

// hintMsg puts a short explanation in the status line (not an error: nothing failed).
type hintMsg struct{ text string }

func hintCmd(text string) tea.Cmd { return func() tea.Msg { return hintMsg{text: text} } }

// msgCmd wraps a message as a command, for a pane asking the root to do something.
func msgCmd(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }
