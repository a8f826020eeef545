package main

import (
	"strings"
	"testing"
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
