//go:build unix

package archive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// benchReps is how many times each side runs per iteration, alternating which goes first; the
// fastest run of each counts. File creation and compression times on a shared machine swing by
// a factor of several, and only the minimum compares the tools rather than the neighbours.
const benchReps = 5

// BenchmarkArchiveVsTar measures Write and Extract against `tar | zstd -1 -T0` and
// `zstd -d | tar -x` on the same generated tree in the same run, and reports the time ratios
// (ours / theirs, lower is better), our peak heap and both archive sizes. It needs tar and zstd
// on PATH (Debian packages tar and zstd).
func BenchmarkArchiveVsTar(b *testing.B) {
	archivetest.NeedTools(b, "sh", "tar", "zstd")
	ctx := context.Background()
	work := b.TempDir()
	src := filepath.Join(work, "tree")
	files, payload := archivetest.GenerateTree(b, src)
	ours := filepath.Join(work, "ours.tar.zst")
	theirs := filepath.Join(work, "theirs.tar.zst")

	best := map[string]time.Duration{}
	record := func(what string, d time.Duration) {
		if cur, ok := best[what]; !ok || d < cur {
			best[what] = d
		}
	}
	var peak uint64
	run := func(what string, f func() error) {
		b.StopTimer()
		archivetest.FlushDisk()
		b.StartTimer()
		d, p, err := measure(f)
		if err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		record(what, d)
		if what == "ours create" || what == "ours extract" {
			peak = max(peak, p)
		}
	}
	oursCreate := func() error {
		f, err := os.Create(ours)
		if err != nil {
			return err
		}
		if _, err := Write(ctx, src, f, WriteOptions{Exclude: []string{}}); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tarCreate := func() error {
		return archivetest.Shell(src, fmt.Sprintf("tar -cf - . | zstd -1 -T0 -q -f -o %q", theirs))
	}

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for rep := range benchReps {
			oursFirst := rep%2 == 0
			if oursFirst {
				run("ours create", oursCreate)
				run("tar create", tarCreate)
			} else {
				run("tar create", tarCreate)
				run("ours create", oursCreate)
			}
			// Every extraction goes to a directory of its own, all removed at the end: deleting
			// a tree between runs would bill its cleanup to whichever runs next.
			ourOut := filepath.Join(work, fmt.Sprintf("ours-out-%d-%d", i, rep))
			tarOut := filepath.Join(work, fmt.Sprintf("tar-out-%d-%d", i, rep))
			if err := os.Mkdir(tarOut, 0o755); err != nil {
				b.Fatal(err)
			}
			oursExtract := func() error {
				f, err := os.Open(ours)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = Extract(ctx, f, ourOut, Limits{})
				return err
			}
			tarExtract := func() error {
				return archivetest.Shell(work, fmt.Sprintf("zstd -d -q -c %q | tar -xf - -C %q", theirs, tarOut))
			}
			if oursFirst {
				run("ours extract", oursExtract)
				run("tar extract", tarExtract)
			} else {
				run("tar extract", tarExtract)
				run("ours extract", oursExtract)
			}
		}
	}
	b.StopTimer()

	ourSize, tarSize := archivetest.FileSize(b, ours), archivetest.FileSize(b, theirs)
	createRatio := float64(best["ours create"]) / float64(best["tar create"])
	extractRatio := float64(best["ours extract"]) / float64(best["tar extract"])
	b.ReportMetric(createRatio, "create_ratio")
	b.ReportMetric(extractRatio, "extract_ratio")
	b.ReportMetric(float64(peak)/(1<<20), "peak_heap_MiB")
	b.ReportMetric(float64(ourSize)/(1<<20), "archive_MiB")
	b.ReportMetric(float64(tarSize)/(1<<20), "tar_zstd_MiB")
	ms := func(what string) time.Duration { return best[what].Round(time.Millisecond) }
	fmt.Printf("tree %d files, %.0f MiB, %d CPUs, best of %d: archive create %v vs tar|zstd %v ratio %.2fx; extract %v vs zstd -d|tar -x %v ratio %.2fx; peak heap %.0f MiB; archive %.1f MiB vs %.1f MiB\n",
		files, float64(payload)/(1<<20), runtime.GOMAXPROCS(0), benchReps,
		ms("ours create"), ms("tar create"), createRatio,
		ms("ours extract"), ms("tar extract"), extractRatio,
		float64(peak)/(1<<20), float64(ourSize)/(1<<20), float64(tarSize)/(1<<20))
}

// measure times f and samples the heap in use while it runs. runtime/metrics rather than
// runtime.ReadMemStats: the latter stops the world at every sample, which slows down only the
// side being sampled.
func measure(f func() error) (time.Duration, uint64, error) {
	runtime.GC()
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	stop := archivetest.Peak(5*time.Millisecond, 1, func(v []uint64) {
		metrics.Read(samples)
		v[0] = samples[0].Value.Uint64() + samples[1].Value.Uint64()
	})
	start := time.Now()
	err := f()
	d := time.Since(start)
	return d, stop()[0], err
}
