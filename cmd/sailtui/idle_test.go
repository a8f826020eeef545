package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
)

// Idleness a user can trust (issue 35): project touch records activity through the door it
// names, and projects ls, project describe and their JSON say which door the newest came through.
func TestProjectTouchShowsItsSource(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.ok("project", "touch", "shop", "--source", "ide")

	var ps []projectRow
	c.json(&ps, "projects", "ls")
	if len(ps) != 1 || ps[0].LastActivitySource != "ide" || ps[0].LastActivityActor == "" {
		t.Fatalf("projects ls JSON: %+v", ps)
	}
	if ls := c.ok("projects", "ls"); !strings.Contains(ls, "ago · ide") {
		t.Errorf("projects ls does not say the last activity came through ide:\n%s", ls)
	}
	if d := c.ok("project", "describe", "shop"); !strings.Contains(d, "last activity: ") || !strings.Contains(d, " · ide (by ") {
		t.Errorf("project describe does not show the last activity's source:\n%s", d)
	}
	var d describeRow
	c.json(&d, "project", "describe", "shop")
	if d.LastActivitySource != "ide" || d.LastActivity.IsZero() {
		t.Errorf("project describe JSON: %+v", d)
	}

	c.ok("project", "touch", "shop")
	c.json(&ps, "projects", "ls")
	if len(ps) != 1 || ps[0].LastActivitySource != "touch" {
		t.Fatalf("a touch without --source is through %q, want touch", ps[0].LastActivitySource)
	}
	for _, bad := range []string{"two words", strings.Repeat("x", 40), "tab\there"} {
		rf := refusal{args: []string{"project", "touch", "shop", "--source", bad}, code: 2, wants: []string{"activity source"}}
		rf.check(t, c.run(rf.args...))
	}
}

// project keep-alive holds the sweep off until a time projects ls, project describe and the
// JSON show; longer than SAILTUI_MAX_KEEP_ALIVE is refused as bad input, and --cancel ends it.
func TestProjectKeepAlive(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "shop")
	for _, rf := range []refusal{
		{name: "over the default", args: []string{"project", "keep-alive", "shop", "--for", "13h"}, code: 2, wants: []string{"SAILTUI_MAX_KEEP_ALIVE", "12h0m0s"}},
		{name: "over the setting", env: []string{"SAILTUI_MAX_KEEP_ALIVE=1h"}, args: []string{"project", "keep-alive", "shop", "--for", "2h"}, code: 2, wants: []string{"SAILTUI_MAX_KEEP_ALIVE", "1h0m0s"}},
		{name: "neither", args: []string{"project", "keep-alive", "shop"}, code: 2, wants: []string{"--for DURATION or --cancel"}},
		{name: "both", args: []string{"project", "keep-alive", "shop", "--for", "1h", "--cancel"}, code: 2, wants: []string{"--for DURATION or --cancel"}},
	} {
		t.Run(rf.name, func(t *testing.T) { rf.check(t, c.runIn(nil, rf.env, rf.args...)) })
	}

	if out := c.ok("project", "keep-alive", "shop", "--for", "2h"); !strings.Contains(out, "kept alive until ") {
		t.Errorf("keep-alive does not say until when:\n%s", out)
	}
	var ps []projectRow
	c.json(&ps, "projects", "ls")
	if len(ps) != 1 || ps[0].KeepAliveUntil.IsZero() || ps[0].LastActivitySource != "keep-alive" {
		t.Fatalf("projects ls JSON after keep-alive: %+v", ps)
	}
	if d := ps[0].KeepAliveUntil.Sub(ps[0].LastActivity); d != 2*time.Hour {
		t.Errorf("kept alive %s after the keep-alive's activity, want 2h", d)
	}
	if ls := c.ok("projects", "ls"); !strings.Contains(ls, "kept alive until "+ps[0].KeepAliveUntil.Local().Format("15:04")) {
		t.Errorf("projects ls does not show the keep-alive:\n%s", ls)
	}
	if d := c.ok("project", "describe", "shop"); !strings.Contains(d, "kept alive until ") {
		t.Errorf("project describe does not show the keep-alive:\n%s", d)
	}
	var d describeRow
	c.json(&d, "project", "describe", "shop")
	if !d.KeepAliveUntil.Equal(ps[0].KeepAliveUntil) {
		t.Errorf("project describe JSON keeps alive until %s, want %s", d.KeepAliveUntil, ps[0].KeepAliveUntil)
	}

	c.ok("project", "keep-alive", "shop", "--cancel")
	ps = nil // a decode into the old rows would keep what the new JSON leaves out
	c.json(&ps, "projects", "ls")
	if len(ps) != 1 || !ps[0].KeepAliveUntil.IsZero() {
		t.Fatalf("projects ls JSON after --cancel: %+v", ps)
	}
	if ls := c.ok("projects", "ls"); strings.Contains(ls, "kept alive") {
		t.Errorf("projects ls shows a cancelled keep-alive:\n%s", ls)
	}
}

// The idle warning through the binary: a sweep with SAILTUI_IDLE_WARNING_MINUTES set warns an
// idle project instead of hibernating it (warned in its JSON summary), the warning reaches
// `sailtui events` in another process as an idle_warning event, and the next sweep inside the
// window still leaves the project alone.
func TestIdleWarningReachesEvents(t *testing.T) {
	dsn := pgtest.Start(t)
	c := newCLI(t)
	c.env = []string{"DATABASE_URL=" + dsn}
	c.ok("project", "create", "watched")

	w := watchEvents(t, c, dsn)

	warn := []string{"SAILTUI_IDLE_WARNING_MINUTES=5"}
	var rep engine.SweepReport
	out := c.runIn(nil, warn, "--headless", "--sweep=hibernate", "--idle", "1ns")
	if out.code != 0 || json.Unmarshal([]byte(out.stdout), &rep) != nil {
		t.Fatalf("sweep: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	if !slices.ContainsFunc(rep.Warned, func(it engine.SweepItem) bool { return it.Slug == "watched" }) || len(rep.Hibernated) != 0 {
		t.Fatalf("a sweep with the warning on: %+v", rep)
	}
	if !w.heard("watched", engine.EventIdleWarning, 10*time.Second) {
		t.Fatal("sailtui events did not show the idle_warning of watched")
	}
	out = c.runIn(nil, warn, "--headless", "--sweep=hibernate", "--idle", "1ns")
	rep = engine.SweepReport{}
	if out.code != 0 || json.Unmarshal([]byte(out.stdout), &rep) != nil || len(rep.Hibernated) != 0 || len(rep.Warned) != 0 {
		t.Fatalf("a sweep inside the warning window: exit %d %+v\n%s", out.code, rep, out.stderr)
	}
	var ps []projectRow
	c.json(&ps, "projects", "ls")
	for _, p := range ps {
		if p.Status != "active" {
			t.Errorf("%s is %s inside its warning window", p.Slug, p.Status)
		}
	}
}
