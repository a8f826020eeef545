package ui

import (
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// TestContainersShowWorkingURLAndPort (issue 20, items 3 and 8): with no router in front
// (Unrouted) the Containers pane shows the local URL, not the route that cannot resolve, and the
// PORT column the service's port with the host port it is reached at.
func TestContainersShowWorkingURLAndPort(t *testing.T) {
	ps := []engine.Project{{ID: "p1", Slug: "shop", Name: "shop", Status: engine.StatusActive, LastActivity: t0, UpdatedAt: t0}}
	src := newFakeSource(ps)
	src.containers["p1"] = []engine.ContainerView{{
		Container: engine.Container{Name: "web", Directory: "web"},
		Status: engine.ContainerStatus{State: engine.ContainerRunning, Port: 5173, HostPort: 33001,
			URL: "http://shop-web.localhost/", LocalURL: "http://127.0.0.1:33001/", Unrouted: true},
	}}
	h := newHarness(t, src, Options{}, true).start(140, 30)
	h.press("enter")
	v := h.plainView()
	if !strings.Contains(v, "http://127.0.0.1:33001/") || strings.Contains(v, "shop-web.localhost") {
		t.Errorf("the Containers pane does not show the local URL:\n%s", v)
	}
	if !strings.Contains(v, "5173->33001") {
		t.Errorf("the PORT column does not show the service's port:\n%s", v)
	}
}

// TestFailedProjectShowsNextStep (issue 20, item 7): a selected failed project shows what to do.
func TestFailedProjectShowsNextStep(t *testing.T) {
	ps := []engine.Project{{ID: "p1", Slug: "shop", Name: "shop", Status: engine.StatusFailed, HibernationSnapshot: "s1",
		StatusReason: "teardown incomplete; wake restores from s1", LastActivity: t0, UpdatedAt: t0}}
	h := newHarness(t, newFakeSource(ps), Options{}, true).start(200, 30)
	if v := h.plainView(); !strings.Contains(v, "next: sailtui project hibernate shop") {
		t.Errorf("no next step for the failed project:\n%s", v)
	}
}
