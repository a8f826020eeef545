package ui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
)

const (
	// logBatchEvery is how long lines gather before they go to the pane as one message: a
	// container writing 100,000 lines a second costs about 20 updates a second, not 100,000.
	logBatchEvery = 50 * time.Millisecond
	// maxLogLine cuts pathological lines (a minified bundle on one line) so one line cannot
	// take the console's memory; the rest of such a line is dropped.
	maxLogLine = 16 << 10
	// logReadChunk is how much of the stream one read takes.
	logReadChunk = 64 << 10
)

// logFeed hands lines from the reading goroutine to the console. It holds at most capacity
// lines: if the console falls behind, the oldest unread lines are dropped (and counted)
// rather than the reader blocking or memory growing.
type logFeed struct {
	mu      sync.Mutex
	pending []string
	// times are the pending lines' own times (zero: the line came without one).
	times    []time.Time
	capacity int
	dropped  int
	opened   bool
	ended    bool
	err      error
	notify   chan struct{}
}

func newLogFeed(capacity int) *logFeed {
	return &logFeed{capacity: capacity, notify: make(chan struct{}, 1)}
}

func (f *logFeed) signal() {
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

func (f *logFeed) add(lines []string, times []time.Time) {
	f.mu.Lock()
	f.pending = append(f.pending, lines...)
	f.times = append(f.times, times...)
	if over := len(f.pending) - f.capacity; over > 0 {
		f.dropped += over
		// Copy down rather than reslice, so the backing array does not creep forward forever.
		n := copy(f.pending, f.pending[over:])
		clear(f.pending[n:])
		f.pending = f.pending[:n]
		f.times = f.times[:copy(f.times, f.times[over:])]
	}
	f.mu.Unlock()
	f.signal()
}

func (f *logFeed) open() {
	f.mu.Lock()
	f.opened = true
	f.mu.Unlock()
	f.signal()
}

func (f *logFeed) end(err error) {
	f.mu.Lock()
	f.ended, f.err = true, err
	f.mu.Unlock()
	f.signal()
}

// logBatchMsg carries what a stream delivered since the last batch.
type logBatchMsg struct {
	to    *logsPane
	gen   int
	lines []string
	// times are the lines' own times, as the runtime recorded them (zero, or missing past
	// the end: none, the console's time of arrival stands in).
	times   []time.Time
	dropped int
	opened  bool
	ended   bool
	err     error
}

func (m logBatchMsg) target() pane     { return m.to }
func (m logBatchMsg) deliver() tea.Cmd { return m.to.apply(m) }

func (f *logFeed) take(to *logsPane, gen int) logBatchMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := logBatchMsg{to: to, gen: gen, lines: f.pending, times: f.times, dropped: f.dropped, opened: f.opened, ended: f.ended, err: f.err}
	f.pending, f.times, f.dropped = nil, nil, 0
	return m
}

// wait delivers the next batch: it sleeps until a line (or the end) arrives, then lets more
// gather for logBatchEvery. No lines, no messages: a quiet log costs nothing.
func (f *logFeed) wait(ctx context.Context, to *logsPane, gen int) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-f.notify:
		case <-ctx.Done():
			return nil
		}
		t := time.NewTimer(logBatchEvery)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
		return f.take(to, gen)
	}
}

// readLog copies a container's log into feed, line by line, until the stream ends or ctx does.
// It asks for the lines' times (LogOptions.Timestamps) and hands them on beside the lines.
func readLog(ctx context.Context, src source, ref, name string, opts engine.LogOptions, feed *logFeed) {
	opts.Timestamps = true
	rc, err := src.Logs(ctx, ref, name, opts)
	if err != nil {
		feed.end(err)
		return
	}
	defer rc.Close()
	feed.open()
	var (
		buf     = make([]byte, logReadChunk)
		partial []byte
		cut     bool // the current line passed maxLogLine; drop the rest of it
	)
	for {
		n, rerr := rc.Read(buf)
		data := buf[:n]
		nl := bytes.Count(data, []byte{'\n'})
		lines, times := make([]string, 0, nl), make([]time.Time, 0, nl)
		take := func(line []byte, more string) {
			at, text, _ := engine.ParseLogLine(line)
			lines, times = append(lines, cleanLogLine(text)+more), append(times, at)
		}
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if !cut {
					partial = append(partial, data...)
					if len(partial) > maxLogLine {
						take(partial[:maxLogLine], " …")
						partial, cut = partial[:0], true
					}
				}
				break
			}
			if !cut {
				line := data[:i]
				if len(partial) > 0 {
					partial = append(partial, line...)
					line = partial
				}
				if len(line) > maxLogLine {
					line = append(line[:maxLogLine:maxLogLine], " …"...)
				}
				take(line, "")
			}
			partial, cut = partial[:0], false
			data = data[i+1:]
		}
		if len(lines) > 0 {
			feed.add(lines, times)
		}
		if rerr != nil {
			if len(partial) > 0 && !cut {
				lines, times = lines[:0], times[:0]
				take(partial, "")
				feed.add(lines, times)
			}
			if errors.Is(rerr, io.EOF) || ctx.Err() != nil {
				rerr = nil
			}
			feed.end(rerr)
			return
		}
	}
}

// cleanLogLine makes a log line safe to put on screen: no escape sequences of the container's
// own, tabs expanded, no control characters, valid UTF-8.
func cleanLogLine(b []byte) string {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	s := string(b)
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansi.Strip(s)
	}
	if strings.IndexByte(s, '\t') >= 0 {
		s = expandTabs(s)
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "�")
	}
	return sanitize(s)
}

func expandTabs(s string) string {
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}
