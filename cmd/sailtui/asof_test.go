package main

import (
	"testing"
	"time"
)

// A sweep --as-of a time in the future, outside --dry-run, hibernates projects in use and
// purges snapshots deleted moments ago: the sweep command and the headless run refuse it
// without --yes (exit 2, saying what to add) and touch nothing; --dry-run and --yes run it.
func TestFutureAsOfNeedsYes(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "fresh")
	c.ok("files", "put", "fresh", "keep.txt")
	before := idleStateDigest(t, c)
	future := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	for _, rf := range []refusal{
		{name: "sweep hibernate", args: []string{"sweep", "hibernate", "--as-of", future}, code: 2, wants: []string{"--as-of " + future, "in the future", "add --dry-run", "--yes"}},
		{name: "sweep purge", args: []string{"sweep", "purge", "--as-of", future}, code: 2, wants: []string{"in the future", "--yes"}},
		{name: "headless", args: []string{"--headless", "--sweep=all", "--as-of", future}, code: 2, wants: []string{"in the future", "--yes"}},
	} {
		t.Run(rf.name, func(t *testing.T) {
			rf.check(t, c.run(rf.args...))
			if after := idleStateDigest(t, c); after != before {
				t.Fatalf("a refused sweep changed the state:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// A past --as-of needs nothing more; --dry-run looks ahead without --yes.
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	c.ok("sweep", "purge", "--as-of", past)
	c.ok("sweep", "hibernate", "--as-of", future, "--dry-run")
	if after := idleStateDigest(t, c); after != before {
		t.Fatalf("a dry run changed the state:\nbefore %s\nafter  %s", before, after)
	}
	// --yes does it: the project touched just now is hibernated, as asked.
	r := c.run("--headless", "--sweep=hibernate", "--as-of", future, "--yes")
	if s := summaries(t, r.stdout); r.code != 0 || len(s) != 1 || len(s[0].Hibernated) != 1 {
		t.Fatalf("--as-of %s --yes: exit %d\n%s\n%s", future, r.code, r.stdout, r.stderr)
	}
}
