package engine_test

import (
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
