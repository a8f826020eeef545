package ui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// The header says "live" only while the store answers: once a read of the list fails (the
// database went down while its event stream stays up) it says since when the list is stale
// and why, and goes back to live when a read succeeds again.
func TestHeaderStaleWhileStoreFails(t *testing.T) {
	src := newFakeSource(genProjects(2))
	h := newHarness(t, src, Options{}, true).start(160, 24)
	h.wait = 200 * time.Millisecond // the event stream's wait blocks
	h.send(subscribedMsg{ch: make(chan engine.Event)})
	if v := h.plainView(); !strings.Contains(v, "● live") {
		t.Fatalf("not live with the store answering and events subscribed:\n%s", v)
	}
	loaded := h.m.env.now

	src.mu.Lock()
	src.listErr = errors.New("failed to connect to `host=127.0.0.1 user=sailtui`: dial error: connection refused")
	src.mu.Unlock()
	h.m.env.now = loaded.Add(90 * time.Second)
	h.send(reloadDueMsg{})
	header := strings.Split(h.plainView(), "\n")[0]
	if strings.Contains(header, "● live") || !strings.Contains(header, "● stale since "+loaded.Format("15:04:05")+": failed to connect") {
		t.Fatalf("header with the store failing since %s: %q", loaded.Format("15:04:05"), header)
	}
	// A second failure keeps the time the list was last good.
	h.m.env.now = loaded.Add(3 * time.Minute)
	h.send(refreshTickMsg{})
	if header := strings.Split(h.plainView(), "\n")[0]; !strings.Contains(header, "stale since "+loaded.Format("15:04:05")) {
		t.Fatalf("header after a second failure: %q", header)
	}

	src.mu.Lock()
	src.listErr = nil
	src.mu.Unlock()
	h.send(reloadDueMsg{})
	if header := strings.Split(h.plainView(), "\n")[0]; !strings.Contains(header, "● live") || strings.Contains(header, "stale") {
		t.Fatalf("header once the store answers again: %q", header)
	}
}
