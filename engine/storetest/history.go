package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// A project's history (issue 35): every door's activity, coalesced per source and quiet spell,
// and the sweep's warnings; bounded per project.
var historyTests = []test{
	{"HistoryCoalescesActivity", testHistoryCoalescesActivity},
	{"HistoryBounded", testHistoryBounded},
	{"RouterCounters", testRouterCounters},
}

// The router's counters as the last sweep read them: none at first, replaced whole by each
// save, kept per router.
func testRouterCounters(t *testing.T, s engine.Store) {
	ctx := t.Context()
	got, err := s.RouterCounters(ctx, "traefik a")
	noErr(t, "RouterCounters before any save", err)
	if len(got) != 0 {
		t.Fatalf("counters before any save: %v", got)
	}
	noErr(t, "SaveRouterCounters", s.SaveRouterCounters(ctx, "traefik a", map[string]float64{"shop-web@docker": 12, "x": 1e15 + 1}))
	noErr(t, "SaveRouterCounters b", s.SaveRouterCounters(ctx, "nginx b", map[string]float64{"ns/web": 3}))
	noErr(t, "SaveRouterCounters again", s.SaveRouterCounters(ctx, "traefik a", map[string]float64{"shop-web@docker": 15}))
	got, err = s.RouterCounters(ctx, "traefik a")
	noErr(t, "RouterCounters", err)
	if len(got) != 1 || got["shop-web@docker"] != 15 {
		t.Errorf("counters of a after the second save: %v; want only shop-web@docker=15", got)
	}
	got, err = s.RouterCounters(ctx, "nginx b")
	noErr(t, "RouterCounters b", err)
	if len(got) != 1 || got["ns/web"] != 3 {
		t.Errorf("counters of b: %v", got)
	}
}

type line struct {
	kind, source, actor string
	at, until           time.Time
	count               int
}

func historyOf(t *testing.T, s engine.Store, projectID string, limit int) []line {
	t.Helper()
	hs, err := s.ListHistory(t.Context(), projectID, limit)
	noErr(t, "ListHistory", err)
	out := make([]line, len(hs))
	for i, h := range hs {
		checkUTC(t, "history at", h.At)
		out[i] = line{h.Kind, h.Source, h.Actor, h.At, h.Until, h.Count}
	}
	return out
}

func testHistoryCoalescesActivity(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "used", t0.Add(-time.Hour))
	other := createActive(t, s, "other", t0.Add(-time.Hour))
	touch := func(at time.Time, source, actor string) {
		t.Helper()
		noErr(t, "Touch", s.Touch(ctx, p.ID, engine.Activity{At: at, Source: source, Actor: actor}))
	}
	// A spell of files use (a touch, a use begun and ended), an exec in the middle of it, a late
	// report of an earlier files touch, then files again after a quiet longer than
	// ActivityQuiet: the spell and the late report are one line of three touches, the exec
	// another, the last files touch a third.
	touch(t0, "files", "ide")
	u := newUse(p, t0.Add(time.Minute))
	noErr(t, "BeginUse", s.BeginUse(ctx, u, nil))
	noErr(t, "EndUse", s.EndUse(ctx, p.ID, u.ID, engine.Activity{At: t0.Add(2 * time.Minute), Source: "files", Actor: "cli"}))
	touch(t0.Add(3*time.Minute), "exec", "cli")
	touch(t0.Add(-time.Minute), "files", "late")
	later := t0.Add(2*time.Minute + engine.ActivityQuiet + time.Second)
	touch(later, "files", "ide")
	noErr(t, "Touch of another project", s.Touch(ctx, other.ID, engine.Activity{At: t0, Source: "files", Actor: "x"}))
	noErr(t, "MarkIdleWarned", s.MarkIdleWarned(ctx, p.ID, later.Add(time.Hour)))
	_, err := s.SetKeepAlive(ctx, p.ID, later.Add(3*time.Hour), engine.Activity{At: later.Add(2 * time.Hour), Source: engine.SourceKeepAlive, Actor: "ops"})
	noErr(t, "SetKeepAlive", err)
	// A cancelled keep-alive is no activity and no line.
	_, err = s.SetKeepAlive(ctx, p.ID, time.Time{}, engine.Activity{})
	noErr(t, "SetKeepAlive (cancel)", err)

	got := historyOf(t, s, p.ID, 0)
	want := []line{
		{engine.HistoryActivity, engine.SourceKeepAlive, "ops", later.Add(2 * time.Hour), later.Add(2 * time.Hour), 1},
		{engine.HistoryIdleWarning, "sweep", "", later.Add(time.Hour), time.Time{}, 0},
		{engine.HistoryActivity, "files", "ide", later, later, 1},
		{engine.HistoryActivity, "exec", "cli", t0.Add(3 * time.Minute), t0.Add(3 * time.Minute), 1},
		{engine.HistoryActivity, "files", "cli", t0.Add(-time.Minute), t0.Add(2 * time.Minute), 3}, // the end of the use is not a touch of its own
	}
	if len(got) != len(want) {
		t.Fatalf("history %s; want %s", fmt.Sprint(got), fmt.Sprint(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.kind != w.kind || g.source != w.source || g.actor != w.actor || g.count != w.count || !g.at.Equal(w.at.Truncate(time.Microsecond)) || !g.until.Equal(w.until.Truncate(time.Microsecond)) {
			t.Errorf("line %d: %+v; want %+v", i, g, w)
		}
	}
	if top := historyOf(t, s, p.ID, 2); len(top) != 2 || top[0].kind != engine.HistoryActivity || top[1].kind != engine.HistoryIdleWarning {
		t.Errorf("the newest 2: %+v", top)
	}
	if o := historyOf(t, s, other.ID, 0); len(o) != 1 || o[0].actor != "x" {
		t.Errorf("the other project's history: %+v", o)
	}
}

// Only the newest MaxHistory lines of a project are kept.
func testHistoryBounded(t *testing.T, s engine.Store) {
	ctx := t.Context()
	p := createActive(t, s, "busy", t0.Add(-time.Hour))
	n := engine.MaxHistory + 5
	for i := range n {
		// Each touch a quiet spell after the last: a line each.
		at := t0.Add(time.Duration(i) * (engine.ActivityQuiet + time.Second))
		noErr(t, "Touch", s.Touch(ctx, p.ID, engine.Activity{At: at, Source: "http", Actor: fmt.Sprint(i)}))
	}
	got := historyOf(t, s, p.ID, 0)
	if len(got) != engine.MaxHistory {
		t.Fatalf("%d lines kept; want %d", len(got), engine.MaxHistory)
	}
	if got[0].actor != fmt.Sprint(n-1) || got[len(got)-1].actor != fmt.Sprint(n-engine.MaxHistory) {
		t.Errorf("kept lines %s … %s; want the newest", got[0].actor, got[len(got)-1].actor)
	}
}
