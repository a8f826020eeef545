package ui

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
)

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
	default:
		var typing bool
		if line, cur, typing = top.inputLine(); !typing {
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
	th := &m.env.theme
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
	// The help line is the same from frame to frame but for a key turning on or off; styling
	// it again was a fifth of an idle frame (issue 19).
	key := helpLineKey(m.w, pane, global)
	if m.helpLine.key == key {
		return m.helpLine.line
	}
	line := m.fitShortHelp(pane, global)
	m.helpLine.key, m.helpLine.line = key, line
	return line
}

// helpLineKey is what the short help line is drawn from.
func helpLineKey(w int, pane, global []keyBinding) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(w))
	for _, ks := range [][]keyBinding{pane, global} {
		b.WriteByte(2)
		for _, k := range ks {
			h := k.Help()
			b.WriteString(h.Key)
			b.WriteByte(0)
			b.WriteString(h.Desc)
			if k.Enabled() {
				b.WriteByte(1)
			}
			b.WriteByte(0)
		}
	}
	return b.String()
}

// fitShortHelp is the short help of pane's and the global keys, dropping the pane's last keys
// until the line fits.
func (m *model) fitShortHelp(pane, global []keyBinding) string {
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
	hk := helpKeys{pane: top.keyMap(), global: m.keys, back: len(m.stack) > 1, capturing: m.capturing()}
	if esc, ok := m.paneEsc(); ok {
		hk.esc = &esc
	}
	return hk
}

func (m *model) helpBody() []string {
	th := &m.env.theme
	lines := []string{th.Title.Render("Keys") + th.Muted.Render("  (any key closes; q quits)"), ""}
	lines = append(lines, splitLines(m.help.FullHelpView(m.helpKeys().FullHelp()))...)
	if m.status.text != "" {
		// The status line cuts a long message; here it is whole.
		lines = append(lines, "", th.Title.Render("Last message"))
		for _, l := range wrapText(sanitize(m.status.text), max(m.w-2, 10)) {
			lines = append(lines, "  "+th.Value.Render(l))
		}
	}
	lines = append(lines, "", th.Title.Render("Commands")+th.Muted.Render("  (: then tab completes, ↑ recalls)"))
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
	th := &m.env.theme
	parts := make([]string, len(m.stack))
	for i, p := range m.stack {
		parts[i] = sanitize(p.crumb())
	}
	return th.Title.Render(strings.Join(parts, " › ")) + "  " + th.Muted.Render(sanitize(m.top().info()))
}
