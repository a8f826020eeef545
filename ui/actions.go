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
	// mutates marks an action that changes something; read-only consoles keep it blocked.
	mutates bool
	// blocked: a read-only console holds the action only to say, when its key is pressed,
	// that read-only mode is why nothing happens (a key silently ignored looks broken).
	blocked bool
	// why tells why the action does not apply to the current selection ("" when it does):
	// help lists only the actions that apply, and a key for one that does not says why instead
	// of failing inside the engine.
	why func() string
	// label overrides the help text for the current selection (start vs stop); nil keeps it.
	label func() string
	// extra marks an action the short help lists after the pane's own keys (its filter), so
	// a narrow screen drops it first; the full help lists it with the others.
	extra bool
	do    func() tea.Cmd
}

// actionList is a pane's registered actions.
type actionList []action

// newActions registers the actions a console may offer; under readOnly the mutating ones are
// blocked for good: never run, never offered in help, their keys answered with why.
func newActions(readOnly bool, all ...action) actionList {
	out := make(actionList, 0, len(all))
	for _, a := range all {
		if readOnly && a.mutates {
			a.blocked, a.do, a.why, a.label = true, nil, nil, nil
		}
		out = append(out, a)
	}
	return out
}

// readOnlyHint is what a key of a blocked action says.
const readOnlyHint = "the console is read-only (--readonly or SAILTUI_READONLY); start sailtui without it to change things"

// handle runs the action bound to msg. ok is false when no registered action has the key; a
// registered action that does not apply answers with a hint instead of running, and so does
// one that read-only mode blocks.
func (as actionList) handle(msg tea.KeyPressMsg) (cmd tea.Cmd, ok bool) {
	var blocked *action
	for i, a := range as {
		if !key.Matches(msg, a.key) {
			continue
		}
		if a.blocked {
			if blocked == nil {
				blocked = &as[i]
			}
			continue // an action of the same key that is not blocked wins
		}
		if a.why != nil {
			if why := a.why(); why != "" {
				h := a.key.Help()
				return hintCmd(h.Desc + ": " + why), true
			}
		}
		return a.do(), true
	}
	if blocked != nil {
		return hintCmd(blocked.key.Help().Desc + ": " + readOnlyHint), true
	}
	return nil, false
}

// available is the bindings that apply now, labelled for the current selection.
func (as actionList) available() []key.Binding {
	core, extra := as.split()
	return append(core, extra...)
}

// split is available in two: the bindings of the pane's first keys and of its extra ones.
func (as actionList) split() (core, extra []key.Binding) {
	for _, a := range as {
		if a.blocked || (a.why != nil && a.why() != "") {
			continue
		}
		b := a.key
		if a.label != nil {
			b.SetHelp(b.Help().Key, a.label())
		}
		if a.extra {
			extra = append(extra, b)
		} else {
			core = append(core, b)
		}
	}
	return core, extra
}

// has tells whether an action with this key was registered and can run (tests of --readonly
// use it).
func (as actionList) has(k string) bool {
	for _, a := range as {
		if a.blocked {
			continue
		}
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
