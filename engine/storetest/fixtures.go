package storetest

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sailtui/sailtui/engine"
)

// t0 is the suite's "now". Its nanoseconds (…456_400) truncate and round to the same
// microsecond, so a store that rounds (PostgreSQL text input) and one that truncates both pass.
var t0 = time.Date(2031, 5, 6, 7, 8, 9, 123456400, time.UTC)

func newID() string { return uuid.NewString() }

// checkSource checks the door and actor of p's newest activity.
func checkSource(t *testing.T, what string, p engine.Project, source, actor string) {
	t.Helper()
	if p.LastActivitySource != source || p.LastActivityActor != actor {
		t.Errorf("%s: activity source %q by %q, want %q by %q", what, p.LastActivitySource, p.LastActivityActor, source, actor)
	}
}

// touchAt is an activity at at, of a test's door.
func touchAt(at time.Time) engine.Activity {
	return engine.Activity{At: at, Source: "test", Actor: "storetest"}
}

func newProject(slug string, lastActivity time.Time) engine.Project {
	return engine.Project{
		ID:           newID(),
		Slug:         slug,
		Name:         "Project " + slug,
		Owner:        "alice",
		Status:       engine.StatusActive,
		LastActivity: lastActivity,
		CreatedAt:    t0.Add(-time.Hour),
		UpdatedAt:    t0.Add(-time.Hour),
	}
}

func create(t *testing.T, s engine.Store, p engine.Project, cs []engine.Container, conns []engine.Connection) engine.Project {
	t.Helper()
	if err := s.CreateProject(t.Context(), p, cs, conns); err != nil {
		t.Fatalf("CreateProject(%s): %v", p.Slug, err)
	}
	return p
}

// createActive makes a live project last active at lastActivity.
func createActive(t *testing.T, s engine.Store, slug string, lastActivity time.Time) engine.Project {
	t.Helper()
	return create(t, s, newProject(slug, lastActivity), nil, nil)
}

func get(t *testing.T, s engine.Store, idOrSlug string) engine.Project {
	t.Helper()
	p, err := s.GetProject(t.Context(), idOrSlug)
	if err != nil {
		t.Fatalf("GetProject(%s): %v", idOrSlug, err)
	}
	return p
}

func claimFor(opID string, from []engine.ProjectStatus, to engine.ProjectStatus) engine.Claim {
	return engine.Claim{OpID: opID, Kind: engine.OpHibernate, Owner: "sweep-1", Now: t0, From: from, To: to}
}

// hold claims p for opID without changing its status.
func hold(t *testing.T, s engine.Store, p engine.Project, opID string) engine.Project {
	t.Helper()
	got, err := s.ClaimProject(t.Context(), p.ID, claimFor(opID, []engine.ProjectStatus{p.Status}, p.Status))
	if err != nil {
		t.Fatalf("ClaimProject(%s, %s): %v", p.Slug, opID, err)
	}
	return got
}

// softDelete moves p to the deleted status the way the engine does: claim, then release.
func softDelete(t *testing.T, s engine.Store, p engine.Project) {
	t.Helper()
	op := newID()
	held := hold(t, s, p, op)
	if _, err := s.ReleaseProject(t.Context(), p.ID, engine.Release{OpID: op, Epoch: held.OpEpoch, To: engine.StatusDeleted, Now: t0}); err != nil {
		t.Fatalf("ReleaseProject(%s, deleted): %v", p.Slug, err)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want %v", what, err, target)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// norm truncates t to microseconds (what PostgreSQL keeps) in UTC; zero stays zero.
func norm(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// checkUTC fails for a non-zero time not in UTC: stores must return UTC times.
func checkUTC(t *testing.T, what string, ts ...time.Time) {
	t.Helper()
	for i, tm := range ts {
		if !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("%s: time #%d %v is in %v, want UTC", what, i, tm, tm.Location())
		}
	}
}

func sameTime(got, want time.Time) bool {
	return norm(got).Equal(norm(want)) && got.IsZero() == want.IsZero()
}

func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	checkUTC(t, what, got)
	if !sameTime(got, want) {
		t.Errorf("%s = %v, want %v", what, got, norm(want))
	}
}

func normProject(p engine.Project) engine.Project {
	p.LastActivity, p.CreatedAt, p.UpdatedAt, p.OpHeartbeat = norm(p.LastActivity), norm(p.CreatedAt), norm(p.UpdatedAt), norm(p.OpHeartbeat)
	return p
}

func checkProject(t *testing.T, what string, got, want engine.Project) {
	t.Helper()
	checkUTC(t, what, got.LastActivity, got.CreatedAt, got.UpdatedAt, got.OpHeartbeat)
	if g, w := normProject(got), normProject(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func normContainer(c engine.Container) engine.Container {
	c.CreatedAt = norm(c.CreatedAt)
	if len(c.Env) == 0 {
		c.Env = nil
	}
	if len(c.Exports) == 0 {
		c.Exports = nil
	}
	return c
}

func checkContainers(t *testing.T, s engine.Store, projectID string, want []engine.Container) {
	t.Helper()
	got, err := s.ListContainers(t.Context(), projectID)
	noErr(t, "ListContainers", err)
	var g, w []engine.Container
	for _, c := range got {
		checkUTC(t, "container "+c.Name, c.CreatedAt)
		g = append(g, normContainer(c))
	}
	for _, c := range want {
		w = append(w, normContainer(c))
	}
	byName := func(a, b engine.Container) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(g, byName)
	slices.SortFunc(w, byName)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("containers of %s:\n got %+v\nwant %+v", projectID, g, w)
	}
}

func checkConnections(t *testing.T, s engine.Store, projectID string, want []engine.Connection) {
	t.Helper()
	got, err := s.ListConnections(t.Context(), projectID)
	noErr(t, "ListConnections", err)
	key := func(c engine.Connection) string { return c.From + "->" + c.To }
	byKey := func(a, b engine.Connection) int { return strings.Compare(key(a), key(b)) }
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, byKey)
	slices.SortFunc(want, byKey)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("connections of %s:\n got %+v\nwant %+v", projectID, got, want)
	}
}

func normSnapshot(s engine.Snapshot) engine.Snapshot {
	s.CreatedAt, s.ReadyAt, s.DeletedAt = norm(s.CreatedAt), norm(s.ReadyAt), norm(s.DeletedAt)
	return s
}

func checkSnapshot(t *testing.T, what string, got, want engine.Snapshot) {
	t.Helper()
	checkUTC(t, what, got.CreatedAt, got.ReadyAt, got.DeletedAt)
	if g, w := normSnapshot(got), normSnapshot(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func normOp(op engine.Operation) engine.Operation {
	op.StartedAt, op.UpdatedAt, op.FinishedAt = norm(op.StartedAt), norm(op.UpdatedAt), norm(op.FinishedAt)
	return op
}

func checkOp(t *testing.T, what string, got, want engine.Operation) {
	t.Helper()
	checkUTC(t, what, got.StartedAt, got.UpdatedAt, got.FinishedAt)
	if g, w := normOp(got), normOp(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

// sortedIDs returns the ids of items, sorted, for order-independent comparison.
func sortedIDs[T any](items []T, id func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, id(it))
	}
	slices.Sort(out)
	return out
}

func projectID(p engine.Project) string   { return p.ID }
func snapshotID(s engine.Snapshot) string { return s.ID }

// sorted returns a sorted copy of ids.
func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func checkIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}
