package ui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// command is one `:` command, k9s style: a name, short aliases, and what it does.
type command struct {
	name    string
	aliases []string
	args    string
	desc    string
}

var commands = []command{
	{name: "projects", aliases: []string{"p", "proj"}, desc: "the projects list"},
	{name: "containers", aliases: []string{"co"}, args: "[slug]", desc: "a project's containers"},
	{name: "timeline", aliases: []string{"tl", "snap", "snapshots"}, args: "[slug]", desc: "a project's snapshot timeline"},
	{name: "logs", aliases: []string{"log"}, args: "[container]", desc: "a container's log"},
	{name: "describe", aliases: []string{"desc"}, args: "[slug]", desc: "the runtime's view of a project"},
	{name: "sweep", aliases: []string{"sw"}, desc: "what the next hibernation sweep would do (dry run)"},
	{name: "doctor", aliases: []string{"doc"}, desc: "store, runtime and object store checked against each other"},
	{name: "help", aliases: []string{"?"}, desc: "the keys"},
	{name: "quit", aliases: []string{"q", "q!", "exit"}, desc: "leave the console"},
	// Last: the rarest, and the first to go when help is taller than the terminal.
	{name: "undelete", args: "slug", desc: "bring a removed project back, hibernated on its final snapshot"},
}

// lookupCommand finds a command by name, alias or unambiguous prefix of a name.
func lookupCommand(word string) (command, bool) {
	word = strings.ToLower(word)
	for _, c := range commands {
		if c.name == word || slices.Contains(c.aliases, word) {
			return c, true
		}
	}
	var found []command
	for _, c := range commands {
		if strings.HasPrefix(c.name, word) {
			found = append(found, c)
		}
	}
	if len(found) == 1 && word != "" {
		return found[0], true
	}
	return command{}, false
}

// runCommandMsg is an entered command line for the root to carry out.
type runCommandMsg struct {
	cmd command
	arg string
}

// cmdline is the `:` prompt in the status line, with completion: tab completes the command
// name (then a project slug), up/down pick among the candidates.
type cmdline struct {
	env    *env
	input  textinput.Model
	active bool
	keys   cmdlineKeys
	// slugs lists the projects for argument completion; the root sets it when the prompt opens.
	slugs func(prefix string, limit int) []string
}

type cmdlineKeys struct {
	Run      key.Binding
	Cancel   key.Binding
	Complete key.Binding
}

func newCmdline(e *env) cmdline {
	in := newInput(e, ":", "projects, timeline, logs, sweep, q…")
	in.ShowSuggestions = true
	in.CharLimit = 200
	return cmdline{env: e, input: in, keys: cmdlineKeys{
		Run:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
		Cancel:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Complete: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
	}}
}

func (c *cmdline) open() tea.Cmd {
	c.active = true
	c.input.SetValue("")
	c.suggest()
	return c.input.Focus()
}

func (c *cmdline) shut() {
	c.active = false
	c.input.Blur()
	c.input.SetValue("")
}

func (c *cmdline) setWidth(w int) { c.input.SetWidth(min(max(w/3, 10), 40)) }

// suggest offers the command names, or once a command is typed, the project slugs after it.
func (c *cmdline) suggest() {
	v := c.input.Value()
	word, rest, spaced := strings.Cut(v, " ")
	if !spaced {
		names := make([]string, 0, len(commands))
		for _, cm := range commands {
			names = append(names, cm.name)
		}
		c.input.SetSuggestions(names)
		return
	}
	cm, ok := lookupCommand(word)
	if !ok || cm.args != "[slug]" || c.slugs == nil {
		c.input.SetSuggestions(nil)
		return
	}
	slugs := c.slugs(strings.TrimSpace(rest), 50)
	out := make([]string, len(slugs))
	for i, s := range slugs {
		out[i] = word + " " + s
	}
	c.input.SetSuggestions(out)
}

func (c *cmdline) update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, c.keys.Cancel):
			c.shut()
			return nil
		case key.Matches(k, c.keys.Run):
			line := strings.TrimSpace(c.input.Value())
			c.shut()
			if line == "" {
				return nil
			}
			word, arg, _ := strings.Cut(line, " ")
			cm, ok := lookupCommand(word)
			if !ok {
				return hintCmd(fmt.Sprintf("no command %q (try :help)", word))
			}
			return msgCmd(runCommandMsg{cmd: cm, arg: strings.TrimSpace(arg)})
		}
	}
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	c.suggest()
	return cmd
}

// view is the prompt for the status line with what the current candidate does on the right.
func (c *cmdline) view(w int) (string, *tea.Cursor) {
	th := c.env.theme
	line := c.input.View()
	var about string
	if cur := c.input.CurrentSuggestion(); cur != "" {
		word, _, _ := strings.Cut(cur, " ")
		if cm, ok := lookupCommand(word); ok {
			about = cm.name
			if cm.args != "" {
				about += " " + cm.args
			}
			about += " — " + cm.desc
			if n := len(c.input.MatchedSuggestions()); n > 1 {
				about = fmt.Sprintf("%d/%d  ", c.input.CurrentSuggestionIndex()+1, n) + about
			}
		}
	}
	if about != "" {
		room := w - width(line) - 2
		if room > 10 {
			line = spread(line, th.Muted.Render(ansi.Truncate(about, room, "…")), w)
		}
	}
	return line, c.input.Cursor()
}

func (c *cmdline) keyMap() help.KeyMap {
	k := c.keys
	ks := []keyBinding{k.Run, k.Complete, k.Cancel}
	return staticKeys{short: ks, full: [][]keyBinding{ks}}
}
