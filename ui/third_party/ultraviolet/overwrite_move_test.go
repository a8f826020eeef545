package uv

import (
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// releasedOverwrite is the overwrite step of relativeCursorMove as released (before
// sailtui's patch), kept as the reference overwriteMove must agree with.
func releasedOverwrite(s *TerminalRenderer, newbuf *RenderBuffer, fx, ty, n int, xseq string) string {
	overwrite := true
	var ovw string
	for i := 0; i < n; i++ {
		cell := newbuf.CellAt(fx+i, ty)
		if cell != nil && cell.Width > 0 {
			i += cell.Width - 1
			if !cell.Style.Equal(&s.cur.Style) || !cell.Link.Equal(&s.cur.Link) {
				overwrite = false
				break
			}
		}
	}
	if overwrite {
		for i := 0; i < n; i++ {
			cell := newbuf.CellAt(fx+i, ty)
			if cell != nil && cell.Width > 0 {
				ovw += cell.String()
				i += cell.Width - 1
			}
		}
	}
	if overwrite && len(ovw) < len(xseq) {
		xseq = ovw
	}
	return xseq
}

// TestOverwriteMoveAsReleased: on random rows of plain, styled, wide and multi-byte cells, the
// patched step picks the same sequence as the released one, for every span and every
// competing sequence length.
func TestOverwriteMoveAsReleased(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 19))
	const width = 40
	s := NewTerminalRenderer(io.Discard, []string{"TERM=xterm-256color"})
	bold := Style{Attrs: AttrBold}
	for round := range 2000 {
		buf := NewRenderBuffer(width, 1)
		for x := 0; x < width; x++ {
			c := &Cell{Content: string(rune('a' + rng.IntN(26))), Width: 1}
			switch rng.IntN(12) {
			case 0:
				c.Style = bold
			case 1:
				c.Content = "é"
			case 2:
				if x+1 < width {
					c.Content, c.Width = "界", 2
				}
			}
			buf.SetCell(x, 0, c)
			x += c.Width - 1
		}
		s.cur.Style = Style{}
		if round%5 == 0 {
			s.cur.Style = bold
		}
		fx := rng.IntN(width)
		n := rng.IntN(width - fx + 1)
		xseq := strings.Repeat("x", rng.IntN(24))
		if got, want := overwriteMove(s, buf, fx, 0, n, xseq), releasedOverwrite(s, buf, fx, 0, n, xseq); got != want {
			t.Fatalf("round %d, from %d over %d, against %q: got %q, released gives %q", round, fx, n, xseq, got, want)
		}
	}
}
