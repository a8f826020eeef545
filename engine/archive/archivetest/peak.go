package archivetest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Peak samples memory figures while something runs: read fills one value per figure, and is
// called at once and then every d until the returned stop is called. stop waits for the
// sampling to end and returns the largest value each figure reached. Which figures, and from
// where (runtime.ReadMemStats, runtime/metrics), is the caller's: the ways stop the world
// differently, and a benchmark keeps its own so its figures stay comparable.
func Peak(d time.Duration, figures int, read func(into []uint64)) (stop func() []uint64) {
	peak, cur := make([]uint64, figures), make([]uint64, figures)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			read(cur)
			for i, v := range cur {
				peak[i] = max(peak[i], v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() []uint64 {
		close(done)
		<-finished
		return peak
	}
}

// NeedTools fails b unless every tool (the other side of a benchmark: sh, tar, zstd) is on
// PATH, naming the Debian package to install.
func NeedTools(b *testing.B, tools ...string) {
	b.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s not found on PATH (install the Debian package %q): %v", tool, tool, err)
		}
	}
}

// Shell runs script with sh in dir, returning its output with the error.
func Shell(dir, script string) error {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", script, err, out)
	}
	return nil
}

// FileSize is the size of the file at p.
func FileSize(b *testing.B, p string) int64 {
	b.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
