package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// "Why is this project awake, why was it hibernated" (issue 35, item 5): project history shows
// the operations, the activity coalesced per door, the sweep's warning and the keep-alive,
// newest first, in a table and in JSON.
func TestProjectHistoryExplains(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "told")
	c.ok("project", "touch", "told", "--source", "ide")
	c.ok("project", "touch", "told", "--source", "ide")
	c.ok("files", "ls", "told")
	out := c.runIn(nil, []string{"SAILTUI_IDLE_WARNING_MINUTES=5"}, "--headless", "--sweep=hibernate", "--idle", "1ns")
	if out.code != 0 {
		t.Fatalf("sweep: exit %d\n%s", out.code, out.stderr)
	}
	c.ok("project", "keep-alive", "told", "--for", "1h")
	c.ok("project", "hibernate", "told")

	var lines []engine.HistoryEntry
	c.json(&lines, "project", "history", "told")
	var got []string
	for _, h := range lines {
		switch h.Kind {
		case engine.HistoryOperation:
			got = append(got, string(h.Op)+"="+string(h.Outcome))
		case engine.HistoryActivity:
			got = append(got, h.Source+"×"+strconv.Itoa(h.Count))
		default:
			got = append(got, h.Kind)
		}
	}
	want := "hibernate=done keep-alive×1 idle_warning files×1 ide×2 create=done"
	if strings.Join(got, " ") != want {
		t.Fatalf("history %q; want %q", strings.Join(got, " "), want)
	}
	table := c.ok("project", "history", "told", "--limit", "3")
	if n := strings.Count(strings.TrimSpace(table), "\n"); n != 3 || !strings.Contains(table, "idle warning") || !strings.Contains(table, "activity · keep-alive") {
		t.Fatalf("history --limit 3 table:\n%s", table)
	}
	if r := c.run("project", "history", "nobody"); r.code != 1 || !strings.Contains(r.stderr, `project "nobody" not found`) {
		t.Fatalf("history of no project: exit %d %s", r.code, r.stderr)
	}
}
