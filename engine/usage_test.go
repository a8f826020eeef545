package engine_test

import (
	"errors"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

func TestUsageText(t *testing.T) {
	for _, c := range []struct {
		cpu      float64
		mem      int64
		cpuT, mT string
	}{
		{0, 0, "0.0%", "0B"},
		{0.005, 999, "0.5%", "999B"},
		{0.0996, 1000, "10%", "1.0K"},
		{0.25, 45 << 20, "25%", "45M"},
		{1.5, 1288490188, "150%", "1.2G"},
		{16, 999 << 20, "1600%", "999M"},
		{0.1, 1000 << 20, "10%", "1.0G"},
	} {
		u := engine.ContainerUsage{CPU: c.cpu, Memory: c.mem}
		if got := u.CPUText(); got != c.cpuT {
			t.Errorf("CPUText(%v) = %q, want %q", c.cpu, got, c.cpuT)
		}
		if got := u.MemoryText(); got != c.mT {
			t.Errorf("MemoryText(%d) = %q, want %q", c.mem, got, c.mT)
		}
	}
}

// plainRuntime hides every capability of the runtime it wraps: a runtime that does not
// measure what its containers use.
type plainRuntime struct{ engine.Runtime }

// TestEngineUsage: Engine.Usage asks the runtime for the running containers of an active
// project only; a project that does not run gives no figures and no error; a runtime that
// cannot measure gives ErrNotAvailable once, as a note saying so.
func TestEngineUsage(t *testing.T) {
	p := openTest(t, t.TempDir(), "me")
	ctx := t.Context()
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "busy", Containers: []engine.ContainerSpec{
		{Name: "burn", Directory: ".", Command: "while :; do :; done"},
		{Name: "nap", Directory: ".", Command: "sleep 600"},
	}})
	must(t, err)
	u, err := p.eng.Usage(ctx, pr.Slug)
	if err != nil || len(u) != 0 {
		t.Fatalf("usage of a project not started: %v, %v; want none, no error", u, err)
	}
	_, err = p.eng.StartProject(ctx, pr.ID)
	must(t, err)
	u, err = p.eng.Usage(ctx, pr.Slug)
	must(t, err)
	if len(u) != 2 || u["burn"].CPU < 0.02 || u["nap"].CPU > 0.01 || u["nap"].Memory <= 0 {
		t.Errorf("usage %+v: want burn busy, nap idle with its memory", u)
	}
	_, err = p.eng.StopProject(ctx, pr.ID)
	must(t, err)
	if u, err = p.eng.Usage(ctx, pr.Slug); err != nil || len(u) != 0 {
		t.Errorf("usage of a stopped project: %v, %v", u, err)
	}

	plain := openTest(t, t.TempDir(), "me", func(c *engine.Config) { c.Runtime = plainRuntime{c.Runtime} })
	pr2, err := plain.eng.CreateProject(ctx, engine.CreateRequest{Name: "plain", Containers: []engine.ContainerSpec{{Name: "web", Directory: ".", Command: "sleep 600"}}})
	must(t, err)
	_, err = plain.eng.Usage(ctx, pr2.Slug)
	if !errors.Is(err, engine.ErrNotAvailable) || err.Error() != "CPU and memory not available: the local runtime does not measure them" {
		t.Errorf("a runtime without UsageReader: %v", err)
	}
}
