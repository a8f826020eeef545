package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// counters is what a router answers, as the test sets it.
type counters struct {
	mu  sync.Mutex
	now map[string]float64
	err error
}

func (c *counters) set(m map[string]float64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.err = m, err
}

func (c *counters) ReadCounters(context.Context) (map[string]float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{}
	for k, v := range c.now {
		out[k] = v
	}
	return out, c.err
}

func (c *counters) Describe() string { return "router test" }

// routed gives the local runtime route names "<slug>/<container>".
type routed struct{ engine.Runtime }

func (routed) RouteOwners(route string) []engine.RouteOwner {
	slug, c, _ := strings.Cut(route, "/")
	return []engine.RouteOwner{{Project: slug, Container: c}}
}

// Requests through the router are activity (issue 35): the sweep touches a project whose route
// counted requests since the last sweep, and only then; a first sighting or a counter that went
// back (a router restart) is a baseline; a router that does not answer keeps every project up
// and fails the sweep, saying so.
func TestRouterTrafficIsActivity(t *testing.T) {
	ctx := context.Background()
	clock := &shiftClock{}
	router := &counters{}
	pt := openTest(t, t.TempDir(), "test-owner", func(c *engine.Config) {
		c.Clock, c.RouterMetrics, c.Runtime = clock, router, routed{c.Runtime}
	})
	for _, slug := range []string{"browsed", "quiet"} {
		p, err := pt.eng.CreateProject(ctx, engine.CreateRequest{Name: slug})
		must(t, err)
		_, err = pt.eng.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "web", Directory: ".", Command: "sleep 600"})
		must(t, err)
	}
	sweep := func(dry bool) engine.SweepReport {
		t.Helper()
		rep, _ := pt.eng.SweepHibernate(ctx, engine.SweepOptions{Idle: 30 * time.Minute, DryRun: dry})
		return rep
	}
	status := func(slug string) engine.ProjectStatus {
		t.Helper()
		p, err := pt.eng.Project(ctx, slug)
		must(t, err)
		return p.Status
	}

	// First read: a baseline, nothing touched (the projects are not idle yet anyway).
	router.set(map[string]float64{"browsed/web": 10, "quiet/web": 3, "nobody/web": 99}, nil)
	if rep := sweep(false); rep.Router == nil || len(rep.Router.Touched) != 0 || len(rep.Hibernated) != 0 {
		t.Fatalf("first sweep: %+v", rep.Router)
	}
	// An hour on, browsed had requests, quiet did not, and the counter of nobody (no such
	// project) moved too. A dry run says so and would hibernate only quiet.
	clock.add(time.Hour)
	router.set(map[string]float64{"browsed/web": 25, "quiet/web": 3, "nobody/web": 120}, nil)
	dry := sweep(true)
	if dry.Router == nil || strings.Join(dry.Router.Touched, ",") != "browsed" || len(dry.Hibernated) != 1 || dry.Hibernated[0].Slug != "quiet" {
		t.Fatalf("dry run: router %+v, would hibernate %+v", dry.Router, dry.Hibernated)
	}
	rep := sweep(false)
	if strings.Join(rep.Router.Touched, ",") != "browsed" || len(rep.Hibernated) != 1 || rep.Hibernated[0].Slug != "quiet" {
		t.Fatalf("sweep: router %+v, hibernated %+v", rep.Router, rep.Hibernated)
	}
	p, err := pt.eng.Project(ctx, "browsed")
	must(t, err)
	if p.Status != engine.StatusActive || p.LastActivitySource != engine.SourceHTTP || p.LastActivityActor != "router" {
		t.Fatalf("browsed: %s, last activity through %q by %q", p.Status, p.LastActivitySource, p.LastActivityActor)
	}

	// The router restarted: its counters began again. That is no request, so an hour later
	// browsed is idle and hibernated.
	clock.add(time.Hour)
	router.set(map[string]float64{"browsed/web": 2}, nil)
	rep = sweep(false)
	if rep.Router.Reset != 1 || len(rep.Router.Touched) != 0 || status("browsed") != engine.StatusHibernated {
		t.Fatalf("after a router restart: router %+v, browsed %s", rep.Router, status("browsed"))
	}

	// A router that does not answer: nothing is taken for idle, and the sweep fails saying why.
	must(t, wake(ctx, pt.eng, "browsed"))
	clock.add(time.Hour)
	router.set(nil, errors.New("connection refused"))
	rep = sweep(false)
	if rep.OK() || rep.Router.Error == "" || !strings.Contains(rep.Router.Error, "no project is hibernated") || status("browsed") != engine.StatusActive {
		t.Fatalf("router down: ok %v, router %+v, browsed %s", rep.OK(), rep.Router, status("browsed"))
	}
}

func wake(ctx context.Context, e *engine.Engine, slug string) error {
	_, err := e.Wake(ctx, slug)
	return err
}
