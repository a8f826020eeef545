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
	{name: "history", aliases: []string{"hist"}, args: "[slug]", desc: "why a project is awake, asleep or about to sleep"},
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
	// line is the line as entered: once the command has run without an error, `-` may run
	// it again.
	line string
}

// ranMsg says the command line ran without an error, once that is known (an undelete when it
// is done), then delivers then, what the command led to, if anything.
type ranMsg struct {
	line string
	then tea.Msg
}

// parseCommand turns a command line into what the root carries out, or the hint that says
// why it cannot be.
func parseCommand(line string) (runCommandMsg, string) {
	word, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	cm, ok := lookupCommand(word)
	switch {
	case !ok:
		return runCommandMsg{}, fmt.Sprintf("no command %q (try :help)", word)
	case cm.args == "" && arg != "":
		return runCommandMsg{}, fmt.Sprintf(":%s takes no argument (got %q)", cm.name, arg)
	}
	return runCommandMsg{cmd: cm, arg: arg, line: strings.TrimSpace(line)}, ""
}

// maxHistory bounds the prompt's command history.
const maxHistory = 100

// cmdline is the `:` prompt in the status line, k9s style: tab completes the command name
// (then a project slug, or a container for :logs), cycling through the candidates when there
// are several and listing them; ↑/↓ walk the commands entered before.
type cmdline struct {
	env    *env
	input  textinput.Model
	active bool
	keys   cmdlineKeys
	// slugs lists the projects for argument completion; the root sets it when the prompt opens.
	slugs func(prefix string, limit int) []string
	// containers lists the containers known of the current project, for :logs.
	containers func() []string

	// comp is the completion being cycled through: the line before the word completed and
	// its candidates; i is the one on the line (-1: only their common prefix is).
	comp struct {
		base  string
		cands []string
		i     int
	}
	// history is the lines entered, oldest first; hpos is the one shown while walking it
	// (len(history) when not), draft what was typed before the walk began.
	history []string
	hpos    int
	draft   string
	// ran is the lines that ran without an error, oldest first: what `-` toggles between.
	// A line that failed is in history (↑ brings it back to be fixed), never here.
	ran []string
}

type cmdlineKeys struct {
	Run      key.Binding
	Cancel   key.Binding
	Complete key.Binding
	Previous key.Binding
	Older    key.Binding
	Newer    key.Binding
}

func newCmdline(e *env) cmdline {
	in := newInput(e, ":", "projects, timeline, logs, sweep, q…")
	in.ShowSuggestions = true
	in.CharLimit = 200
	// ↑/↓ walk the history; tab is ours (it cycles).
	in.KeyMap.NextSuggestion = key.NewBinding(key.WithKeys("ctrl+n"))
	in.KeyMap.PrevSuggestion = key.NewBinding(key.WithKeys("ctrl+p"))
	in.KeyMap.AcceptSuggestion = key.NewBinding(key.WithDisabled())
	return cmdline{env: e, input: in, keys: cmdlineKeys{
		Run:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
		Cancel:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Complete: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
		Previous: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous candidate")),
		Older:    key.NewBinding(key.WithKeys("up"), key.WithHelp("↑", "older command")),
		Newer:    key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "newer command")),
	}}
}

func (c *cmdline) open() tea.Cmd {
	c.active = true
	c.setValue("")
	c.hpos = len(c.history)
	return c.input.Focus()
}

func (c *cmdline) shut() {
	c.active = false
	c.input.Blur()
	c.setValue("")
}

func (c *cmdline) setWidth(w int) { c.input.SetWidth(min(max(w/3, 10), 40)) }

// setValue puts a line in the prompt, the cursor at its end, and ends a completion cycle.
func (c *cmdline) setValue(v string) {
	c.input.SetValue(v)
	c.input.CursorEnd()
	c.comp.cands = nil
	c.suggest()
}

// remember adds an entered line to the history (not twice in a row).
func (c *cmdline) remember(line string) {
	if n := len(c.history); n == 0 || c.history[n-1] != line {
		c.history = append(c.history, line)
	}
	if len(c.history) > maxHistory {
		c.history = c.history[len(c.history)-maxHistory:]
	}
}

// succeeded notes a line that ran without an error, for `-`.
func (c *cmdline) succeeded(line string) {
	if n := len(c.ran); n == 0 || c.ran[n-1] != line {
		c.ran = append(c.ran, line)
	}
	if len(c.ran) > maxHistory {
		c.ran = c.ran[len(c.ran)-maxHistory:]
	}
}

// last is the command line `-` runs: of those that ran without an error, the one before the
// last (so `-` toggles between the last two, as in k9s), or the only one. A line that failed
// is never run again by a key that does not show it.
func (c *cmdline) last() (string, bool) {
	switch n := len(c.ran); n {
	case 0:
		return "", false
	case 1:
		return c.ran[0], true
	default:
		return c.ran[n-2], true
	}
}

// walk shows an older (dir -1) or newer (1) line of the history.
func (c *cmdline) walk(dir int) {
	pos := c.hpos + dir
	if pos < 0 || pos > len(c.history) {
		return
	}
	if c.hpos == len(c.history) {
		c.draft = c.input.Value()
	}
	c.hpos = pos
	if pos == len(c.history) {
		c.setValue(c.draft)
		return
	}
	c.setValue(c.history[pos])
}

// candidates are the completions of the word under completion: the command names starting
// with it, or after a command, its argument's.
func (c *cmdline) candidates(v string) (base, word string, out []string) {
	cmdWord, rest, spaced := strings.Cut(v, " ")
	if !spaced {
		for _, cm := range commands {
			if strings.HasPrefix(cm.name, strings.ToLower(cmdWord)) {
				out = append(out, cm.name)
			}
		}
		return "", cmdWord, out
	}
	base, word = cmdWord+" ", strings.TrimLeft(rest, " ")
	cm, ok := lookupCommand(cmdWord)
	if !ok {
		return base, word, nil
	}
	switch cm.args {
	case "[slug]":
		if c.slugs != nil {
			out = c.slugs(word, 50)
		}
	case "[container]":
		if c.containers != nil {
			for _, n := range c.containers() {
				if strings.HasPrefix(n, word) {
					out = append(out, n)
				}
			}
		}
	}
	return base, word, out
}

// complete is tab (dir 1) or shift+tab (-1): one candidate is put in; several put in what
// they share and are listed, and each further tab puts in the next one.
func (c *cmdline) complete(dir int) {
	if n := len(c.comp.cands); n > 1 && c.input.Value() == c.comp.base+c.current() {
		switch {
		case c.comp.i >= 0:
			c.comp.i = (c.comp.i + dir + n) % n
		case dir > 0:
			c.comp.i = 0
		default:
			c.comp.i = n - 1
		}
		c.putCandidate()
		return
	}
	base, word, cands := c.candidates(c.input.Value())
	switch len(cands) {
	case 0:
		return
	case 1:
		c.setValue(base + cands[0])
		return
	}
	c.comp.base, c.comp.cands, c.comp.i = base, cands, -1
	if pre := commonPrefix(cands); len(pre) > len(word) {
		c.putCandidate() // the common prefix, with the candidates listed
		return
	}
	c.comp.i = 0
	if dir < 0 {
		c.comp.i = len(cands) - 1
	}
	c.putCandidate()
}

// current is the candidate on the line, "" while only the common prefix is.
func (c *cmdline) current() string {
	if c.comp.i < 0 || c.comp.i >= len(c.comp.cands) {
		return commonPrefix(c.comp.cands)
	}
	return c.comp.cands[c.comp.i]
}

// putCandidate puts the current candidate on the line, keeping the cycle.
func (c *cmdline) putCandidate() {
	c.input.SetValue(c.comp.base + c.current())
	c.input.CursorEnd()
	c.suggest()
}

func commonPrefix(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	pre := ss[0]
	for _, s := range ss[1:] {
		for !strings.HasPrefix(s, pre) {
			pre = pre[:len(pre)-1]
		}
	}
	return pre
}

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
		case key.Matches(k, c.keys.Complete):
			c.complete(1)
			return nil
		case key.Matches(k, c.keys.Previous):
			c.complete(-1)
			return nil
		case key.Matches(k, c.keys.Older):
			c.walk(-1)
			return nil
		case key.Matches(k, c.keys.Newer):
			c.walk(1)
			return nil
		case key.Matches(k, c.keys.Run):
			line := strings.TrimSpace(c.input.Value())
			c.shut()
			if line == "" {
				return nil
			}
			run, why := parseCommand(line)
			if why != "" {
				return hintCmd(why)
			}
			c.remember(line)
			return msgCmd(run)
		}
	}
	before := c.input.Value()
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	if c.input.Value() != before {
		c.comp.cands = nil
		c.hpos = len(c.history)
	}
	c.suggest()
	return cmd
}

// view is the prompt for the status line with, on the right, the candidates of an ambiguous
// completion or what the current candidate does.
func (c *cmdline) view(w int) (string, *tea.Cursor) {
	th := &c.env.theme
	line := c.input.View()
	var about string
	if n := len(c.comp.cands); n > 1 {
		about = strings.Join(c.comp.cands, "  ")
		if c.comp.i >= 0 {
			about = fmt.Sprintf("%d/%d  ", c.comp.i+1, n) + about
		}
	} else if cur := c.input.CurrentSuggestion(); cur != "" {
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
	ks := []keyBinding{k.Run, k.Complete, k.Older, k.Cancel}
	return staticKeys{short: ks, full: [][]keyBinding{{k.Run, k.Complete, k.Previous, k.Older, k.Newer, k.Cancel}}}
}
