package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// startClock makes project clock with container tick, which prints one, then two 1.5s later,
// and waits for both in its log.
func startClock(t *testing.T, c *cli) {
	t.Helper()
	c.ok("project", "create", "clock")
	c.ok("container", "add", "clock", "tick", "--dir", ".", "--command", `echo one; sleep 1.5; echo two; exec sleep 600`)
	c.ok("project", "start", "clock")
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(c.ok("logs", "clock", "tick"), "two\n"); {
		if time.Now().After(deadline) {
			t.Fatalf("no second line: %q", c.ok("logs", "clock", "tick"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logs -t prints the time each line was written (issue 17, item 3), also for lines read long
// after; plain logs print the lines as written, with the markers of the container's stops,
// starts and the project's hibernation (item 4), whose log outlives the hibernation.
func TestCLILogsTimesAndMarkers(t *testing.T) {
	c := newCLI(t)
	startClock(t, c)
	time.Sleep(time.Second)
	out := c.ok("logs", "clock", "tick", "--timestamps")
	times := map[string]time.Time{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		at, text, ok := engine.ParseLogLine([]byte(line))
		if !ok {
			t.Fatalf("logs -t line without a time: %q", line)
		}
		times[string(text)] = at
	}
	if d := times["two"].Sub(times["one"]); d < time.Second || d > 5*time.Second {
		t.Errorf("logs -t: two %v after one (slept 1.5s between them):\n%s", d, out)
	}
	c.ok("project", "hibernate", "clock")
	if got, want := c.ok("logs", "clock", "tick"), "— started —\none\ntwo\n— stopped —\n— hibernated —\n"; got != want {
		t.Errorf("logs of the hibernated project = %q, want %q", got, want)
	}
	c.ok("project", "wake", "clock")
	// Both lines of the woken container are there (then it only sleeps, so the log is still).
	for deadline := time.Now().Add(20 * time.Second); strings.Count(c.ok("logs", "clock", "tick"), "two\n") < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("no output after the wake: %q", c.ok("logs", "clock", "tick"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got, want := c.ok("logs", "clock", "tick", "--tail", "5"), "— hibernated —\n— woke —\n— started —\none\ntwo\n"; got != want {
		t.Errorf("logs --tail 5 after the wake = %q, want %q", got, want)
	}
}
