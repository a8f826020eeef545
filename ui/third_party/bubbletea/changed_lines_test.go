package tea

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"

	uv "github.com/charmbracelet/ultraviolet"
)

// The buffer a frame leaves is the one a whole draw of it makes, frame after frame, whether
// the renderer redrew only the changed lines or all of them; only frames whose lines all stand
// alone take the short way.
func TestChangedLinesDrawTheSameBuffer(t *testing.T) {
	const w, h = 40, 10
	rng := rand.New(rand.NewSource(7))
	seg := func() string {
		words := []string{"ok", "5m ago", "héllo", "日本", "│", " ", "proj-0001", "e\u0301"}
		s := words[rng.Intn(len(words))]
		switch rng.Intn(4) {
		case 0:
			return "\x1b[1;31m" + s + "\x1b[m"
		case 1:
			return "\x1b[38;5;42m" + s + "\x1b[0m"
		}
		return s
	}
	line := func(alone bool) string {
		var b strings.Builder
		for range rng.Intn(8) {
			b.WriteString(seg())
		}
		if alone {
			return b.String()
		}
		switch rng.Intn(3) {
		case 0:
			b.WriteString("\x1b[4m") // a style left open: the next line starts underlined
		case 1:
			b.WriteString("\x1b]8;;http://x\x1b\\link") // a hyperlink left open
		case 2:
			return "\u0301" + b.String() // a combining mark first: it joins the line above
		}
		return b.String()
	}
	var out bytes.Buffer
	s := newCursedRenderer(&out, []string{"TERM=xterm-256color"}, w, h)
	s.start()
	lines := make([]string, h)
	for i := range lines {
		lines[i] = line(true)
	}
	short := 0
	for frame := range 400 {
		// Most frames change a line or two, as a clock does; some change many.
		// Now and then a line that does not stand alone, until all are made again.
		for range 1 + rng.Intn(2) + 6*rng.Intn(2)*rng.Intn(2) {
			lines[rng.Intn(h)] = line(rng.Intn(40) != 0)
		}
		if frame%25 == 0 {
			for i := range lines {
				lines[i] = line(true)
			}
		}
		content := strings.Join(lines, "\n")
		before := s.drawn != nil
		s.render(View{Content: content, AltScreen: true})
		if err := s.flush(false); err != nil {
			t.Fatal(err)
		}
		if before && s.drawn != nil {
			short++
		}
		want := uv.NewScreenBuffer(w, h)
		uv.NewStyledString(content).Draw(want, want.Bounds())
		for y := range h {
			for x := range w {
				if got, exp := s.cellbuf.CellAt(x, y), want.CellAt(x, y); !got.Equal(exp) {
					t.Fatalf("frame %d: cell %d,%d is %+v, a whole draw makes %+v\ncontent:\n%q", frame, x, y, got, exp, content)
				}
			}
		}
	}
	if short < 50 {
		t.Errorf("only %d of 400 frames redrew their changed lines alone", short)
	}
}

func TestStandsAlone(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"", true},
		{"plain text", true},
		{"\x1b[1;31mred\x1b[m and plain", true},
		{"\x1b[38;5;42mgreen\x1b[0m", true},
		{"日本 │ héllo", true},
		{"\x1b[4munderline left open", false},
		{"\x1b[1mbold\x1b[m then \x1b[2m", false},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x1b[m", false},
		{"\x1bPq#0\x1b\\", false},
		{"\u0301 combining first", false},
		{"\x1b[31m\u0301\x1b[m", false},
		{"c1 \u009b31m", false},
		{"raw \x9b31m", false},
		{"esc7 \x1b7 text", false},
		{"trailing \x1b", false},
	} {
		if got := standsAlone(tc.line); got != tc.want {
			t.Errorf("standsAlone(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
