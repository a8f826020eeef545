//go:build linux

package local

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// allocForTest holds n MiB, every page touched so it is resident, until killed.
func allocForTest(n string) {
	mib, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	for {
		time.Sleep(time.Hour)
		b[0]++
	}
}

// TestUsage (issue 17, item 15): a container that burns CPU reads as busy and a sleeper as
// idle, one whose child holds 60 MiB reads as holding at least 50 MiB (the whole process
// group counts);
// a container that does not run has no entry; a second call takes its rate from the first
// reading and does not wait for a sample of its own.
func TestUsage(t *testing.T) {
	f := newFixture(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f.start("burn", "while :; do :; done")
	f.start("alloc", "SAILTUI_TEST_ALLOC_MIB=60 "+strconv.Quote(exe)+" & wait")
	f.start("nap", "sleep 600")
	cs := []engine.Container{{Name: "burn"}, {Name: "alloc"}, {Name: "nap"}, {Name: "never-started"}}
	// A busy loop gets at least a little of a core even on a machine busy with other work; a
	// sleeper gets none.
	busyIdle := func(when string, u map[string]engine.ContainerUsage) {
		t.Helper()
		if b, n := u["burn"].CPU, u["nap"].CPU; b < 0.02 || n > 0.01 {
			t.Errorf("%s: burn (a busy loop) uses %.3f cores, nap (a sleeper) %.3f", when, b, n)
		}
	}

	var u map[string]engine.ContainerUsage
	deadline := time.Now().Add(20 * time.Second)
	for {
		start := time.Now()
		if u, err = f.r.Usage(t.Context(), f.p, cs); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("Usage took %v", took)
		}
		if u["alloc"].Memory >= 50<<20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("usage: %+v", u)
	if got := u["alloc"].Memory; got < 50<<20 || got > 1<<30 {
		t.Errorf("alloc holds %d bytes resident, want at least 50 MiB (its child holds 60)", got)
	}
	busyIdle("first call", u)
	if got := u["burn"].Memory; got <= 0 || got > 64<<20 {
		t.Errorf("burn (a shell) holds %d bytes resident", got)
	}
	if _, ok := u["never-started"]; ok {
		t.Errorf("a container that never started has usage %+v", u["never-started"])
	}

	// The console's pace: the next call has the reading of this one to take its rate from.
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	u2, err := f.r.Usage(t.Context(), f.p, cs)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= sampleWindow {
		t.Errorf("a call %v after the last took %v: it sampled again instead of using the kept reading", 300*time.Millisecond, took)
	}
	busyIdle("second call", u2)

	// A fresh runtime (the CLI) has no earlier reading and samples for itself.
	r2 := newTestRuntime(t, f.cfg)
	u3, err := r2.Usage(t.Context(), f.p, cs)
	if err != nil {
		t.Fatal(err)
	}
	busyIdle("a new runtime", u3)
	if u3["alloc"].Memory < 50<<20 {
		t.Errorf("a new runtime reads %+v", u3)
	}

	// Stopped: no entry.
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "burn"}); err != nil {
		t.Fatal(err)
	}
	u4, err := f.r.Usage(t.Context(), f.p, cs)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u4["burn"]; ok {
		t.Errorf("a stopped container has usage %+v", u4["burn"])
	}
}
