package storetest

import (
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var projectTests = []test{
	{"CreateAndGetProject", testCreateAndGetProject},
	{"CreateProjectIsAtomic", testCreateProjectIsAtomic},
	{"CreateProjectSlugInUse", testCreateProjectSlugInUse},
	{"DeletedSlugIsReused", testDeletedSlugIsReused},
	{"GetProjectNotFound", testGetProjectNotFound},
	{"ListProjectsFilters", testListProjectsFilters},
	{"IdleProjects", testIdleProjects},
	{"HeldProjects", testHeldProjects},
	{"TouchKeepsMaximum", testTouchKeepsMaximum},
}

func testCreateAndGetProject(t *testing.T, s engine.Store) {
	// Times given in another zone must come back as the same instant in UTC.
	paris := time.FixedZone("CEST", 2*3600)
	p := newProject("shop", t0.In(paris))
	p.StatusReason = "created"
	p.HibernationSnapshot = "snap-0"
	cs := []engine.Container{
		{Name: "web", Directory: "frontend", Port: 5173, Command: "npm run dev",
			Env:    map[string]string{"API_URL": "http://api:8000", "EMPTY": "", "UNICODE": "héllo=wörld"},
			GitURL: "https://example.com/shop.git", GitBranch: "main", CreatedAt: t0},
		{Name: "api", Directory: ".", CreatedAt: t0.In(paris)},
	}
	conns := []engine.Connection{{From: "web", To: "api"}}
	create(t, s, p, cs, conns)

	checkProject(t, "by id", get(t, s, p.ID), p)
	checkProject(t, "by slug", get(t, s, "shop"), p)
	for i := range cs {
		cs[i].ProjectID = p.ID
	}
	checkContainers(t, s, p.ID, cs)
	checkConnections(t, s, p.ID, []engine.Connection{{ProjectID: p.ID, From: "web", To: "api"}})
}

// A project whose connection names no container is refused whole: no project, no containers.
func testCreateProjectIsAtomic(t *testing.T, s engine.Store) {
	p := newProject("half", t0)
	err := s.CreateProject(t.Context(), p,
		[]engine.Container{{Name: "web", Directory: "."}},
		[]engine.Connection{{From: "web", To: "missing"}})
	if err == nil {
		t.Fatal("CreateProject with a connection to a missing container succeeded")
	}
	_, err = s.GetProject(t.Context(), p.ID)
	wantErr(t, "GetProject after failed create", err, engine.ErrNotFound)
	cs, err := s.ListContainers(t.Context(), p.ID)
	if err == nil && len(cs) != 0 {
		t.Errorf("containers left behind by failed create: %+v", cs)
	}
	// The slug is still free.
	createActive(t, s, "half", t0)
}

func testCreateProjectSlugInUse(t *testing.T, s engine.Store) {
	p := createActive(t, s, "taken", t0)
	err := s.CreateProject(t.Context(), newProject("taken", t0), nil, nil)
	wantErr(t, "CreateProject with a live slug", err, engine.ErrExists)

	dup := newProject("other", t0)
	dup.ID = p.ID
	err = s.CreateProject(t.Context(), dup, nil, nil)
	wantErr(t, "CreateProject with an existing id", err, engine.ErrExists)

	ps, err := s.ListProjects(t.Context(), engine.ProjectFilter{IncludeDeleted: true})
	noErr(t, "ListProjects", err)
	checkIDs(t, "projects", sortedIDs(ps, projectID), sorted(p.ID))
}

func testDeletedSlugIsReused(t *testing.T, s engine.Store) {
	old := createActive(t, s, "reuse", t0.Add(-2*time.Hour))
	softDelete(t, s, old)

	// Only deleted projects carry the slug: the lookup still finds one.
	if got := get(t, s, "reuse"); got.ID != old.ID || got.Status != engine.StatusDeleted {
		t.Errorf("GetProject(slug) with only a deleted project = %s %s, want %s deleted", got.ID, got.Status, old.ID)
	}

	fresh := createActive(t, s, "reuse", t0)
	if got := get(t, s, "reuse"); got.ID != fresh.ID {
		t.Errorf("GetProject(slug) = %s, want the live project %s", got.ID, fresh.ID)
	}
	if got := get(t, s, old.ID); got.Status != engine.StatusDeleted || got.Slug != "reuse" {
		t.Errorf("deleted project by id = %s %q, want deleted \"reuse\"", got.Status, got.Slug)
	}
	err := s.CreateProject(t.Context(), newProject("reuse", t0), nil, nil)
	wantErr(t, "CreateProject over the new live slug", err, engine.ErrExists)

	// A second generation of deletion and reuse works too.
	softDelete(t, s, fresh)
	third := createActive(t, s, "reuse", t0)
	if got := get(t, s, "reuse"); got.ID != third.ID {
		t.Errorf("GetProject(slug) = %s, want the live project %s", got.ID, third.ID)
	}
}

func testGetProjectNotFound(t *testing.T, s engine.Store) {
	createActive(t, s, "exists", t0)
	for _, key := range []string{newID(), "nope", ""} {
		_, err := s.GetProject(t.Context(), key)
		wantErr(t, "GetProject("+key+")", err, engine.ErrNotFound)
	}
}

func testListProjectsFilters(t *testing.T, s engine.Store) {
	aliceActive := createActive(t, s, "a-active", t0)
	bob := newProject("b-active", t0)
	bob.Owner = "bob"
	create(t, s, bob, nil, nil)
	aliceHib := newProject("a-hib", t0)
	aliceHib.Status = engine.StatusHibernated
	create(t, s, aliceHib, nil, nil)
	aliceFailed := newProject("a-failed", t0)
	aliceFailed.Status = engine.StatusFailed
	create(t, s, aliceFailed, nil, nil)
	aliceGone := createActive(t, s, "a-gone", t0)
	softDelete(t, s, aliceGone)

	cases := []struct {
		name string
		f    engine.ProjectFilter
		want []string
	}{
		{"all live", engine.ProjectFilter{}, sorted(aliceActive.ID, bob.ID, aliceHib.ID, aliceFailed.ID)},
		{"include deleted", engine.ProjectFilter{IncludeDeleted: true},
			sorted(aliceActive.ID, bob.ID, aliceHib.ID, aliceFailed.ID, aliceGone.ID)},
		{"one status", engine.ProjectFilter{Statuses: []engine.ProjectStatus{engine.StatusHibernated}}, sorted(aliceHib.ID)},
		{"two statuses", engine.ProjectFilter{Statuses: []engine.ProjectStatus{engine.StatusActive, engine.StatusFailed}},
			sorted(aliceActive.ID, bob.ID, aliceFailed.ID)},
		{"owner", engine.ProjectFilter{Owner: "bob"}, sorted(bob.ID)},
		{"owner and status", engine.ProjectFilter{Owner: "alice", Statuses: []engine.ProjectStatus{engine.StatusActive}},
			sorted(aliceActive.ID)},
		{"owner with deleted", engine.ProjectFilter{Owner: "alice", IncludeDeleted: true},
			sorted(aliceActive.ID, aliceHib.ID, aliceFailed.ID, aliceGone.ID)},
		{"unknown owner", engine.ProjectFilter{Owner: "carol"}, sorted()},
		{"status nobody has", engine.ProjectFilter{Statuses: []engine.ProjectStatus{engine.StatusRestoring}}, sorted()},
	}
	for _, tc := range cases {
		ps, err := s.ListProjects(t.Context(), tc.f)
		noErr(t, "ListProjects "+tc.name, err)
		checkIDs(t, "ListProjects "+tc.name, sortedIDs(ps, projectID), tc.want)
	}
}

func testIdleProjects(t *testing.T, s engine.Store) {
	cutoff := t0.Add(-10 * time.Minute)
	p60 := createActive(t, s, "idle-60", t0.Add(-60*time.Minute))
	p20 := createActive(t, s, "idle-20", t0.Add(-20*time.Minute))
	p40 := createActive(t, s, "idle-40", t0.Add(-40*time.Minute))
	createActive(t, s, "busy", t0.Add(-5*time.Minute))
	createActive(t, s, "at-cutoff", cutoff) // "before" the cutoff is strict
	hib := newProject("hibernated", t0.Add(-90*time.Minute))
	hib.Status = engine.StatusHibernated
	create(t, s, hib, nil, nil)
	held := createActive(t, s, "held", t0.Add(-90*time.Minute))
	hold(t, s, held, newID())
	gone := createActive(t, s, "gone", t0.Add(-90*time.Minute))
	softDelete(t, s, gone)

	ps, err := s.IdleProjects(t.Context(), cutoff, t0, 0)
	noErr(t, "IdleProjects", err)
	checkIDs(t, "IdleProjects, oldest first", ids(ps), []string{p60.ID, p40.ID, p20.ID})
	for _, p := range ps {
		checkUTC(t, "idle project "+p.Slug, p.LastActivity, p.CreatedAt, p.UpdatedAt)
	}

	ps, err = s.IdleProjects(t.Context(), cutoff, t0, 2)
	noErr(t, "IdleProjects limit 2", err)
	checkIDs(t, "IdleProjects limit 2", ids(ps), []string{p60.ID, p40.ID})

	ps, err = s.IdleProjects(t.Context(), t0.Add(-24*time.Hour), t0, 0)
	noErr(t, "IdleProjects nothing idle", err)
	checkIDs(t, "IdleProjects nothing idle", ids(ps), nil)
}

func ids(ps []engine.Project) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func testHeldProjects(t *testing.T, s engine.Store) {
	a := createActive(t, s, "a", t0)
	b := createActive(t, s, "b", t0)
	createActive(t, s, "c", t0)

	ps, err := s.HeldProjects(t.Context())
	noErr(t, "HeldProjects", err)
	checkIDs(t, "HeldProjects with none held", sortedIDs(ps, projectID), nil)

	opA, opB := newID(), newID()
	heldA := hold(t, s, a, opA)
	hold(t, s, b, opB)
	ps, err = s.HeldProjects(t.Context())
	noErr(t, "HeldProjects", err)
	checkIDs(t, "HeldProjects", sortedIDs(ps, projectID), sorted(a.ID, b.ID))
	for _, p := range ps {
		if p.OpID == "" || p.OpOwner != "sweep-1" || p.OpKind != engine.OpHibernate {
			t.Errorf("held project %s: op %q kind %q owner %q", p.Slug, p.OpID, p.OpKind, p.OpOwner)
		}
		checkTime(t, "held project heartbeat", p.OpHeartbeat, t0)
	}

	_, err = s.ReleaseProject(t.Context(), a.ID, engine.Release{OpID: opA, Epoch: heldA.OpEpoch, To: engine.StatusActive, Now: t0})
	noErr(t, "ReleaseProject", err)
	ps, err = s.HeldProjects(t.Context())
	noErr(t, "HeldProjects", err)
	checkIDs(t, "HeldProjects after a release", sortedIDs(ps, projectID), sorted(b.ID))
}

func testTouchKeepsMaximum(t *testing.T, s engine.Store) {
	p := createActive(t, s, "touchy", t0)
	ctx := t.Context()
	touch := func(at time.Time, source, actor string) {
		t.Helper()
		noErr(t, "Touch "+source, s.Touch(ctx, p.ID, engine.Activity{At: at, Source: source, Actor: actor}))
	}
	want := func(what string, at time.Time, source, actor string) {
		t.Helper()
		got := get(t, s, p.ID)
		checkTime(t, what, got.LastActivity, at)
		if got.LastActivitySource != source || got.LastActivityActor != actor {
			t.Errorf("%s: source %q by %q, want %q by %q", what, got.LastActivitySource, got.LastActivityActor, source, actor)
		}
	}

	touch(t0.Add(time.Minute), "http", "router")
	want("after a later touch", t0.Add(time.Minute), "http", "router")

	// A touch reported late moves neither the time nor the source back.
	touch(t0.Add(-time.Hour), "files", "ide")
	want("after an earlier touch", t0.Add(time.Minute), "http", "router")

	// One at the same time is as new: its door is the one last used.
	touch(t0.Add(time.Minute), "exec", "cli")
	want("after the same touch", t0.Add(time.Minute), "exec", "cli")

	wantErr(t, "Touch missing project", s.Touch(t.Context(), newID(), touchAt(t0)), engine.ErrNotFound)
}
