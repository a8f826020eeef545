package kubernetes

import (
	"testing"
)

func TestRouteOwners(t *testing.T) {
	r := &Runtime{cfg: Config{NamespacePrefix: "proj-"}}
	const id = "6ed5395a-1dee-4bf9-8b0f-baa319b61e7c"
	for route, want := range map[string]string{
		"traefik:proj-" + id + "-dev-web-http@kubernetes":  id,
		"nginx:proj-" + id + "/dev-web":                    id,
		"traefik:proj-" + id + "-dev-web-http@docker":      "",
		"traefik:other-" + id + "-dev-web-http@kubernetes": "",
		"nginx:proj-short/dev-web":                         "",
	} {
		got := r.RouteOwners(route)
		switch {
		case want == "" && len(got) != 0:
			t.Errorf("RouteOwners(%q) = %+v; want none", route, got)
		case want != "" && (len(got) != 1 || got[0].Project != want || got[0].Container != ""):
			t.Errorf("RouteOwners(%q) = %+v; want project %s", route, got, want)
		}
	}
}
