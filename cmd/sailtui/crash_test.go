package main

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// The journaled steps of hibernate and wake, in order. A process killed (SIGKILL) right after
// any of them must leave a state the next sweep or wake finishes, with nothing lost.
var (
	hibernateSteps = []string{"claimed", "stopped", "snapshot-pending", "snapshot-written", "snapshot-ready", "torn-down"}
	wakeSteps      = []string{"claimed", "restoring", "restored", "started"}
)

// crashEnv is one runtime as the crash-safety suite drives it: a cli whose environment selects
// the runtime, a project source that runs there, and how to read a project's tree and to wait
// until its containers serve again.
type crashEnv struct {
	c      *cli
	source string
	owner  string
	// setup creates and starts the project (nil: create it from source with owner, start it).
	setup func(t *testing.T, c *cli, slug string)
	// digest describes the project's tree exactly (treeDigest of where the runtime keeps it).
	digest func(t *testing.T, slug string) map[string]string
	// serving waits until the project's web container answers with its page.
	serving func(t *testing.T, c *cli, slug string)
}

// crashRuntime is one row of the suite: every journaled step of hibernate and wake is driven
// for each. Adding a runtime is one more row whose env returns that runtime's environment.
type crashRuntime struct {
	name string
	env  func(t *testing.T, slug string) crashEnv
}

var crashRuntimes = []crashRuntime{
	{"local", localCrashEnv},
	{"docker", dockerCrashEnv},
	{"kubernetes", kubeCrashEnv},
	{"kubernetes-node", kubeNodeCrashEnv},
}

// localCrashEnv: the embedded default; containers are this binary's devserver processes.
func localCrashEnv(t *testing.T, _ string) crashEnv {
	c := newCLI(t)
	c.env = []string{"SAILTUI_DEFAULT_COMMAND=" + selfCommand()}
	return crashEnv{
		c: c, source: writeSource(t), owner: "tester",
		digest: func(t *testing.T, slug string) map[string]string {
			return treeDigest(t, filepath.Join(c.state, "projects", slug))
		},
		serving: func(t *testing.T, c *cli, slug string) {
			waitHTTP(t, c.containers(slug)["web"].URL, "web container")
		},
	}
}

// dockerCrashEnv: DEPLOYMENT_MODE=docker on the test image; files in a host directory per
// owner, containers reached on their published 127.0.0.1 ports.
func dockerCrashEnv(t *testing.T, slug string) crashEnv {
	c, _ := dockerCLI(t, slug)
	const owner = "tester"
	return crashEnv{
		c: c, source: writeDockerSource(t), owner: owner,
		digest: func(t *testing.T, slug string) map[string]string {
			return treeDigest(t, filepath.Join(c.state, "users", owner, slug))
		},
		serving: func(t *testing.T, c *cli, slug string) {
			cs := c.dockerContainers(slug)
			waitHTTP(t, cs["app"].LocalURL, "root app")
			waitHTTP(t, cs["web"].LocalURL, "web container")
		},
	}
}

// crashSetup makes a running project in the runtime and returns its tree's digest.
func crashSetup(t *testing.T, rt crashRuntime, slug string) (crashEnv, map[string]string) {
	t.Helper()
	e := rt.env(t, slug)
	if e.setup != nil {
		e.setup(t, e.c, slug)
	} else {
		e.c.ok("project", "create", slug, "--from", e.source, "--owner", e.owner)
		e.c.ok("project", "start", slug)
	}
	e.serving(t, e.c, slug)
	return e, e.digest(t, slug)
}

// forTest is the cli with failures reported to t (a subtest), not to the test that made it.
func (c *cli) forTest(t *testing.T) *cli {
	cc := *c
	cc.t = t
	return &cc
}

func (c *cli) crash(step string, args ...string) {
	c.t.Helper()
	r := c.runIn(nil, []string{"SAILTUI_TEST_CRASH_AT=" + step}, args...)
	if r.code != -1 && r.code != 137 {
		c.t.Fatalf("%v with crash at %s: want the process killed, got exit %d\n%s", args, step, r.code, r.stderr)
	}
}

// stored reads a project and how many hibernation snapshots it ever had (deleted ones
// included: a retry must reuse the one it made, never take another) straight from the store
// the cli uses, which is quicker than two more sailtui processes.
func (c *cli) stored(slug string) (engine.Project, int) {
	c.t.Helper()
	cfg := testDefaults()
	cfg.StateDir = c.state
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "DATABASE_URL="); ok {
			cfg.DatabaseURL = v
		}
	}
	ctx := context.Background()
	store, _, closeStore, err := openStore(ctx, cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	defer closeStore()
	p, err := store.GetProject(ctx, slug)
	if err != nil {
		c.t.Fatal(err)
	}
	snaps, err := store.ListSnapshots(ctx, engine.SnapshotFilter{ProjectID: p.ID, IncludeDeleted: true})
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, s := range snaps {
		if s.Type == engine.SnapshotHibernation {
			n++
		}
	}
	return p, n
}

// converged checks a project is active again with the tree it had and serving; rounds is how
// many hibernations it went through, each with exactly one snapshot.
func converged(t *testing.T, e crashEnv, c *cli, slug string, before map[string]string, rounds int) {
	t.Helper()
	p, n := c.stored(slug)
	if p.Status != engine.StatusActive || p.OpID != "" {
		t.Fatalf("after wake: %s (operation %s %q)", p.Status, p.OpKind, p.OpID)
	}
	if d := diffDigests(before, e.digest(t, slug)); d != "" {
		t.Fatalf("tree differs after converging:\n%s", d)
	}
	if n != rounds {
		t.Fatalf("%d hibernation snapshots after %d hibernations, want one each (a retry reuses its snapshot)", n, rounds)
	}
	e.serving(t, c, slug)
}

// eachConcurrently runs fn for each item as a subtest named by name, all at once: the rounds
// mostly wait on sailtui processes, containers and HTTP, so the rows and chains overlap (t.Run
// may be called from several goroutines; -parallel would allow only GOMAXPROCS at a time).
func eachConcurrently[T any](t *testing.T, items []T, name func(T) string, fn func(*testing.T, T)) {
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Go(func() { t.Run(name(it), func(t *testing.T) { fn(t, it) }) })
	}
	wg.Wait()
}

func runtimeName(rt crashRuntime) string { return rt.name }

// A process killed right after each journaled step of a hibernation; the next sweep (or the
// owner's wake) finishes it. One project per runtime and way of converging goes through every
// step in turn: each round starts from an active, serving project with the same tree.
func TestCrashDuringHibernate(t *testing.T) {
	t.Parallel()
	eachConcurrently(t, crashRuntimes, runtimeName, func(t *testing.T, rt crashRuntime) {
		eachConcurrently(t, []string{"sweep", "wake"}, func(via string) string { return via }, func(t *testing.T, via string) {
			slug := "crash-h" + via[:1] + "-" + randSuffix(t)
			e, before := crashSetup(t, rt, slug)
			for round, step := range hibernateSteps {
				ok := t.Run(step, func(t *testing.T) {
					c := e.c.forTest(t)
					c.crash("hibernate:"+step, "project", "hibernate", slug)
					if via == "sweep" {
						// A long idle timeout: the sweep selects nothing idle, it only
						// finishes the interrupted operation.
						c.ok("sweep", "hibernate", "--idle", "24h")
						if p, _ := c.stored(slug); p.Status != engine.StatusHibernated {
							t.Fatalf("after the sweep: %s, want hibernated", p.Status)
						}
					}
					c.ok("project", "wake", slug)
					converged(t, e, c, slug, before, round+1)
				})
				if !ok {
					t.Fatalf("stopped after %s: the next rounds start from its state", step)
				}
			}
		})
	})
}

// A process killed right after each journaled step of a wake; the next wake finishes it.
func TestCrashDuringWake(t *testing.T) {
	t.Parallel()
	eachConcurrently(t, crashRuntimes, runtimeName, func(t *testing.T, rt crashRuntime) {
		slug := "crash-w-" + randSuffix(t)
		e, before := crashSetup(t, rt, slug)
		for round, step := range wakeSteps {
			ok := t.Run(step, func(t *testing.T) {
				c := e.c.forTest(t)
				c.ok("project", "hibernate", slug)
				c.crash("wake:"+step, "project", "wake", slug)
				c.ok("project", "wake", slug)
				converged(t, e, c, slug, before, round+1)
			})
			if !ok {
				t.Fatalf("stopped after %s: the next rounds start from its state", step)
			}
		}
	})
}
