package engine

import (
	"context"
	"strings"
)

// HostNamer is offered by runtimes that serve containers under host names of their making
// (docker: <slug>-<container>.<APP_DOMAIN> through Traefik; kubernetes: the Ingress's host),
// so a request's host tells whose container it is for.
type HostNamer interface {
	Host(p Project, c Container) string
}

// maxHostLen is the longest DNS name and maxLabelLen its longest label: a longer Host header
// names no project (and a label bounds the lookups one request can cause).
const (
	maxHostLen  = 253
	maxLabelLen = 63
)

// ProjectForHost finds the live project and container a request's host is for: a runtime's
// own host (HostNamer), else <slug>-<container>.<domain>. The slug ends at one of the first
// label's hyphens, so each is tried. ErrNotFound when none is, the same whether no project or a
// deleted one was meant (a request must learn nothing about which projects exist).
func (e *Engine) ProjectForHost(ctx context.Context, host, domain string) (Project, Container, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	label, rest, ok := strings.Cut(host, ".")
	if !ok || len(host) > maxHostLen || label == "" || len(label) > maxLabelLen {
		return Project{}, Container{}, ErrNotFound
	}
	namer, _ := e.runtime.(HostNamer)
	if namer == nil && rest != strings.ToLower(domain) {
		return Project{}, Container{}, ErrNotFound
	}
	for i := 1; i < len(label)-1; i++ {
		if label[i] != '-' {
			continue
		}
		p, err := e.store.GetProject(ctx, label[:i])
		if err != nil || p.Status == StatusDeleted || p.Slug != label[:i] {
			continue
		}
		cs, err := e.store.ListContainers(ctx, p.ID)
		if err != nil {
			continue
		}
		for _, c := range cs {
			if c.Kind != KindApp {
				continue // services and external ones have no URL
			}
			want := p.Slug + "-" + c.Name + "." + domain
			if namer != nil {
				want = namer.Host(p, c)
			}
			if strings.EqualFold(want, host) {
				return p, c, nil
			}
		}
	}
	return Project{}, Container{}, ErrNotFound
}
