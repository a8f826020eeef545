package storetest

import (
	"testing"

	"github.com/sailtui/sailtui/engine"
)

var containerTests = []test{
	{"Containers", testContainers},
	{"DeleteContainerDropsConnections", testDeleteContainerDropsConnections},
	{"Connections", testConnections},
}

func testContainers(t *testing.T, s engine.Store) {
	p := createActive(t, s, "app", t0)
	other := createActive(t, s, "other", t0)
	web := engine.Container{ProjectID: p.ID, Name: "web", Directory: "frontend", Port: 3000,
		Env: map[string]string{"A": "1", "QUOTES": `"x" 'y' \n`}, CreatedAt: t0}
	api := engine.Container{ProjectID: p.ID, Name: "api", Directory: "backend", Command: "uvicorn main:app", CreatedAt: t0}
	noErr(t, "PutContainer web", s.PutContainer(t.Context(), web))
	noErr(t, "PutContainer api", s.PutContainer(t.Context(), api))
	noErr(t, "PutContainer other", s.PutContainer(t.Context(), engine.Container{ProjectID: other.ID, Name: "web", Directory: "."}))
	checkContainers(t, s, p.ID, []engine.Container{web, api})

	// Replacing by (project, name) changes every field and keeps the container's connections.
	noErr(t, "PutConnection", s.PutConnection(t.Context(), engine.Connection{ProjectID: p.ID, From: "web", To: "api"}))
	web2 := web
	web2.Directory, web2.Port, web2.Command = "ui", 5173, "npm run dev"
	web2.Env = map[string]string{"B": "2"}
	web2.GitURL, web2.GitBranch = "https://example.com/ui.git", "dev"
	noErr(t, "PutContainer replace", s.PutContainer(t.Context(), web2))
	checkContainers(t, s, p.ID, []engine.Container{web2, api})
	checkConnections(t, s, p.ID, []engine.Connection{{ProjectID: p.ID, From: "web", To: "api"}})

	// A service keeps what it is: kind, image, data path, exports, resources, a command given by
	// hand (OwnCommand); and back to an app.
	db := engine.Container{ProjectID: p.ID, Name: "db", Directory: ".", Port: 5432, CreatedAt: t0,
		Kind: engine.KindService, Image: "postgres:16", DataPath: "/var/lib/postgresql/data",
		Command: "exec postgres -c fsync=off", OwnCommand: true,
		Env:       map[string]string{"POSTGRES_DB": "app"},
		Exports:   map[string]string{"DATABASE_URL": "postgres://${HOST}:${PORT}/${POSTGRES_DB}"},
		Resources: engine.Resources{MemoryLimit: "1Gi", CPURequest: "100m"}}
	ext := engine.Container{ProjectID: p.ID, Name: "auth", Directory: ".", CreatedAt: t0, Kind: engine.KindExternal,
		Endpoint: "https://x.supabase.co", Exports: map[string]string{"SUPABASE_URL": "https://x.supabase.co"}}
	web2.Primary, web2.Image = true, "ghcr.io/acme/web:1"
	noErr(t, "PutContainer service", s.PutContainer(t.Context(), db))
	noErr(t, "PutContainer external", s.PutContainer(t.Context(), ext))
	noErr(t, "PutContainer primary", s.PutContainer(t.Context(), web2))
	checkContainers(t, s, p.ID, []engine.Container{web2, api, db, ext})
	web2.Primary, web2.Image = false, ""
	noErr(t, "PutContainer app again", s.PutContainer(t.Context(), web2))
	noErr(t, "DeleteContainer service", s.DeleteContainer(t.Context(), p.ID, "db"))
	noErr(t, "DeleteContainer external", s.DeleteContainer(t.Context(), p.ID, "auth"))
	checkContainers(t, s, p.ID, []engine.Container{web2, api})

	// Env may be emptied.
	web3 := web2
	web3.Env = nil
	noErr(t, "PutContainer without env", s.PutContainer(t.Context(), web3))
	checkContainers(t, s, p.ID, []engine.Container{web3, api})

	wantErr(t, "PutContainer for a missing project",
		s.PutContainer(t.Context(), engine.Container{ProjectID: newID(), Name: "web", Directory: "."}), engine.ErrNotFound)
	wantErr(t, "DeleteContainer missing", s.DeleteContainer(t.Context(), p.ID, "nope"), engine.ErrNotFound)

	noErr(t, "DeleteContainer", s.DeleteContainer(t.Context(), p.ID, "api"))
	checkContainers(t, s, p.ID, []engine.Container{web3})
	checkContainers(t, s, other.ID, []engine.Container{{ProjectID: other.ID, Name: "web", Directory: "."}})
}

func testDeleteContainerDropsConnections(t *testing.T, s engine.Store) {
	p := createActive(t, s, "graph", t0)
	for _, n := range []string{"web", "api", "db", "worker"} {
		noErr(t, "PutContainer "+n, s.PutContainer(t.Context(), engine.Container{ProjectID: p.ID, Name: n, Directory: n}))
	}
	conns := []engine.Connection{
		{ProjectID: p.ID, From: "web", To: "api"},
		{ProjectID: p.ID, From: "api", To: "db"},
		{ProjectID: p.ID, From: "worker", To: "db"},
		{ProjectID: p.ID, From: "worker", To: "api"},
	}
	for _, c := range conns {
		noErr(t, "PutConnection", s.PutConnection(t.Context(), c))
	}
	// Another project's container of the same name keeps its connections.
	q := createActive(t, s, "twin", t0)
	for _, n := range []string{"web", "api"} {
		noErr(t, "PutContainer twin "+n, s.PutContainer(t.Context(), engine.Container{ProjectID: q.ID, Name: n, Directory: n}))
	}
	noErr(t, "PutConnection twin", s.PutConnection(t.Context(), engine.Connection{ProjectID: q.ID, From: "web", To: "api"}))

	// api is named as From by one connection and as To by two.
	noErr(t, "DeleteContainer api", s.DeleteContainer(t.Context(), p.ID, "api"))
	checkConnections(t, s, p.ID, []engine.Connection{{ProjectID: p.ID, From: "worker", To: "db"}})
	checkConnections(t, s, q.ID, []engine.Connection{{ProjectID: q.ID, From: "web", To: "api"}})
}

func testConnections(t *testing.T, s engine.Store) {
	p := createActive(t, s, "wired", t0)
	for _, n := range []string{"web", "api"} {
		noErr(t, "PutContainer "+n, s.PutContainer(t.Context(), engine.Container{ProjectID: p.ID, Name: n, Directory: n}))
	}
	c := engine.Connection{ProjectID: p.ID, From: "web", To: "api"}
	noErr(t, "PutConnection", s.PutConnection(t.Context(), c))
	noErr(t, "PutConnection again", s.PutConnection(t.Context(), c))
	checkConnections(t, s, p.ID, []engine.Connection{c})

	wantErr(t, "PutConnection naming a missing container",
		s.PutConnection(t.Context(), engine.Connection{ProjectID: p.ID, From: "web", To: "ghost"}), engine.ErrNotFound)

	noErr(t, "DeleteConnection", s.DeleteConnection(t.Context(), c))
	checkConnections(t, s, p.ID, nil)
	wantErr(t, "DeleteConnection again", s.DeleteConnection(t.Context(), c), engine.ErrNotFound)
	checkContainers(t, s, p.ID, []engine.Container{
		{ProjectID: p.ID, Name: "web", Directory: "web"}, {ProjectID: p.ID, Name: "api", Directory: "api"},
	})
}
