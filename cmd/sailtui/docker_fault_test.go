package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
)

// dockerEngine is an engine in docker mode, wired as the command line wires it, whose runtime
// talks to the daemon DOCKER_HOST names when it is opened. close may be called more than once.
type dockerEngine struct {
	eng     *engine.Engine
	runtime engine.Runtime
	close   func()
}

func openDockerEngine(t testing.TB, state, img, prefix string, hook func(engine.OpKind, string)) *dockerEngine {
	t.Helper()
	cfg := testDefaults()
	cfg.StateDir = state
	cfg.Mode = "docker"
	cfg.DevserverImage = img
	cfg.DockerNetworkPrefix = prefix
	cfg.DefaultCommand = dockerDefaultCommand
	p, err := openEngine(context.Background(), cfg, slog.New(slog.DiscardHandler), func(c *engine.Config) {
		c.Owner = "tester"
		c.StepHook = hook
	})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	de := &dockerEngine{eng: p.eng, runtime: p.runtime, close: func() { once.Do(p.close) }}
	t.Cleanup(de.close)
	return de
}

// startDockerProject creates the two-container project of writeDockerSource, starts it and
// waits until both containers answer over HTTP.
func startDockerProject(t *testing.T, eng *engine.Engine, name string) engine.Project {
	t.Helper()
	ctx := context.Background()
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: name, Owner: "tester", FromDir: writeDockerSource(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.StartProject(ctx, p.Slug); err != nil {
		t.Fatalf("start %s: %v", p.Slug, err)
	}
	waitDockerHTTP(t, eng, p.Slug)
	return p
}

// waitDockerHTTP waits until both containers of the project answer with their own page.
func waitDockerHTTP(t *testing.T, eng *engine.Engine, slug string) {
	t.Helper()
	_, views, err := eng.Containers(context.Background(), slug)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app": "root app", "web": "web container"}
	seen := 0
	for _, v := range views {
		if w, ok := want[v.Name]; ok {
			if v.Status.State != engine.ContainerRunning || v.Status.LocalURL == "" {
				t.Fatalf("%s/%s is not running: %+v", slug, v.Name, v.Status)
			}
			waitHTTP(t, v.Status.LocalURL, w)
			seen++
		}
	}
	if seen != len(want) {
		t.Fatalf("%s has containers %+v, want app and web", slug, views)
	}
}

// assertNoDockerLeftovers checks that nothing of the project is left on the engine.
func assertNoDockerLeftovers(t *testing.T, dcli *client.Client, slug string) {
	t.Helper()
	ctx := context.Background()
	f := client.Filters{}.Add("label", "sailtui.project="+slug)
	cs, err := dcli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil || len(cs.Items) != 0 {
		t.Fatalf("containers of %s left: %v, %v", slug, cs.Items, err)
	}
	ns, err := dcli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil || len(ns.Items) != 0 {
		t.Fatalf("networks of %s left: %v, %v", slug, ns.Items, err)
	}
	vs, err := dcli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil || len(vs.Items) != 0 {
		t.Fatalf("volumes of %s left: %v, %v", slug, vs.Items, err)
	}
}

// assertRestorable is invariant 1 after a fault: the project is either active with every file
// as it was, or parked on a ready snapshot that a wake turns back into the same files; then a
// clean hibernate and wake from there work, so nothing the fault left behind is in the way.
func assertRestorable(t *testing.T, eng *engine.Engine, dcli *client.Client, slug, dir string, before map[string]string) {
	t.Helper()
	ctx := context.Background()
	p, err := eng.Project(ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	ready := ""
	if p.HibernationSnapshot != "" {
		snaps, err := eng.Snapshots(ctx, slug, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			if s.ID == p.HibernationSnapshot && s.Status == engine.SnapshotReady {
				ready = s.ID
			}
		}
	}
	_, statErr := os.Stat(dir)
	if os.IsNotExist(statErr) && ready == "" {
		t.Fatalf("LOST PROJECT: %s is %s with no files and no ready snapshot (hibernation snapshot %q)", slug, p.Status, p.HibernationSnapshot)
	}
	switch p.Status {
	case engine.StatusActive:
		if d := diffDigests(before, treeDigest(t, dir)); d != "" {
			t.Fatalf("%s is active but its tree changed:\n%s", slug, d)
		}
		if _, err := eng.StartProject(ctx, slug); err != nil {
			t.Fatalf("start %s after the fault: %v", slug, err)
		}
		t.Logf("%s converged: active, files intact", slug)
	case engine.StatusHibernated, engine.StatusFailed:
		if ready == "" {
			t.Fatalf("%s is %s (%s) without a ready hibernation snapshot (%q)", slug, p.Status, p.StatusReason, p.HibernationSnapshot)
		}
		if _, err := eng.Wake(ctx, slug); err != nil {
			t.Fatalf("wake %s (%s) from %s: %v", slug, p.Status, ready, err)
		}
		if d := diffDigests(before, treeDigest(t, dir)); d != "" {
			t.Fatalf("tree of %s after wake differs:\n%s", slug, d)
		}
		t.Logf("%s converged: %s on ready snapshot %s, woken with identical files", slug, p.Status, ready)
	default:
		t.Fatalf("%s did not settle: %s (op %s %q)", slug, p.Status, p.OpKind, p.OpID)
	}
	waitDockerHTTP(t, eng, slug)

	if _, err := eng.Hibernate(ctx, slug); err != nil {
		t.Fatalf("clean hibernate of %s after the fault: %v", slug, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("project directory still there after a clean hibernate: %v", err)
	}
	assertNoDockerLeftovers(t, dcli, slug)
	if _, err := eng.Wake(ctx, slug); err != nil {
		t.Fatalf("wake %s after the clean hibernate: %v", slug, err)
	}
	if d := diffDigests(before, treeDigest(t, dir)); d != "" {
		t.Fatalf("tree of %s after the clean round trip differs:\n%s", slug, d)
	}
	waitDockerHTTP(t, eng, slug)
}

// TestDockerConnectionCutMidHibernate is invariant 1 with the Docker daemon connection killed
// mid-hibernate. The daemon of this machine is shared, so it is not killed: the runtime talks
// to it through a proxy (dockertest.Proxy) that cuts every connection, and refuses new ones,
// at a chosen point of the hibernation. Afterwards, with the proxy back or with a fresh engine
// on the real socket, the project converges: active with its files, or hibernated (or failed
// with a ready snapshot) and a wake gives back byte-identical files. Never a lost project.
func TestDockerConnectionCutMidHibernate(t *testing.T) {
	dcli := dockertest.Client(t)
	img := dockertest.Image(t, dcli)
	tok := dockertest.Token(t, dcli)
	real := dcli.DaemonHost()

	netDelete := `^DELETE /v[0-9.]+/networks/`
	cases := []struct {
		name string
		// step is the journaled hibernate step after which the cut happens (or is armed).
		step string
		// request, when set, arms the cut for the first Engine API request matching it
		// instead of cutting at the step; afterForward lets the daemon act on it first.
		request      string
		afterForward bool
		// sameEngine: the proxy is restored and the same engine goes on; otherwise a fresh
		// engine on the real socket takes over.
		sameEngine bool
	}{
		// While the containers are being stopped: the first container removal reaches the
		// daemon, its answer never comes back.
		{name: "mid-stop", step: "claim", request: `^DELETE /v[0-9.]+/containers/`, afterForward: true},
		{name: "after-stopped", step: "stopped"},
		{name: "after-stopped-proxy-restored", step: "stopped", sameEngine: true},
		{name: "after-snapshot-ready", step: "snapshot-ready"},
		{name: "after-snapshot-ready-proxy-restored", step: "snapshot-ready", sameEngine: true},
		// In the middle of teardown (containers gone, network not yet): the network removal
		// never reaches the daemon...
		{name: "teardown-network-remove-lost", step: "snapshot-ready", request: netDelete},
		// ...or reaches it and removes the network, but the answer is lost.
		{name: "teardown-network-removed-reply-lost", step: "snapshot-ready", request: netDelete, afterForward: true, sameEngine: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slug := "fault-" + randSuffix(t)
			t.Cleanup(func() { dockertest.RemoveLabelled(t, dcli, "sailtui.project="+slug) })
			proxy := dockertest.StartProxy(t, dcli)
			t.Setenv("DOCKER_HOST", proxy.Host())
			state := t.TempDir()

			var (
				mu     sync.Mutex
				fired  <-chan struct{}
				armed  bool
				active bool
			)
			arm := func() {
				if tc.request != "" {
					fired = proxy.CutOn(tc.request, tc.afterForward)
				} else {
					proxy.Cut()
					done := make(chan struct{})
					close(done)
					fired = done
				}
				armed = true
			}
			hook := func(kind engine.OpKind, step string) {
				mu.Lock()
				defer mu.Unlock()
				if active && !armed && kind == engine.OpHibernate && step == tc.step {
					arm()
				}
			}
			de := openDockerEngine(t, state, img, "sailtui-"+tok, hook)
			ctx := context.Background()
			p := startDockerProject(t, de.eng, slug)
			if p.Slug != slug {
				t.Fatalf("slug %q, want %q", p.Slug, slug)
			}
			dir := filepath.Join(state, "users", "tester", slug)
			before := treeDigest(t, dir)

			mu.Lock()
			active = true
			if tc.step == "claim" {
				// No journaled step comes before the containers are stopped: arm now.
				arm()
			}
			mu.Unlock()
			_, herr := de.eng.Hibernate(ctx, slug)
			mu.Lock()
			active = false
			ch := fired
			mu.Unlock()
			if ch == nil {
				t.Fatalf("the hibernation never reached step %q", tc.step)
			}
			select {
			case <-ch:
			default:
				t.Fatalf("the cut armed at %q for %q never fired; requests after it:\n%s", tc.step, tc.request, proxy.Summary(20))
			}
			if !proxy.Down() {
				t.Fatal("the proxy is not down after the cut")
			}
			if herr == nil {
				// Finishing correctly is allowed, but then it really is hibernated.
				got, err := de.eng.Project(ctx, slug)
				if err != nil || got.Status != engine.StatusHibernated {
					t.Fatalf("hibernate reported success but the project is %+v (%v)", got, err)
				}
				t.Logf("hibernate finished despite the cut")
			} else {
				t.Logf("hibernate failed as it may: %v", herr)
			}

			if tc.request == netDelete {
				// The cut really fell in the middle of teardown: containers gone, files still
				// there, the network there or not depending on whether the daemon got the call.
				f := client.Filters{}.Add("label", "sailtui.project="+slug)
				cs, err := dcli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
				if err != nil || len(cs.Items) != 0 {
					t.Fatalf("containers of %s at the teardown cut: %v, %v", slug, cs.Items, err)
				}
				ns, err := dcli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
				if err != nil {
					t.Fatal(err)
				}
				if tc.afterForward && len(ns.Items) != 0 {
					t.Fatalf("the network removal reached the daemon, yet %v is there", ns.Items)
				}
				if !tc.afterForward && len(ns.Items) != 1 {
					t.Fatalf("the network removal never reached the daemon, yet the networks are %v", ns.Items)
				}
				if _, err := os.Stat(dir); err != nil {
					t.Fatalf("files of %s at the teardown cut: %v", slug, err)
				}
			}

			eng := de.eng
			if tc.sameEngine {
				proxy.Restore()
			} else {
				de.close()
				t.Setenv("DOCKER_HOST", real)
				eng = openDockerEngine(t, state, img, "sailtui-"+tok, nil).eng
			}
			assertRestorable(t, eng, dcli, slug, dir, before)
		})
	}
}
