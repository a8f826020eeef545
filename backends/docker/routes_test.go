package docker

import (
	"reflect"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

func TestRouteOwners(t *testing.T) {
	r := &Runtime{}
	got := r.RouteOwners("traefik:my-shop-web@docker")
	want := []engine.RouteOwner{{Project: "my", Container: "shop-web"}, {Project: "my-shop", Container: "web"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RouteOwners: %+v; want %+v", got, want)
	}
	for _, other := range []string{"traefik:my-shop-web@file", "nginx:ns/web", "traefik:web@docker", "traefik:-web@docker"} {
		if got := r.RouteOwners(other); len(got) != 0 {
			t.Errorf("RouteOwners(%q) = %+v; want none", other, got)
		}
	}
}
