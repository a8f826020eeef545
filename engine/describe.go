package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// activityDoor is " · SOURCE (by ACTOR)" of p's newest activity, as much of it as is known
// (projects touched before sources were recorded have none).
func activityDoor(p Project) string {
	s := ""
	if p.LastActivitySource != "" {
		s = " · " + p.LastActivitySource
	}
	if p.LastActivityActor != "" {
		s += " (by " + p.LastActivityActor + ")"
	}
	return s
}

// Describe is the runtime's own view of a project, after sailtui's own: its containers, the
// primary app first with the URL to open, and what each connection gives (the export keys).
func (e *Engine) Describe(ctx context.Context, ref string) (string, error) {
	p, views, err := e.Containers(ctx, ref)
	if err != nil {
		return "", err
	}
	conns, err := e.store.ListConnections(ctx, p.ID)
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	text, err := e.runtime.Describe(ctx, p, Running(containersOf(views)))
	if err != nil {
		return "", err
	}
	return describeHeader(p, views, conns, e.now()) + text, nil
}

func containersOf(views []ContainerView) []Container {
	cs := make([]Container, len(views))
	for i, v := range views {
		cs[i] = v.Container
	}
	return cs
}

// describeHeader is the part of Describe every runtime shares.
func describeHeader(p Project, views []ContainerView, conns []Connection, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Project %s (%s)\n", p.Slug, p.Status)
	ordered := slices.Clone(views)
	slices.SortStableFunc(ordered, func(a, b ContainerView) int {
		switch {
		case a.Primary == b.Primary:
			return 0
		case a.Primary:
			return -1
		}
		return 1
	})
	for _, v := range ordered {
		what := v.Kind.String() + " in " + v.Directory
		switch v.Kind {
		case KindService:
			what = "service " + v.Image + ", data at " + v.DataPath
			if v.Status.Volume != "" {
				what += " (volume " + v.Status.Volume + ")"
			}
		case KindExternal:
			what = "external " + v.Endpoint
		}
		mark := ""
		if v.Primary {
			mark = " (primary)"
		}
		url := v.Status.URL
		if v.Status.Unrouted || url == "" {
			url = v.Status.LocalURL
		}
		fmt.Fprintf(&b, "  %s%s: %s, %s", v.Name, mark, what, v.Status.State)
		if url != "" {
			fmt.Fprintf(&b, ", %s", url)
		}
		if v.Status.RouteProblem != "" {
			fmt.Fprintf(&b, " (not served: %s)", v.Status.RouteProblem)
		}
		b.WriteString("\n")
	}
	for _, cn := range conns {
		keys := ""
		for _, v := range views {
			if v.Name == cn.To && len(v.Exports) > 0 {
				keys = " (" + strings.Join(slices.Sorted(maps.Keys(v.Exports)), ", ") + ")"
			}
		}
		fmt.Fprintf(&b, "  %s → %s%s\n", cn.From, cn.To, keys)
	}
	// After the containers, which come first because the primary app's URL is what most look for.
	if !p.LastActivity.IsZero() {
		fmt.Fprintf(&b, "  last activity: %s%s\n", p.LastActivity.Format(time.RFC3339), activityDoor(p))
	}
	if p.KeptAlive(now) {
		fmt.Fprintf(&b, "  kept alive until %s: the idle sweep leaves it alone until then\n", p.KeepAliveUntil.Format(time.RFC3339))
	}
	b.WriteString("\n")
	return b.String()
}
