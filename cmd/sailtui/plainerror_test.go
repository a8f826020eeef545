package main

import (
	"strings"
	"testing"
	"time"
)

// Issue 31: the sentinels the engine wraps for callers are not repeated to a person.
func TestPlainError(t *testing.T) {
	for in, want := range map[string]string{
		`project "x" not found (list them with: sailtui projects ls): not found`: `project "x" not found (list them with: sailtui projects ls)`,
		`get snapshot s: not found: not found`:                                   `get snapshot s: not found`,
		`--idle "x": want a duration such as 30m: invalid input`:                 `--idle "x": want a duration such as 30m`,
		`read config: permission denied`:                                         `read config: permission denied`,
		`snapshot s: not found`:                                                  `snapshot s: not found`,
	} {
		if got := plainError(in); got != want {
			t.Errorf("plainError(%q) = %q, want %q", in, got, want)
		}
	}
}

// Issue 31's small untruths of the command line: each says what it takes or does.
func TestCLISmallTruths(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	if r := c.run("containers", "ls"); r.code != 2 || !strings.Contains(r.stderr, "sailtui containers ls SLUG") || strings.Contains(r.stderr, `"ls" not found`) {
		t.Errorf("containers ls without a project: exit %d, %q; want exit 2 saying it takes a SLUG", r.code, r.stderr)
	}
	if r := c.run("--version"); r.code != 0 || !strings.Contains(r.stdout, "sailtui version") {
		t.Errorf("--version: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	c.ok("project", "create", "truths")
	c.ok("snapshot", "create", "truths", "--label", "old")
	c.ok("snapshot", "rm", "truths", "old", "--yes")
	r := c.run("sweep", "all", "--dry-run", "--as-of", time.Now().Add(40*24*time.Hour).UTC().Format(time.RFC3339))
	if r.code != 0 || !strings.Contains(r.stdout, "sweep hibernate") || !strings.Contains(r.stdout, "sweep purge") {
		t.Fatalf("sweep all --dry-run: exit %d, %q %q; want both sweeps", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "would purge") || !strings.Contains(r.stdout, "would hibernate") || strings.Contains(r.stdout, "\npurged") {
		t.Errorf("sweep all --dry-run says what was done rather than what would be:\n%s", r.stdout)
	}
}
