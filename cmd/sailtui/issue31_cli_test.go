package main

import (
	"regexp"
	"strings"
	"testing"
)

// Issue 31, small items of the local runtime, the CLI and the console.

// The refusal of an exec in a hibernated project gives the commands that get it done, in an
// order that works when typed back: the wake, then the exec (project, then container).
func TestCLIExecHibernatedHint(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "sleepy")
	c.ok("container", "add", "sleepy", "web", "--dir", ".", "--command", "exec sleep 600")
	c.ok("project", "start", "sleepy")
	c.ok("project", "hibernate", "sleepy")

	r := c.run("exec", "sleepy", "web", "--", "echo", "hi")
	if r.code == 0 || !strings.HasPrefix(r.stderr, "sailtui: exec sleepy web: project is hibernated") {
		t.Fatalf("exec in a hibernated project: exit %d, stderr %q", r.code, r.stderr)
	}
	hint := regexp.MustCompile(`wake it first: sailtui (project wake \S+), then sailtui (exec \S+ \S+) -- …`).FindStringSubmatch(r.stderr)
	if hint == nil {
		t.Fatalf("the refusal gives no wake-then-exec hint: %q", r.stderr)
	}
	c.ok(strings.Fields(hint[1])...)
	if got := c.ok(append(strings.Fields(hint[2]), "--", "echo", "hi")...); got != "hi\n" {
		t.Fatalf("the hinted exec line printed %q", got)
	}
}

// The console's :undelete of a name no project has points at the list that shows removed
// projects (projects ls --all), not at the live list, where a removed one never shows.
func TestConsoleUndeleteUnknownPointsAtAll(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "kept")
	s := startConsole(t, c)
	s.waitFor("kept")
	s.keys(":undelete nosuch", "Enter")
	scr := s.waitFor(`undelete project "nosuch"`)
	if !strings.Contains(scr, "sailtui projects ls --all") {
		t.Errorf(":undelete of an unknown slug does not point at projects ls --all:\n%s", scr)
	}
	r := c.run("project", "undelete", "nosuch")
	if r.code == 0 || !strings.Contains(r.stderr, "removed ones are listed by: sailtui projects ls --all") {
		t.Errorf("project undelete of an unknown slug: exit %d, stderr %q", r.code, r.stderr)
	}
}
