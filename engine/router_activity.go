package engine

import (
	"context"
	"fmt"
	"sort"
)

// Traffic through the router is activity (issue 35): a developer who spends an hour in their
// app through its URL touches no sailtui command, so the sweep reads the router's per-route
// request counters and touches each project whose counters moved since the last read.

// RouterMetrics reads a router's request counters (Traefik's or ingress-nginx's Prometheus
// metrics), one total per route, keyed by the route's name as the router gives it.
type RouterMetrics interface {
	ReadCounters(ctx context.Context) (map[string]float64, error)
	// Describe names the router for the report ("traefik http://router:8082/metrics").
	Describe() string
}

// RouteOwner is a project (id or slug) and, when the route says, its container that a route
// may belong to.
type RouteOwner struct {
	Project   string
	Container string
}

// RouteNamer is offered by runtimes whose containers a router serves under names of their
// making (docker: Traefik's services; kubernetes: Ingresses in the project's namespace): it
// says whose a route may be. A name can be read several ways (a slug with a hyphen): the engine
// takes the first owner that exists.
type RouteNamer interface {
	RouteOwners(route string) []RouteOwner
}

// SourceHTTP is the door of requests through the router.
const SourceHTTP = "http"

// RouterReport is what the sweep made of the router's counters.
type RouterReport struct {
	Router string `json:"router"`
	// Touched are the projects whose routes had requests since the last read.
	Touched []string `json:"touched,omitempty"`
	// Reset counts routes whose counters went back (a router restart): not taken as requests.
	Reset int `json:"reset,omitempty"`
	// Error says why the counters could not be read; the sweep then hibernates nothing.
	Error string `json:"error,omitempty"`
	// touched holds the ids of Touched: a dry run, which records nothing, leaves them out of
	// what it says it would hibernate.
	touched map[string]bool
}

// routerActivity reads the router's counters, touches the projects whose routes moved since
// the counters the store kept from the last read, and keeps the new ones. A route seen for the
// first time, or whose counter went back, sets a baseline and touches nothing. It returns
// false when the counters could not be read: the traffic is unknown, so nothing may be taken
// for idle.
func (e *Engine) routerActivity(ctx context.Context, dryRun bool) (*RouterReport, bool) {
	m := e.cfg.RouterMetrics
	if m == nil {
		return nil, true
	}
	rep := &RouterReport{Router: m.Describe()}
	now, err := m.ReadCounters(ctx)
	if err != nil {
		rep.Error = fmt.Sprintf("read the router's request counters: %v; with the traffic unknown no project is hibernated (check SAILTUI_ROUTER_METRICS_URL and that the router answers there)", err)
		return rep, false
	}
	before, err := e.store.RouterCounters(ctx, m.Describe())
	if err != nil {
		rep.Error = fmt.Sprintf("read the counters kept from the last sweep: %v; no project is hibernated", err)
		return rep, false
	}
	namer, _ := e.runtime.(RouteNamer)
	touched := map[string]string{} // project id → slug
	for route, n := range now {
		old, seen := before[route]
		switch {
		case !seen:
			continue
		case n < old:
			rep.Reset++
			continue
		case n == old:
			continue
		}
		if namer == nil {
			continue
		}
		if p, ok := e.routeProject(ctx, namer.RouteOwners(route)); ok {
			touched[p.ID] = p.Slug
		}
	}
	rep.touched = map[string]bool{}
	for id, slug := range touched {
		rep.Touched = append(rep.Touched, slug)
		rep.touched[id] = true
		if dryRun {
			continue
		}
		if err := e.store.Touch(ctx, id, Activity{At: e.now(), Source: SourceHTTP, Actor: "router"}); err != nil {
			rep.Error = fmt.Sprintf("record the traffic of %s: %v; no project is hibernated", slug, err)
			return rep, false
		}
	}
	sort.Strings(rep.Touched)
	if !dryRun {
		if err := e.store.SaveRouterCounters(ctx, m.Describe(), now); err != nil {
			// The touches are in; the next sweep compares with the older counters and touches
			// the same projects again, which is harmless.
			e.log.Warn("keep the router's counters", "router", m.Describe(), "err", err)
		}
	}
	return rep, true
}

// routeProject is the first live project (with the container, when the route names one) of
// owners.
func (e *Engine) routeProject(ctx context.Context, owners []RouteOwner) (Project, bool) {
	for _, o := range owners {
		p, err := e.store.GetProject(ctx, o.Project)
		if err != nil || p.Status == StatusDeleted {
			continue
		}
		if o.Container == "" {
			return p, true
		}
		cs, err := e.store.ListContainers(ctx, p.ID)
		if err != nil {
			continue
		}
		for _, c := range cs {
			if c.Name == o.Container {
				return p, true
			}
		}
	}
	return Project{}, false
}
