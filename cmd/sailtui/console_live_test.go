package main

import (
	"strings"
	"testing"
	"time"
)

// within waits until the screen satisfies ok and fails when that took longer than limit: the
// console must follow other processes live, not at the next slow resync.
func (s *tmuxSession) within(limit time.Duration, what string, ok func(scr string) bool) {
	s.t.Helper()
	start := time.Now()
	for {
		scr := s.screen()
		if ok(scr) {
			if d := time.Since(start); d > limit {
				s.t.Errorf("%s took %s, want at most %s", what, d.Round(time.Millisecond), limit)
			}
			return
		}
		if time.Since(start) > 30*time.Second {
			s.t.Fatalf("%s never showed:\n%s", what, scr)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// screenRow is the screen line listing slug.
func screenRow(scr, slug string) string {
	for _, l := range strings.Split(scr, "\n") {
		if strings.Contains(l, " "+slug+" ") || strings.HasSuffix(l, " "+slug) {
			return l
		}
	}
	return ""
}

// On SQLite the notifier is in-process: the console hears nothing from the CLI. It must still
// show within a second what another process did: a hibernation, a removal, a new project.
func TestConsoleFollowsOtherProcesses(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.ok("project", "create", "blog")
	s := startConsole(t, c)
	s.waitFor("2 projects:", "shop", "blog")

	c.ok("project", "hibernate", "shop")
	s.within(time.Second, "shop hibernated by another process", func(scr string) bool {
		return strings.Contains(screenRow(scr, "shop"), "hibernated")
	})
	c.ok("project", "rm", "blog", "--yes")
	s.within(time.Second, "blog removed by another process", func(scr string) bool {
		return screenRow(scr, "blog") == "" && strings.Contains(scr, "1 projects:")
	})
	c.ok("project", "create", "notes")
	s.within(time.Second, "notes created by another process", func(scr string) bool {
		return strings.Contains(screenRow(scr, "notes"), "active") && strings.Contains(scr, "2 projects:")
	})
	c.ok("project", "undelete", "blog")
	s.within(time.Second, "blog undeleted by another process", func(scr string) bool {
		return strings.Contains(screenRow(scr, "blog"), "hibernated") && strings.Contains(scr, "3 projects:")
	})
}
