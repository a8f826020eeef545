package docker

import (
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
)

// TestUsage (issue 17, item 15): through the Engine's stats API, a container that burns CPU
// reads as busy, one whose shell holds a 60 MiB string reads as holding at least 50 MiB and
// as idle, with the cgroup's limit; a container that does not run has no entry; the second
// call of a runtime takes its rate from the first call's reading (one sample per container,
// not the daemon's pair); a new runtime (the CLI) gets figures at its first call.
func TestUsage(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	proxy := dockertest.StartProxy(t, cli)
	cfg := testConfig(t, cli)
	cfg.Client = proxy.Client(t)
	r := newTestRuntime(t, cfg)
	pr := newProject(t, r, "usage")
	burn := engine.Container{ProjectID: pr.p.ID, Name: "burn", Directory: "."}
	alloc := engine.Container{ProjectID: pr.p.ID, Name: "alloc", Directory: "."}
	idle := engine.Container{ProjectID: pr.p.ID, Name: "idle", Directory: "."}
	pr.cs = append(pr.cs, burn, alloc, idle)
	for _, s := range []struct {
		c   engine.Container
		cmd string
	}{
		{burn, "while :; do :; done"},
		{alloc, "v=$(yes 0123456789abcdef | head -c 62914560); echo held ${#v}; while :; do sleep 1; done"},
	} {
		if _, err := r.StartContainer(t.Context(), pr.p, s.c, engine.StartSpec{Command: s.cmd}); err != nil {
			t.Fatalf("start %s: %v", s.c.Name, err)
		}
	}

	var u map[string]engine.ContainerUsage
	var err error
	waitFor(t, "alloc to hold 50 MiB", func() bool {
		if u, err = r.Usage(t.Context(), pr.p, pr.cs); err != nil {
			t.Fatal(err)
		}
		return u["alloc"].Memory >= 50<<20
	})
	t.Logf("usage: %+v", u)
	if got := u["burn"].CPU; got < 0.02 {
		t.Errorf("burn uses %.3f cores, want much of one (a busy loop)", got)
	}
	if got := u["burn"].Memory; got <= 0 || got > 64<<20 {
		t.Errorf("burn (a shell) holds %d bytes", got)
	}
	if _, ok := u["idle"]; ok {
		t.Errorf("a container that never started has usage %+v", u["idle"])
	}
	if u["alloc"].MemoryLimit < u["alloc"].Memory {
		t.Errorf("alloc's limit %d is below its memory %d", u["alloc"].MemoryLimit, u["alloc"].Memory)
	}

	// Once alloc's string is built it sleeps: idle. A later call has the one before's reading
	// to take the rate from: it asks for one sample of each container, not the daemon's pair.
	// On a loaded machine the string can take seconds more after 50 MiB, so the calls go on
	// (a second apart) until alloc reads as asleep, for at most 30 s.
	var stats []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		time.Sleep(time.Second)
		before := len(proxy.Requests())
		if u, err = r.Usage(t.Context(), pr.p, pr.cs); err != nil {
			t.Fatal(err)
		}
		stats = stats[:0]
		for _, rq := range proxy.Requests()[before:] {
			if strings.Contains(rq, "/stats") {
				stats = append(stats, rq)
			}
		}
		if b, a := u["burn"].CPU, u["alloc"].CPU; (b >= 0.02 && a <= b/2) || time.Now().After(deadline) {
			break
		}
	}
	if len(stats) != 2 || strings.Count(strings.Join(stats, " "), "one-shot=true") != 2 {
		t.Errorf("a later call asked for %q, want one one-shot sample of each running container", stats)
	}
	if b, a := u["burn"].CPU, u["alloc"].CPU; b < 0.02 || a > b/2 {
		t.Errorf("later calls for 30 s: burn %.3f cores, alloc (asleep) %.3f", b, a)
	}

	r2 := newTestRuntime(t, cfg)
	u2, err := r2.Usage(t.Context(), pr.p, pr.cs)
	if err != nil {
		t.Fatal(err)
	}
	if u2["burn"].CPU < 0.02 || u2["alloc"].Memory < 50<<20 {
		t.Errorf("a new runtime reads %+v", u2)
	}

	if err := r.StopContainer(t.Context(), pr.p, burn); err != nil {
		t.Fatal(err)
	}
	if u, err = r.Usage(t.Context(), pr.p, pr.cs); err != nil {
		t.Fatal(err)
	}
	if _, ok := u["burn"]; ok {
		t.Errorf("a stopped container has usage %+v", u["burn"])
	}
}
