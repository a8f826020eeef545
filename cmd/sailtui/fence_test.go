package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// Invariant 9 (an acknowledged write is never lost) is the engine's, tested in engine/ on the
// embedded default. Here: the same rounds (enginetest.FenceRound) over PostgreSQL and in docker
// mode, and the break as a user met it, through the command line.

// The acknowledged-write rounds with the PostgreSQL store: writers in one engine, the
// operations in another, as two processes on one database. The fence lives in the store, so
// each store gets the same rounds.
func TestPostgresFenceAcknowledgedWritesSurvive(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	dsn := pgtest.Start(t)
	writers := openPG(t, state, dsn, "writers")
	ops := openPG(t, state, dsn, "operator", func(c *engine.Config) { c.Store = enginetest.Lockless{Store: c.Store} })
	for _, kind := range enginetest.FenceKinds {
		t.Run(kind, func(t *testing.T) {
			enginetest.FenceRound(t, writers.eng, ops.eng, enginetest.DirsOf(ops.runtime), kind)
		})
	}
}

// The break as a user met it, with real processes: a slow `files put` that began before a
// `project hibernate` and exited 0 must find its file after the wake. The fence is in the
// store, so it holds between the two processes.
func TestFenceCLISlowPutAcrossHibernate(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "slow")
	observer := openTest(t, c.state, "observer")
	proj, err := observer.eng.Project(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 4 {
		path := fmt.Sprintf("uploads/f%d.txt", round)
		content := strings.Repeat(fmt.Sprintf("round %d ", round), 1000)
		pr, pw := io.Pipe()
		put := make(chan result, 1)
		go func() { put <- c.runIn(pr, nil, "files", "put", "slow", path) }()
		if _, err := pw.Write([]byte(content[:len(content)/2])); err != nil {
			t.Fatal(err)
		}
		// The put process holds its use before the hibernation starts.
		for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			uses, err := observer.store.ListUses(context.Background(), proj.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(uses) > 0 {
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatal("the put process never began its use")
			}
		}
		hib := make(chan result, 1)
		go func() { hib <- c.runIn(nil, []string{"SAILTUI_USE_WAIT=2s"}, "project", "hibernate", "slow") }()
		// Rounds alternate: the put ends inside the wait (hibernate goes ahead after it), or
		// outlasts the wait (hibernate refuses, or the put is stopped and fails).
		time.Sleep([]time.Duration{300 * time.Millisecond, 3 * time.Second}[round%2])
		_, _ = pw.Write([]byte(content[len(content)/2:]))
		_ = pw.Close()
		p, h := <-put, <-hib
		t.Logf("round %d: put exit %d (%s), hibernate exit %d (%s)", round, p.code, strings.TrimSpace(p.stderr), h.code, strings.TrimSpace(h.stderr))
		if h.code == 0 {
			c.ok("project", "wake", "slow")
		}
		if p.code != 0 {
			if !strings.Contains(p.stderr, "hibernate") {
				t.Errorf("round %d: the failed put does not say the hibernation stopped it: %s", round, p.stderr)
			}
			continue
		}
		if got := c.ok("files", "get", "slow", path); got != content {
			t.Fatalf("round %d: put exited 0 but the file holds %d bytes after hibernate (exit %d) and wake, want %d",
				round, len(got), h.code, len(content))
		}
	}
}

// The same rounds in docker mode: puts go to the project's host directory, execs run in the
// container, and hibernation removes the containers and the directory.
func TestDockerFenceAcknowledgedWritesSurvive(t *testing.T) {
	t.Parallel()
	dcli := dockertest.Client(t)
	img := dockertest.Image(t, dcli)
	prefix := "sailtui-" + dockertest.Token(t, dcli)
	state := t.TempDir()
	de := openDockerEngine(t, state, img, prefix, nil)
	for _, kind := range enginetest.FenceKinds {
		t.Cleanup(func() { dockertest.RemoveLabelled(t, dcli, "sailtui.project=fence-"+kind) })
		t.Run(kind, func(t *testing.T) { enginetest.FenceRound(t, de.eng, de.eng, enginetest.DirsOf(de.runtime), kind) })
	}
}
