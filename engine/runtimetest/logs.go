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
}

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
	return string(b)
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
