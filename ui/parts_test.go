package ui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/runtimetest"
)

func TestParseFilter(t *testing.T) {
	cases := []struct {
		raw  string
		hay  string
		want bool
	}{
		{"", "anything", true},
		{"!", "anything", true},
		{"web", "alpha-web alice active", true},
		{"WEB", "alpha-web alice active", true},
		{"!web", "alpha-web alice active", false},
		{"!web", "beta-api alice active", true},
		{"^alpha", "alpha-web", true},
		{"^web", "alpha-web", false},
		{"a.c", "abc", true},        // a regex when it is one
		{"web(", "my-web(1)", true}, // not a valid regex: a substring
		{"web(", "my-web", false},   //
		{"!web(", "my-web", true},   //
		{"[", "x[y", true},          //
		{"hibernat", "p hibernated", true},
	}
	for _, c := range cases {
		if got := parseFilter(c.raw).match(c.hay); got != c.want {
			t.Errorf("filter %q on %q = %v, want %v", c.raw, c.hay, got, c.want)
		}
	}
	fields := []string{"demo-21", "demo 21", "op", "active"}
	for raw, want := range map[string]bool{
		"demo-2[0-9]$": true, "^demo 2": true, "^op$": true, "^active$": true, "21 op": false,
		"!^demo-": false, "!^zzz": true,
	} {
		if got := parseFilter(raw).match(fields...); got != want {
			t.Errorf("filter %q on fields %q = %v, want %v", raw, fields, got, want)
		}
	}
	if parseFilter("!").active() || parseFilter("").active() {
		t.Error("an empty filter is active")
	}
}

func TestAgoAndSpan(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "just now"},
		{-time.Minute, "just now"},
		{4 * time.Second, "just now"},
		{42 * time.Second, "42s ago"},
		{3*time.Minute + 59*time.Second, "3m ago"},
		{90 * time.Minute, "1h30m ago"},
		{2 * time.Hour, "2h ago"},
		{11*time.Hour + 5*time.Minute, "11h ago"},
		{50 * time.Hour, "2d ago"},
	}
	for _, c := range cases {
		if got := ago(t0, t0.Add(-c.d)); got != c.want {
			t.Errorf("ago(%s) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := ago(t0, time.Time{}); got != "never" {
		t.Errorf("ago(zero) = %q", got)
	}
}

func (c cell) plainText() string {
	var b strings.Builder
	for _, s := range c {
		b.WriteString(s.text)
	}
	return b.String()
}

func TestCellRender(t *testing.T) {
	st := new(lipgloss.NewStyle())
	cases := []struct {
		c    cell
		w    int
		want string
	}{
		{txt("abc", st), 5, "abc  "},
		{txt("abcdef", st), 4, "abc…"},
		{cell{{text: "Name", style: st}, {text: "  slug", style: st}}, 8, "Name  s…"},
		{cell{{text: "Name", style: st}, {text: "  slug", style: st}}, 4, "Nam…"},
		{cell{{text: "Name", style: st}, {text: "xy", style: st}}, 5, "Name…"},
		{txt("a\x1b[2Jb\nc", st), 8, "a [2Jb c"},
		{txt("日本語", st), 5, "日本…"},
		{txt("x", st), 0, ""},
	}
	for _, c := range cases {
		got := c.c.render(c.w, true)
		if got != c.want {
			t.Errorf("render(%q, %d) = %q, want %q", c.c.plainText(), c.w, got, c.want)
		}
		if c.w > 0 && ansi.StringWidth(got) != c.w {
			t.Errorf("render(%q, %d) is %d wide", c.c.plainText(), c.w, ansi.StringWidth(got))
		}
	}
}

func TestLayout(t *testing.T) {
	sum := func(ws []int) (n int) {
		k := 0
		for _, w := range ws {
			if w > 0 {
				n += w
				k++
			}
		}
		return n + colGap*(k-1) + markerW
	}
	for _, w := range []int{80, 100, 200} {
		ws := layout(projectColumns, w)
		if got := sum(ws); got != w {
			t.Errorf("projects at %d: widths %v fill %d", w, ws, got)
		}
	}
	ws := layout(projectColumns, 50)
	if ws[1] == 0 || ws[0] < projectColumns[0].min {
		t.Errorf("at 50 columns name or status was dropped: %v", ws)
	}
	if ws[5] != 0 {
		t.Errorf("at 50 columns snapshots (dropped first) is still shown: %v", ws)
	}
	cw := layout(containerColumns, 160)
	url := slices.IndexFunc(containerColumns, func(c column) bool { return c.title == "URL" })
	if cw[0] > containerColumns[0].max || cw[url] <= cw[0] {
		t.Errorf("containers at 160: %v; bounded columns must stop growing and URL take the rest", cw)
	}
}

func TestListNav(t *testing.T) {
	var l listNav
	l.setHeight(10)
	l.setLen(100)
	l.move(15)
	if s, e := l.window(); l.cursor != 15 || s != 6 || e != 16 {
		t.Errorf("cursor %d window %d-%d", l.cursor, s, e)
	}
	l.setLen(12) // the list shrank under the cursor
	if s, e := l.window(); l.cursor != 11 || s != 2 || e != 12 {
		t.Errorf("after shrinking: cursor %d window %d-%d", l.cursor, s, e)
	}
	l.setLen(0)
	if s, e := l.window(); l.cursor != 0 || s != 0 || e != 0 {
		t.Errorf("empty: cursor %d window %d-%d", l.cursor, s, e)
	}
	l.move(-5)
	l.page(1)
	if l.cursor != 0 {
		t.Errorf("moving in an empty list: cursor %d", l.cursor)
	}
}

func TestPortText(t *testing.T) {
	for _, c := range []struct {
		port, host int
		want       string
	}{{5173, 41234, "5173->41234"}, {3000, 3000, "3000"}, {0, 8080, "8080"}, {8000, 0, "8000"}, {0, 0, "-"}} {
		if got := portText(c.port, c.host); got != c.want {
			t.Errorf("portText(%d, %d) = %q, want %q", c.port, c.host, got, c.want)
		}
	}
}

// TestProgramSmoke runs the model in a real tea.Program (no terminal): Init's commands, the
// event subscription and a quit key.
func TestProgramSmoke(t *testing.T) {
	src := newFakeSource(genProjects(20))
	h := newHarness(t, src, Options{Mode: "local"}, true)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	h.m.env.ctx = ctx
	var out runtimetest.SyncBuffer
	p := tea.NewProgram(h.m, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(&out),
		tea.WithWindowSize(100, 30), tea.WithEnvironment([]string{"TERM=xterm-256color", "NO_COLOR=1"}))
	done := make(chan error, 1)
	go func() {
		_, err := p.Run()
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "proj-00000") {
		if time.Now().After(deadline) {
			t.Fatalf("the list never appeared; output so far:\n%q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	src.events <- engine.Event{ProjectID: "id-00000", Kind: "status"}
	p.Send(keyPress("q"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("program: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("q did not end the program")
	}
}

func TestWidthMatchesAnsi(t *testing.T) {
	th := lipgloss.NewStyle().Foreground(lipgloss.Color("#FF0000")).Bold(true)
	for _, s := range []string{
		"", "plain", th.Render("styled text"), "a " + th.Render("b") + " c", "né", "日本語", "› crumb", "●  live",
		"\x1b]8;;http://x\x07link\x1b]8;;\x07", "tab\there", th.Render("…") + "x",
	} {
		if got, want := width(s), ansi.StringWidth(s); got != want {
			t.Errorf("width(%q) = %d, want %d", s, got, want)
		}
	}
}
