package main

import (
	"path/filepath"
	"testing"
)

// The journaled steps of hibernate and wake, in order. A process killed (SIGKILL) right after
// any of them must leave a state the next sweep or wake finishes, with nothing lost.
var (
	hibernateSteps = []string{"claimed", "stopped", "snapshot-pending", "snapshot-written", "snapshot-ready", "torn-down"}
	wakeSteps      = []string{"claimed", "restoring", "restored", "started"}
)

func crashSetup(t *testing.T) (*cli, map[string]string) {
	c := newCLI(t)
	c.env = []string{"SAILTUI_DEFAULT_COMMAND=" + selfCommand()}
	c.ok("project", "create", "crashy", "--from", writeSource(t))
	c.ok("project", "start", "crashy")
	return c, treeDigest(t, filepath.Join(c.state, "projects", "crashy"))
}

func (c *cli) crash(step string, args ...string) {
	c.t.Helper()
	r := c.runIn(nil, []string{"SAILTUI_TEST_CRASH_AT=" + step}, args...)
	if r.code != -1 && r.code != 137 {
		c.t.Fatalf("%v with crash at %s: want the process killed, got exit %d\n%s", args, step, r.code, r.stderr)
	}
}

// liveHibernationSnapshots counts hibernation snapshots not deleted: a retry must reuse the one
// it made, never take another.
func (c *cli) liveHibernationSnapshots(slug string) int {
	n := 0
	for _, s := range c.snapshots(slug) {
		if s.Type == "hibernation" {
			n++
		}
	}
	return n
}

func TestCrashDuringHibernate(t *testing.T) {
	for _, step := range hibernateSteps {
		for _, via := range []string{"sweep", "wake"} {
			t.Run(step+"/"+via, func(t *testing.T) {
				c, before := crashSetup(t)
				c.crash("hibernate:"+step, "project", "hibernate", "crashy")
				if via == "sweep" {
					// A long idle timeout: the sweep selects nothing idle, it only finishes the
					// interrupted operation.
					c.ok("sweep", "hibernate", "--idle", "24h")
					if st := c.project("crashy").Status; st != "hibernated" {
						t.Fatalf("after the sweep: %s, want hibernated", st)
					}
				}
				c.ok("project", "wake", "crashy")
				if st := c.project("crashy").Status; st != "active" {
					t.Fatalf("after wake: %s", st)
				}
				if d := diffDigests(before, treeDigest(t, filepath.Join(c.state, "projects", "crashy"))); d != "" {
					t.Fatalf("tree differs after converging:\n%s", d)
				}
				if n := c.liveHibernationSnapshots("crashy"); n != 1 {
					t.Fatalf("%d hibernation snapshots, want exactly 1 (a retry reuses its snapshot)", n)
				}
				waitHTTP(t, c.containers("crashy")["web"].URL, "web container")
			})
		}
	}
}

func TestCrashDuringWake(t *testing.T) {
	for _, step := range wakeSteps {
		t.Run(step, func(t *testing.T) {
			c, before := crashSetup(t)
			c.ok("project", "hibernate", "crashy")
			c.crash("wake:"+step, "project", "wake", "crashy")
			c.ok("project", "wake", "crashy")
			if st := c.project("crashy").Status; st != "active" {
				t.Fatalf("after wake: %s", st)
			}
			if d := diffDigests(before, treeDigest(t, filepath.Join(c.state, "projects", "crashy"))); d != "" {
				t.Fatalf("tree differs after converging:\n%s", d)
			}
			waitHTTP(t, c.containers("crashy")["web"].URL, "web container")
		})
	}
}
