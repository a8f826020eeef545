package runtimetest

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var logTests = []test{
	{"Tail", testLogsTail},
	{"Follow", testLogsFollow},
	{"Times", testLogsTimes},
	{"Kept", testLogsKept},
}

// readLogs reads a log without the markers a runtime that keeps logs writes into it (started,
// stopped...): what the container itself wrote.

func readLogs(t *testing.T, e *env, c engine.Container, opts engine.LogOptions) string {
	t.Helper()
	rc, err := e.rt.Logs(e.ctx(), e.p, c, opts)
	if err != nil {
		t.Fatalf("Logs(%+v): %v", opts, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading Logs(%+v): %v", opts, err)
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		text := line
		if opts.Timestamps {
			_, rest, _ := engine.ParseLogLine([]byte(line))
			text = string(rest)
		}
		if !engine.IsLogMarker(text) {
			out.WriteString(line)
		}
	}
	return out.String()
}

// testLogsTimes: with Timestamps each line carries the time it was written, not the time it
// was read: two lines written 1.5s apart and read together later are still 1.5s apart, and
// both lie between the start and the read.
func testLogsTimes(t *testing.T, e *env) {
	c := e.container("clock", ".")
	before := time.Now().Add(-2 * time.Second) // clocks of a daemon may be a little off
	e.start(c, `echo first; sleep 1.5; echo second; exec sleep 1000`)
	var got string
	eventually(t, "both lines in the log", func() bool {
		got = readLogs(t, e, c, engine.LogOptions{Timestamps: true})
		return strings.Contains(got, " second\n")
	}, func() string { return got })
	time.Sleep(time.Second) // read well after the writes
	got = readLogs(t, e, c, engine.LogOptions{Timestamps: true})
	after := time.Now().Add(2 * time.Second)
	times := map[string]time.Time{}
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		at, text, ok := engine.ParseLogLine([]byte(line))
		if !ok {
			t.Fatalf("line %q has no time in front; log:\n%s", line, got)
		}
		if at.Before(before) || at.After(after) {
			t.Errorf("line %q: time %v not between the start %v and the read %v", text, at, before, after)
		}
		times[string(text)] = at
	}
	first, second := times["first"], times["second"]
	if first.IsZero() || second.IsZero() {
		t.Fatalf("lines first and second not both in the log:\n%s", got)
	}
	if d := second.Sub(first); d < time.Second || d > 5*time.Second {
		t.Errorf("second line written %v after the first; the command slept 1.5s between them (log:\n%s)", d, got)
	}
	// Without Timestamps the same log reads as the container wrote it.
	if plain := readLogs(t, e, c, engine.LogOptions{}); plain != "first\nsecond\n" {
		t.Errorf("log without times = %q, want %q", plain, "first\nsecond\n")
	}
}

func testLogsTail(t *testing.T, e *env) {
	c := e.container("talker", ".")
	e.start(c, `echo to-stderr >&2; sleep 1; for i in 1 2 3 4 5; do echo "line $i"; done; exec sleep 1000`)
	var all string
	eventually(t, "five lines in the log", func() bool {
		all = readLogs(t, e, c, engine.LogOptions{})
		return strings.HasSuffix(all, "line 5\n")
	}, func() string { return all })
	if want := "to-stderr\nline 1\nline 2\nline 3\nline 4\nline 5\n"; all != want {
		t.Errorf("whole log %q, want %q", all, want)
	}
	if got := readLogs(t, e, c, engine.LogOptions{Tail: 2}); got != "line 4\nline 5\n" {
		t.Errorf("Tail 2: %q", got)
	}
	if got := readLogs(t, e, c, engine.LogOptions{Tail: 100}); got != all {
		t.Errorf("Tail 100 of 6 lines: %q", got)
	}
	if got := readLogs(t, e, c, engine.LogOptions{Tail: -1}); got != "" {
		t.Errorf("Tail -1: %q, want nothing", got)
	}
	// Follow with a tail starts with the tail.
	ctx, cancel := context.WithCancel(e.ctx())
	defer cancel()
	rc, err := e.rt.Logs(ctx, e.p, c, engine.LogOptions{Follow: true, Tail: 1})
	if err != nil {
		t.Fatalf("Logs follow: %v", err)
	}
	defer rc.Close()
	line, err := bufio.NewReader(rc).ReadString('\n')
	if err != nil || line != "line 5\n" {
		t.Errorf("first line followed with Tail 1: %q, %v", line, err)
	}
}

func testLogsFollow(t *testing.T, e *env) {
	c := e.container("ticker", ".")
	e.start(c, `i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.2; done`)
	ctx, cancel := context.WithCancel(e.ctx())
	defer cancel()
	rc, err := e.rt.Logs(ctx, e.p, c, engine.LogOptions{Follow: true, Tail: -1})
	if err != nil {
		t.Fatalf("Logs follow: %v", err)
	}
	defer rc.Close()
	lines := make(chan string)
	ended := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
			}
		}
		ended <- sc.Err()
	}()
	seen := map[string]bool{}
	timeout := time.After(patience)
	for len(seen) < 3 {
		select {
		case l := <-lines:
			if !strings.HasPrefix(l, "tick ") {
				t.Fatalf("followed line %q", l)
			}
			seen[l] = true
		case err := <-ended:
			t.Fatalf("follow stream ended early: %v", err)
		case <-timeout:
			t.Fatalf("follow delivered %d lines in %v", len(seen), patience)
		}
	}
	// Cancelling the context ends the stream.
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatalf("follow stream still open 10s after its context was cancelled")
	}
}

// allLog reads the whole log, markers included, without times.
func allLog(t *testing.T, e *env, c engine.Container) string {
	t.Helper()
	return ReadLog(t)(e.rt.Logs(e.ctx(), e.p, c, engine.LogOptions{}))
}

// ReadLog returns a function that reads a log stream to its end, failing t on any error:
// ReadLog(t)(eng.Logs(...)).
func ReadLog(t testing.TB) func(rc io.ReadCloser, err error) string {
	return func(rc io.ReadCloser, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("logs: %v", err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatalf("reading logs: %v", err)
		}
		return string(b)
	}
}

// InOrder reports whether each of want is in log, in that order: how a test reads a kept log,
// whose markers and lines from other runs stand between the ones it checks.
func InOrder(log string, want ...string) bool {
	for _, w := range want {
		i := strings.Index(log, w)
		if i < 0 {
			return false
		}
		log = log[i+len(w):]
	}
	return true
}

// testLogsKept: a runtime that keeps logs (engine.LogKeeper) keeps a container's log across a
// stop and a start, with the markers of both and of what the engine marks (a hibernation) in
// place; a follow opened while the container is stopped delivers the next run's lines; the
// logs go with DropLogs.
func testLogsKept(t *testing.T, e *env) {
	lk, ok := e.rt.(engine.LogKeeper)
	if !ok {
		t.Skipf("%s keeps no logs across stops (not an engine.LogKeeper)", e.rt.Mode())
	}
	c := e.container("keeper", ".")
	e.start(c, `echo "before one"; echo "before two"; exec sleep 1000`)
	var got string
	eventually(t, "the first run's lines", func() bool {
		got = readLogs(t, e, c, engine.LogOptions{})
		return strings.Contains(got, "before two\n")
	}, func() string { return got })
	if err := e.rt.StopContainer(e.ctx(), e.p, c); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	stopped := engine.LogMarker(engine.LogMarkStopped)
	if got = allLog(t, e, c); !InOrder(got, "before one\n", "before two\n", stopped) {
		t.Fatalf("log of the stopped container = %q, want both lines then %q", got, stopped)
	}
	if err := lk.MarkLog(e.ctx(), e.p, []engine.Container{c}, engine.LogMarkHibernated); err != nil {
		t.Fatalf("MarkLog: %v", err)
	}
	hibernated := engine.LogMarker(engine.LogMarkHibernated)
	if got = allLog(t, e, c); !InOrder(got, "before two\n", stopped, hibernated) {
		t.Fatalf("log after MarkLog = %q, want %q after the stop", got, hibernated)
	}

	// A follow opened now (nothing runs) waits for the next run.
	ctx, cancel := context.WithCancel(e.ctx())
	defer cancel()
	rc, err := e.rt.Logs(ctx, e.p, c, engine.LogOptions{Follow: true, Tail: -1})
	if err != nil {
		t.Fatalf("Logs follow of a stopped container: %v", err)
	}
	defer rc.Close()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	e.start(c, `echo "after one"; exec sleep 1000`)
	timeout := time.After(patience)
	for seen := false; !seen; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("follow ended before the next run's line")
			}
			if strings.Contains(l, "before") {
				t.Fatalf("follow with Tail -1 delivered the old line %q", l)
			}
			seen = l == "after one"
		case <-timeout:
			t.Fatalf("follow opened while stopped did not deliver the next run's line in %v", patience)
		}
	}
	cancel()

	eventually(t, "the second run's line", func() bool {
		got = allLog(t, e, c)
		return strings.Contains(got, "after one\n")
	}, func() string { return got })
	if !InOrder(got, "before one\n", "before two\n", stopped, hibernated, "after one\n") {
		t.Errorf("log across a stop and a start = %q: want the first run, the markers, the second run, in order", got)
	}
	if got := readLogs(t, e, c, engine.LogOptions{Tail: 1}); got != "after one\n" {
		t.Errorf("Tail 1 = %q, want the last line", got)
	}
	if err := e.rt.StopContainer(e.ctx(), e.p, c); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if err := lk.DropLogs(e.ctx(), e.p); err != nil {
		t.Fatalf("DropLogs: %v", err)
	}
	if rc, err := e.rt.Logs(e.ctx(), e.p, c, engine.LogOptions{}); err == nil {
		b, _ := io.ReadAll(rc)
		_ = rc.Close()
		if strings.Contains(string(b), "before") || strings.Contains(string(b), "after") {
			t.Errorf("log after DropLogs = %q, want nothing of the runs", b)
		}
	}
}
