package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// statusRow is the status bar line (the one above the key help).
func statusRow(h *harness) string {
	lines := strings.Split(h.plainView(), "\n")
	return strings.TrimSpace(lines[len(lines)-2])
}

func TestStatusBarLastHibernation(t *testing.T) {
	src := goldenFleet()
	h := newHarness(t, src, Options{}, true).start(120, 40)
	// notes-api was hibernated before the console started: the store's list tells since when.
	if got := statusRow(h); got != "last hibernation notes-api 1h ago" {
		t.Errorf("fresh console: %q", got)
	}

	src.setNow(t0.Add(2 * time.Minute))
	h.send(eventsMsg{ch: closedEvents(), evs: []engine.Event{
		{ProjectID: "p3", Slug: "blog", Kind: "status", From: engine.StatusActive, To: engine.StatusHibernating, Time: t0},
		{ProjectID: "p3", Slug: "blog", Kind: "status", From: engine.StatusHibernating, To: engine.StatusHibernated, Time: t0.Add(time.Minute)},
		{ProjectID: "p1", Slug: "storefront", Kind: "snapshot", Reason: "snapshot ready", Time: t0.Add(2 * time.Minute)},
	}})
	src.setNow(t0.Add(4 * time.Minute))
	h.press("j")
	if got := statusRow(h); got != "last hibernation blog 3m ago" {
		t.Errorf("after a hibernation event: %q", got)
	}

	// Another process hibernating with no event reaching this console: the reload shows it.
	src.mu.Lock()
	src.setProject("p1", func(p *engine.Project) {
		p.Status = engine.StatusHibernated
		p.UpdatedAt = t0.Add(3*time.Minute + 30*time.Second)
	})
	src.mu.Unlock()
	h.send(reloadDueMsg{})
	if got := statusRow(h); got != "last hibernation storefront 29s ago" {
		t.Errorf("after a reload found storefront hibernated: %q", got)
	}
	// An older hibernation found later does not replace the newer one.
	src.mu.Lock()
	src.setProject("p4", func(p *engine.Project) { p.Status = engine.StatusHibernated; p.UpdatedAt = t0 })
	src.mu.Unlock()
	h.send(reloadDueMsg{})
	if got := statusRow(h); !strings.Contains(got, "storefront") {
		t.Errorf("an older hibernation took over: %q", got)
	}
}

// With no project hibernated and none seen, the status bar says for how long it watched.
func TestStatusBarNoHibernation(t *testing.T) {
	src := goldenFleet()
	src.setProject("p2", func(p *engine.Project) { p.Status = engine.StatusActive })
	h := newHarness(t, src, Options{}, true).start(120, 40)
	if got := statusRow(h); got != "no hibernation since this console started just now" {
		t.Errorf("fresh console: %q", got)
	}
	src.setNow(t0.Add(12 * time.Minute))
	h.send(refreshTickMsg{})
	if got := statusRow(h); got != "no hibernation since this console started 12m ago" {
		t.Errorf("12 minutes in: %q", got)
	}
}

func TestStatusBarSweepPreview(t *testing.T) {
	src := goldenFleet() // blog is 42m idle: the dry run takes it
	src.setProject("p2", func(p *engine.Project) { p.Status, p.LastActivity = engine.StatusActive, t0 })
	h := newHarness(t, src, Options{}, true).start(120, 40)
	h.press(":")
	h.typeText("sweep")
	h.press("enter")
	want := "no hibernation since this console started just now · dry run just now: next sweep hibernates 1"
	if got := statusRow(h); got != want {
		t.Errorf("after :sweep: %q, want %q", got, want)
	}
	h.press("esc")
	src.setNow(t0.Add(2 * time.Minute))
	h.press("j")
	if got := statusRow(h); !strings.Contains(got, "dry run 2m ago: next sweep hibernates 1") {
		t.Errorf("back in projects the dry run is forgotten or its age wrong: %q", got)
	}

	// A long message keeps its room; the sweep account shortens, then goes.
	h.send(hintMsg{text: strings.Repeat("x", 70)})
	if got := statusRow(h); !strings.HasSuffix(got, "no hibernation in 2m") {
		t.Errorf("next to a message: %q", got)
	}
	h.send(hintMsg{text: strings.Repeat("x", 100)})
	if got := statusRow(h); strings.Contains(got, "hibernation") {
		t.Errorf("a long message was squeezed: %q", got)
	}
	h.send(hintMsg{text: ""})

	// A hibernation after the dry run may be the sweep it previewed: the preview goes.
	h.send(eventsMsg{ch: closedEvents(), evs: []engine.Event{
		{ProjectID: "p3", Slug: "blog", Kind: "status", To: engine.StatusHibernated, Time: t0.Add(time.Minute)},
	}})
	if got := statusRow(h); got != "last hibernation blog 1m ago" {
		t.Errorf("after the sweep ran: %q", got)
	}
}

func TestContainersUptime(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	src.mu.Lock()
	src.containers["p1"][1].Status = engine.ContainerStatus{State: engine.ContainerStopped, StartedAt: t0.Add(-time.Hour)}
	src.mu.Unlock()
	h.press("j", "enter")
	row := func(name string) string {
		for _, l := range strings.Split(h.plainView(), "\n") {
			if strings.Contains(l, " "+name+" ") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("no row %s:\n%s", name, h.plainView())
		return ""
	}
	if got := row("backend"); !strings.Contains(got, "8000->41001 3h25m 12% 187M http") {
		t.Errorf("running container: %q, want its uptime", got)
	}
	// A stopped container has no uptime, whatever start time the runtime kept.
	if got := row("frontend"); !strings.Contains(got, "stopped 5173 - ") {
		t.Errorf("stopped container: %q", got)
	}
	if !strings.Contains(h.plainView(), "UPTIME") {
		t.Error("no UPTIME column")
	}
}
