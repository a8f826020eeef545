package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// eventsWatch is `sailtui events -o json` on a PostgreSQL store, in a process of its own: what
// a console in another process hears.
type eventsWatch struct {
	t      *testing.T
	events <-chan engine.Event
}

// watchEvents starts it and returns once it hears the store: a project created after it
// started reaches it (the listener connects after the process starts, however loaded the
// machine is).
func watchEvents(t *testing.T, c *cli, dsn string) *eventsWatch {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--state-dir", c.state, "events", "-o", "json")
	cmd.Env = append(os.Environ(), "SAILTUI_TEST_MAIN=1", "DATABASE_URL="+dsn)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	events := make(chan engine.Event, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e engine.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		close(events)
	}()
	w := &eventsWatch{t: t, events: events}
	for i := 0; ; i++ {
		if i == 20 {
			t.Fatal("sailtui events heard none of 20 projects created")
		}
		probe := fmt.Sprintf("probe-%d", i)
		c.ok("project", "create", probe)
		if w.heard(probe, "", time.Second) {
			return w
		}
	}
}

// next is the next event within the time given; false when none came.
func (w *eventsWatch) next(within time.Duration) (engine.Event, bool) {
	w.t.Helper()
	select {
	case e, ok := <-w.events:
		if !ok {
			w.t.Fatal("the events stream ended")
		}
		return e, true
	case <-time.After(within):
		return engine.Event{}, false
	}
}

// heard waits for an event of slug (of kind, unless kind is empty), skipping others.
func (w *eventsWatch) heard(slug, kind string, within time.Duration) bool {
	w.t.Helper()
	deadline := time.Now().Add(within)
	for {
		e, ok := w.next(time.Until(deadline))
		if !ok {
			return false
		}
		if e.Slug == slug && (kind == "" || e.Kind == kind) {
			return true
		}
	}
}
