package main

import (
	"strings"
	"testing"
	"time"
)

// TestConsoleTimelineRestore is the timeline's promise, driven like an operator would on the
// embedded demo: take a snapshot from the console, let the files change behind its back (the
// CLI, another process), and put them back with the keyboard alone.
func TestConsoleTimelineRestore(t *testing.T) {
	c := newCLI(t)
	s := startConsole(t, c, "--demo")
	s.waitFor("storefront", "blog", "notes-api", "● live")

	// Select the project.
	s.keys("/", "storefront")
	s.waitFor("/storefront", "1 of 3")
	s.keys("Enter")
	scr := s.waitFor("> storefront", "s stop")
	for _, l := range strings.Split(scr, "\n") {
		// The status bar may name the last hibernation (notes-api, the demo's hibernated one).
		if strings.Contains(l, "notes-api") && !strings.Contains(l, "last hibernation") {
			t.Fatalf("the filter left other projects on screen:\n%s", scr)
		}
	}

	// A file written through the CLI.
	const path = "notes/acceptance.txt"
	putFile(t, c, path, "version one\n")

	// Open the timeline: empty so far.
	s.keys("t")
	s.waitFor("Projects › storefront › Timeline", "manual 0/5", "no snapshots yet")

	// Create a snapshot with a label.
	s.keys("c")
	s.waitFor("New snapshot of storefront", "enter create")
	s.keys("before change")
	s.waitFor("> before change")
	s.keys("Enter")
	s.waitFor("snapshot “before change” of storefront is ready")
	s.waitFor("manual 1/5", "> before change", "manual", "ready")

	// The file changes behind the console's back.
	putFile(t, c, path, "version two\n")
	if got := getFile(t, c, path); got != "version two\n" {
		t.Fatalf("the file reads %q after the change", got)
	}

	// Restore: the dialog names what is replaced, with Cancel focused.
	s.keys("r")
	scr = s.waitFor("Restore storefront?", "“before change”", "replaces", "all current files of storefront", "safety snapshot", "[ Cancel ]")
	if strings.Contains(scr, "[ Restore ]") {
		t.Fatalf("Restore has the focus in a fresh dialog:\n%s", scr)
	}
	s.keys("y")
	// The action shows while it runs, then its result and the undo point.
	sawProgress := false
	deadline := time.Now().Add(60 * time.Second)
	for {
		scr = s.screen()
		if strings.Contains(scr, "⟳ restore storefront") {
			sawProgress = true
		}
		if strings.Contains(scr, "restored storefront to “before change”") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restore never finished on screen:\n%s", scr)
		}
		time.Sleep(40 * time.Millisecond)
	}
	if !sawProgress {
		t.Errorf("the restore ran without a progress line")
	}
	scr = s.waitFor("undo point: safety snapshot", "[undo] before restoring", "safety", "manual 1/5")

	// The file is back.
	if got := getFile(t, c, path); got != "version one\n" {
		t.Fatalf("after the restore the file reads %q, want the snapshot's %q\n%s", got, "version one\n", scr)
	}

	s.keys("q")
	deadline = time.Now().Add(10 * time.Second)
	for !s.exited() {
		if time.Now().After(deadline) {
			t.Fatalf("console did not quit on q:\n%s", s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func putFile(t *testing.T, c *cli, path, content string) {
	t.Helper()
	if r := c.runIn(strings.NewReader(content), nil, "files", "put", "storefront", path); r.code != 0 {
		t.Fatalf("files put %s: exit %d: %s", path, r.code, r.stderr)
	}
}

func getFile(t *testing.T, c *cli, path string) string {
	t.Helper()
	r := c.run("files", "get", "storefront", path)
	if r.code != 0 {
		t.Fatalf("files get %s: exit %d: %s", path, r.code, r.stderr)
	}
	return r.stdout
}
