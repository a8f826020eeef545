package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/mattn/go-isatty"

	"github.com/sailtui/sailtui/engine"
)

// out writes a command's result as a table or as JSON (stable field names, documented in the
// README). JSON output never carries progress or prompts.
type out struct {
	w    io.Writer
	json bool
}

func (o out) emit(v any, table func(tw *tabwriter.Writer)) error {
	if o.json {
		enc := json.NewEncoder(o.w)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(o.w, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

func ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in " + (-d).Round(time.Second).String()
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

func size(n int64) string {
	if n <= 0 {
		return "-"
	}
	return humanize.IBytes(uint64(n))
}

// progressBar draws the engine's progress reports on stderr, one line redrawn in place; it
// draws nothing when stderr is not a terminal or the output is JSON. Warnings are printed
// whatever the output.
type progressBar struct {
	mu      sync.Mutex
	w       io.Writer
	enabled bool
	last    time.Time
	drawn   bool
}

func newProgressBar(jsonOut bool) *progressBar {
	return &progressBar{w: os.Stderr, enabled: !jsonOut && isTerminal(os.Stderr)}
}

func (b *progressBar) report(p engine.Progress) {
	if w, ok := strings.CutPrefix(p.Phase, "warning: "); ok {
		// Something works, but not as configured (a TLS secret the Ingresses cannot use): a
		// line of its own, terminal or not, never overwritten by the bar.
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.drawn {
			fmt.Fprint(b.w, "\r\x1b[2K")
			b.drawn = false
		}
		fmt.Fprintf(b.w, "warning: %s\n", w)
		return
	}
	if !b.enabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if now.Sub(b.last) < 80*time.Millisecond && p.Total != p.Done {
		return
	}
	b.last = now
	const width = 30
	bar := strings.Repeat("·", width)
	amount := ""
	if p.Total > 0 {
		n := int(float64(width) * float64(min(p.Done, p.Total)) / float64(p.Total))
		bar = strings.Repeat("█", n) + strings.Repeat("·", width-n)
		amount = fmt.Sprintf("%s / %s", humanize.IBytes(uint64(p.Done)), humanize.IBytes(uint64(p.Total)))
	} else if p.Done > 0 {
		amount = humanize.IBytes(uint64(p.Done))
	}
	fmt.Fprintf(b.w, "\r\x1b[2K%-9s %-8s %s %s", p.Op, p.Phase, bar, amount)
	b.drawn = true
}

func (b *progressBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[2K")
		b.drawn = false
	}
}

// confirm asks on a terminal; elsewhere a destructive action needs --yes.
func confirm(cfg config, what string) error {
	if cfg.Yes {
		return nil
	}
	if !isTerminal(os.Stdin) || !isTerminal(os.Stderr) {
		return fmt.Errorf("%s is destructive: pass --yes to confirm when not on a terminal", what)
	}
	fmt.Fprintf(os.Stderr, "%s? [y/N] ", what)
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("%s: not confirmed", what)
}

// printable is s as a table cell: unchanged when it is plain text, Go-quoted when it holds
// control characters (escape sequences, newlines, tabs), bidi overrides (engine.Unprintable) or
// invalid UTF-8, so a hostile file name, project name or label can neither drive the terminal
// (OSC 52 writes the clipboard), nor reorder what it shows, nor break the table's columns. Only
// human output goes through it: JSON carries the exact data, escaped by the encoder.
func printable(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, engine.Unprintable) {
		return strconv.Quote(s)
	}
	return s
}

// printableLines is printable for text that is several lines by design (an error with a
// container's last log lines, a description): each line is quoted on its own, so the plain ones
// stay readable.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}

// clip shortens s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
