package docker

import (
	"strings"

	"github.com/sailtui/sailtui/backends/routermetrics"
	"github.com/sailtui/sailtui/engine"
)

// RouteOwners reads a Traefik route of the docker provider: its service is named after the
// container, "<slug>-<container>@docker" (containerName), so each hyphen is a place the slug
// may end; the engine keeps the reading whose project has that container.
func (r *Runtime) RouteOwners(route string) []engine.RouteOwner {
	name, ok := strings.CutPrefix(route, routermetrics.TraefikPrefix)
	if !ok {
		return nil
	}
	name, ok = strings.CutSuffix(name, "@docker")
	if !ok {
		return nil
	}
	var out []engine.RouteOwner
	for i := range len(name) {
		if name[i] == '-' && i > 0 && i < len(name)-1 {
			out = append(out, engine.RouteOwner{Project: name[:i], Container: name[i+1:]})
		}
	}
	return out
}

var _ engine.RouteNamer = (*Runtime)(nil)
