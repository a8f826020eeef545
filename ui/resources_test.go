package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// containerRow is the named container's row of the screen, its fields joined by one space.
func containerRow(t *testing.T, h *harness, name string) string {
	t.Helper()
	for _, l := range strings.Split(h.plainView(), "\n") {
		if strings.Contains(l, " "+name+" ") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	t.Fatalf("no row %s:\n%s", name, h.plainView())
	return ""
}

// TestContainersResources (issue 17, item 15): the Containers pane shows CPU and MEM of each
// running container, "-" for one that does not run; the figures are read when the pane opens
// and at each refresh tick, never for a key or a frame, nor for an event about the project.
func TestContainersResources(t *testing.T) {
	src, _ := timelineFixture()
	src.containers["p1"] = append(src.containers["p1"], engine.ContainerView{
		Container: engine.Container{Name: "worker", Directory: "worker"}, Status: engine.ContainerStatus{State: engine.ContainerStopped}})
	src.usage["p1"]["worker"] = engine.ContainerUsage{CPU: 3, Memory: 1 << 30} // a stale figure of a stopped one
	h := newHarness(t, src, Options{}, true).start(140, 30)
	h.press("j", "enter")
	if v := h.plainView(); !strings.Contains(v, "CPU") || !strings.Contains(v, "MEM") {
		t.Fatalf("no CPU and MEM columns:\n%s", v)
	}
	if got := containerRow(t, h, "backend"); !strings.Contains(got, "3h25m 12% 187M http") {
		t.Errorf("backend: %q, want 12%% and 187M", got)
	}
	if got := containerRow(t, h, "frontend"); !strings.Contains(got, "12m 0.4% 1.2G http") {
		t.Errorf("frontend: %q, want 0.4%% and 1.2G", got)
	}
	if got := containerRow(t, h, "worker"); !strings.Contains(got, "stopped - - - - -") {
		t.Errorf("worker (stopped): %q, want - for its port, uptime, CPU, MEM and URL", got)
	}
	calls := src.usageCalls.Load()
	if calls != 1 {
		t.Errorf("opening the pane read the usage %d times, want once", calls)
	}

	// Keys and frames read nothing.
	for i := 0; i < 50; i++ {
		h.press([]string{"j", "k", "/", "esc"}[i%4])
		_ = h.view()
	}
	// An event about the project reloads the containers, not what they use.
	containers := src.containerCalls.Load()
	h.send(eventsMsg{ch: closedEvents(), evs: []engine.Event{{ProjectID: "p1", Slug: "storefront", Kind: "container", Reason: "started backend"}}})
	h.send(reloadDueMsg{})
	if src.containerCalls.Load() == containers {
		t.Error("an event about the project did not reload its containers")
	}
	if got := src.usageCalls.Load(); got != calls {
		t.Errorf("keys, frames and an event read the usage %d more times, want none", got-calls)
	}

	// The refresh tick reads it again, and the new figures show.
	src.mu.Lock()
	src.usage["p1"]["backend"] = engine.ContainerUsage{CPU: 1.5, Memory: 45 << 20}
	src.mu.Unlock()
	h.send(refreshTickMsg{})
	if got := src.usageCalls.Load(); got != calls+1 {
		t.Errorf("a refresh tick read the usage %d times, want once", got-calls)
	}
	if got := containerRow(t, h, "backend"); !strings.Contains(got, "150% 45M") {
		t.Errorf("backend after the tick: %q, want 150%% and 45M", got)
	}
}

// TestContainersResourcesNotAvailable: a runtime that cannot measure (a cluster without
// metrics-server) shows "-" in every row, says why once in the status line, and keeps
// "CPU/MEM not available" in the pane's info line; the listing is undisturbed.
func TestContainersResourcesNotAvailable(t *testing.T) {
	src, _ := timelineFixture()
	src.usageErr = fmt.Errorf("CPU and memory %w: the cluster serves no metrics API (metrics.k8s.io/v1beta1); install metrics-server to see them", engine.ErrNotAvailable)
	h := newHarness(t, src, Options{}, true).start(160, 30)
	h.press("j", "enter")
	v := h.plainView()
	if !strings.Contains(v, "CPU/MEM not available") || !strings.Contains(v, "install metrics-server") {
		t.Errorf("no word that CPU and MEM are not available, and why:\n%s", v)
	}
	if got := containerRow(t, h, "backend"); !strings.Contains(got, "running 8000->41001 3h25m - - http://storefront-backend.localhost") {
		t.Errorf("backend: %q, want - for CPU and MEM beside the rest of its row", got)
	}
	if strings.Contains(v, "error") {
		t.Errorf("a runtime that cannot measure reads as an error:\n%s", v)
	}
}
