package kubernetes

import (
	"strings"

	"github.com/sailtui/sailtui/backends/routermetrics"
	"github.com/sailtui/sailtui/engine"
)

// projectIDLen is the length of a project id (a UUID), which the namespace carries whole.
const projectIDLen = 36

// RouteOwners reads a route of the cluster's ingress controller: a project's Ingresses are in
// its namespace, NamespacePrefix + the project's id, which Traefik's service names begin with
// ("<namespace>-<service>-<port>@kubernetes") and ingress-nginx's counters name.
func (r *Runtime) RouteOwners(route string) []engine.RouteOwner {
	var ns string
	if rest, ok := strings.CutPrefix(route, routermetrics.TraefikPrefix); ok {
		if !strings.HasSuffix(rest, "@kubernetes") {
			return nil
		}
		ns = rest
	} else if rest, ok := strings.CutPrefix(route, routermetrics.NginxPrefix); ok {
		ns, _, _ = strings.Cut(rest, "/")
	} else {
		return nil
	}
	id, ok := strings.CutPrefix(ns, r.cfg.NamespacePrefix)
	if !ok || len(id) < projectIDLen {
		return nil
	}
	return []engine.RouteOwner{{Project: id[:projectIDLen]}}
}

var _ engine.RouteNamer = (*Runtime)(nil)
