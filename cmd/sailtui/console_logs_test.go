package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// Issue 17, items 3 and 4 on the real binary: t shows when each line was written (a backlog
// read long after, in one go, keeps its times), the pane says a stopped container is stopped
// rather than streaming, with the stop's marker in the log, and streams again once it starts.
func TestConsoleLogTimesAndState(t *testing.T) {
	c := newCLI(t)
	startClock(t, c)
	c.ok("container", "stop", "clock", "tick")
	time.Sleep(1500 * time.Millisecond) // the console reads the log well after it was written
	opened := time.Now()
	s := startConsole(t, c)
	s.waitFor("clock")
	s.keys(":", "containers clock", "Enter")
	s.waitFor("Projects › clock", "tick")
	s.keys(":", "logs tick", "Enter")
	scr := s.waitFor("tick › Logs", "two", "— stopped —", "■ stopped")
	if strings.Contains(scr, "streaming") {
		t.Errorf("a stopped container's log says streaming:\n%s", scr)
	}
	s.keys("t")
	scr = s.waitFor("time on")
	clock := regexp.MustCompile(`(\d\d):(\d\d):(\d\d)\.(\d\d\d) (one|two)\b`)
	at := map[string]time.Duration{}
	for _, m := range clock.FindAllStringSubmatch(scr, -1) {
		d, err := time.ParseDuration(m[1] + "h" + m[2] + "m" + m[3] + "s" + m[4] + "ms")
		if err != nil {
			t.Fatal(err)
		}
		at[m[5]] = d
	}
	first, okf := at["one"]
	second, oks := at["two"]
	if !okf || !oks {
		t.Fatalf("no times in front of the lines:\n%s", scr)
	}
	if d := second - first; d < time.Second || d > 5*time.Second {
		t.Errorf("two shown %v after one; they were written 1.5s apart:\n%s", d, scr)
	}
	y, mo, dd := opened.Date()
	midnight := time.Date(y, mo, dd, 0, 0, 0, 0, time.Local)
	if shown := midnight.Add(second); !shown.Before(opened) {
		t.Errorf("two is shown at %v, not before the console opened (%v): the time it was read, not written:\n%s", shown, opened, scr)
	}

	// Started again: the pane streams again, the new run's lines after the marker.
	c.ok("container", "start", "clock", "tick")
	scr = s.waitFor("● streaming", "— started —")
	if strings.Count(scr, " one") < 2 {
		time.Sleep(time.Second)
		if scr = s.screen(); strings.Count(scr, " one") < 2 {
			t.Errorf("the new run's output is not in the pane:\n%s", scr)
		}
	}
}
