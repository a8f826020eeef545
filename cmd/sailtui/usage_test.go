package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// usageRow is a row of containers ls -o json with what it uses.
type usageRow struct {
	Name   string
	Status string
	Usage  *struct {
		CPU    float64 `json:"cpu_cores"`
		Memory int64   `json:"memory_bytes"`
	}
}

// busyProject is a local project busy with a busy loop (burn) and a sleeper (nap), started,
// and a container added after the start (later), so it does not run.
func busyProject(t *testing.T) *cli {
	t.Helper()
	c := newCLI(t)
	c.ok("project", "create", "busy")
	c.ok("container", "add", "busy", "burn", "--dir", ".", "--command", "while :; do :; done")
	c.ok("container", "add", "busy", "nap", "--dir", ".", "--command", "sleep 600")
	c.ok("project", "start", "busy")
	c.ok("container", "add", "busy", "later", "--dir", ".", "--command", "sleep 600")
	return c
}

// TestCLIContainersUsage (issue 17, item 15): containers ls shows CPU and MEM of each running
// container (a busy loop busy, a sleeper idle, both with their memory), "-" for one that does
// not run, and -o json carries the figures; nothing is noted on stderr when they are there.
func TestCLIContainersUsage(t *testing.T) {
	c := busyProject(t)

	var rows []usageRow
	out := c.ok("containers", "ls", "busy", "-o", "json")
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("containers ls -o json: %v: %s", err, out)
	}
	by := map[string]usageRow{}
	for _, r := range rows {
		by[r.Name] = r
	}
	burn, nap := by["burn"].Usage, by["nap"].Usage
	if burn == nil || nap == nil {
		t.Fatalf("running containers without usage: %s", out)
	}
	if burn.CPU < 0.02 || nap.CPU >= burn.CPU || burn.Memory <= 0 || nap.Memory <= 0 {
		t.Errorf("burn %+v, nap %+v: want burn busy, nap idle, both with memory", *burn, *nap)
	}
	if by["later"].Usage != nil {
		t.Errorf("a container that was never started has usage %+v", *by["later"].Usage)
	}

	r := c.run("containers", "ls", "busy")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("containers ls: exit %d, stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if h := strings.Fields(lines[0]); len(h) < 2 || h[len(h)-2] != "CPU" || h[len(h)-1] != "MEM" {
		t.Fatalf("header %q: want CPU and MEM columns last", lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		cpu, mem := f[len(f)-2], f[len(f)-1]
		switch f[0] {
		case "burn", "nap":
			if !strings.HasSuffix(cpu, "%") || mem == "-" {
				t.Errorf("row %q: want a CPU percentage and a memory size", l)
			}
		case "later":
			if cpu != "-" || mem != "-" {
				t.Errorf("row %q: want - for what does not run", l)
			}
		}
	}
}

// TestKubernetesUsageNotAvailable (issue 17, item 15): on a cluster without a metrics API
// (the test control plane has no metrics-server) containers ls lists the containers, shows
// "-" for CPU and MEM, notes once on stderr that they are not available and why, and exits 0.
func TestKubernetesUsageNotAvailable(t *testing.T) {
	c, _ := kubeCLI(t)
	slug := "use-" + randSuffix(t)
	c.ok("project", "create", slug, "--owner", "tester")
	c.ok("container", "add", slug, "web", "--dir", "frontend", "--port", "5173", "--command", "npm run dev")
	c.ok("container", "add", slug, "api", "--dir", "backend", "--port", "8000", "--command", "uvicorn main:app")
	start := time.Now()
	r := c.run("containers", "ls", slug)
	if r.code != 0 {
		t.Fatalf("containers ls: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stderr, "not available"); n != 1 || !strings.Contains(r.stderr, "metrics-server") {
		t.Errorf("stderr %q: want one note that CPU and MEM are not available, saying to install metrics-server", r.stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		if f := strings.Fields(l); f[len(f)-2] != "-" || f[len(f)-1] != "-" {
			t.Errorf("row %q: want - for CPU and MEM", l)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("containers ls took %v", took)
	}
}

// TestConsoleContainersUsage (issue 17, item 15): through tmux on the real binary, the
// Containers pane of a running local project shows CPU and MEM: a busy loop busy, a
// sleeper idler, a container that does not run "-".
func TestConsoleContainersUsage(t *testing.T) {
	c := busyProject(t)
	s := startConsole(t, c)
	s.waitFor("busy", "active")
	s.keys("Enter")
	s.waitFor("CPU", "MEM", "burn", "nap", "later")
	row := func(scr, name string) []string {
		for _, l := range strings.Split(scr, "\n") {
			if f := strings.Fields(strings.TrimPrefix(l, ">")); len(f) > 0 && f[0] == name {
				return f
			}
		}
		return nil
	}
	// CPU and MEM come after UPTIME: ... STATE PORT UPTIME CPU MEM URL.
	cpuMem := func(f []string) (string, string) {
		for i, x := range f {
			if x == "running" || x == "stopped" {
				return f[i+3], f[i+4]
			}
		}
		return "", ""
	}
	deadline := time.Now().Add(30 * time.Second)
	var scr string
	for {
		scr = s.screen()
		bc, bm := cpuMem(row(scr, "burn"))
		nc, nm := cpuMem(row(scr, "nap"))
		lc, lm := cpuMem(row(scr, "later"))
		var burn, nap float64
		_, err := fmt.Sscanf(bc, "%f%%", &burn)
		_, err2 := fmt.Sscanf(nc, "%f%%", &nap)
		if err == nil && err2 == nil && burn >= 2 && nap < burn && bm != "-" && nm != "-" && lc == "-" && lm == "-" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("burn CPU %q MEM %q, nap %q %q, later %q %q: want burn busy, nap measured, later -:\n%s", bc, bm, nc, nm, lc, lm, scr)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
