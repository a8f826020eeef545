package s3store

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/s3/s3test"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// benchDirs maps projects to storage directories for the sandwich.
type benchDirs map[string]string

func (d benchDirs) StorageDir(p engine.Project) string { return d[p.ID] }

// BenchmarkS3Sandwich measures the S3 sandwich end to end against a local versitygw: Create
// (dehydrate: archive straight into a multipart upload) against `tar | zstd -1 -T0` to a local
// file, and Restore (hydrate: stream the object back and extract) against `zstd -d | tar -x`,
// on the tree of engine/archive's benchmark. It reports the time ratios (ours / theirs, goal
// ≤ 1.1) and our process's peak memory (goal < 64 MiB): HeapInuse and Sys sampled every 10 ms,
// and VmHWM (peak RSS) from /proc/self/status, reset before each measured phase.
//
// To tell the cost of S3 from the cost of the archive format, the same run also times
// archive.Write into a local file and archive.Extract from it, and reports the CPU time the
// server used: on a small machine the server competes with the archiver for the same cores,
// which tar | zstd writing a local file does not. The tools need sh, tar and zstd on PATH
// (Debian packages tar and zstd).
func BenchmarkS3Sandwich(b *testing.B) {
	for _, tool := range []string{"sh", "tar", "zstd"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s not found on PATH (install the Debian package %q): %v", tool, tool, err)
		}
	}
	ctx := context.Background()
	srv := s3test.Start(b)
	store := open(b, srv, "bench")
	work := b.TempDir()
	src := filepath.Join(work, "tree")
	files, payload := archivetest.GenerateTree(b, src)
	theirs := filepath.Join(work, "theirs.tar.zst")
	local := filepath.Join(work, "local.tar.zst")
	dirs := benchDirs{"src": src, "dst": filepath.Join(work, "restored")}
	sw := archive.NewSandwich(store, dirs, archive.SandwichOptions{Exclude: []string{}})
	srcProject, dstProject := engine.Project{ID: "src", Owner: "bench"}, engine.Project{ID: "dst", Owner: "bench"}

	var t struct{ s3Create, localCreate, tarCreate, s3Restore, localRestore, tarRestore, verify, srvCreate, srvRestore time.Duration }
	var createPeak, restorePeak, localPeak peakMem
	var size int64
	// phase runs one untimed-preparation / timed-work step: the disk is flushed first so that
	// no side pays for the previous one's writes.
	phase := func(f func()) time.Duration {
		b.StopTimer()
		flushDisk()
		b.StartTimer()
		start := time.Now()
		f()
		return time.Since(start)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var snap engine.Snapshot
		cpu0 := procCPU(srv.PID())
		t.s3Create += phase(func() {
			_, p, err := measurePeak(func() error {
				var err error
				snap, err = sw.Create(ctx, srcProject, engine.Snapshot{ID: fmt.Sprintf("snap-%d", i), ProjectID: "src", Owner: "bench", Type: engine.SnapshotManual}, nil)
				return err
			})
			if err != nil {
				b.Fatalf("Sandwich.Create: %v", err)
			}
			createPeak = createPeak.max(p)
		})
		t.srvCreate += procCPU(srv.PID()) - cpu0
		size = snap.SizeBytes

		b.StopTimer()
		start := time.Now()
		if _, err := sw.WaitReady(ctx, snap); err != nil {
			b.Fatalf("Sandwich.WaitReady: %v", err)
		}
		t.verify += time.Since(start)
		b.StartTimer()

		t.localCreate += phase(func() {
			_, p, err := measurePeak(func() error {
				f, err := os.Create(local)
				if err != nil {
					return err
				}
				_, err = archive.Write(ctx, src, f, archive.WriteOptions{Exclude: []string{}})
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				return err
			})
			if err != nil {
				b.Fatalf("archive.Write: %v", err)
			}
			localPeak = localPeak.max(p)
		})
		t.tarCreate += phase(func() { runShell(b, src, fmt.Sprintf("tar -cf - . | zstd -1 -T0 -q -f -o %q", theirs)) })

		localOut := filepath.Join(work, fmt.Sprintf("local-out-%d", i))
		tarOut := filepath.Join(work, fmt.Sprintf("tar-out-%d", i))
		if err := os.Mkdir(tarOut, 0o755); err != nil {
			b.Fatal(err)
		}
		cpu0 = procCPU(srv.PID())
		t.s3Restore += phase(func() {
			_, p, err := measurePeak(func() error { return sw.Restore(ctx, dstProject, snap, nil) })
			if err != nil {
				b.Fatalf("Sandwich.Restore: %v", err)
			}
			restorePeak = restorePeak.max(p)
		})
		t.srvRestore += procCPU(srv.PID()) - cpu0
		t.localRestore += phase(func() {
			f, err := os.Open(local)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if _, err := archive.Extract(ctx, f, localOut, archive.Limits{}); err != nil {
				b.Fatalf("archive.Extract: %v", err)
			}
		})
		t.tarRestore += phase(func() { runShell(b, work, fmt.Sprintf("zstd -d -q -c %q | tar -xf - -C %q", theirs, tarOut)) })

		b.StopTimer()
		for _, d := range []string{dirs["dst"], localOut, tarOut} {
			_ = os.RemoveAll(d)
		}
		if err := sw.Delete(ctx, snap); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()

	n := time.Duration(b.N)
	avg := func(d time.Duration) time.Duration { return (d / n).Round(time.Millisecond) }
	createRatio := float64(t.s3Create) / float64(t.tarCreate)
	restoreRatio := float64(t.s3Restore) / float64(t.tarRestore)
	peak := createPeak.max(restorePeak)
	b.ReportMetric(createRatio, "dehydrate_ratio")
	b.ReportMetric(restoreRatio, "hydrate_ratio")
	b.ReportMetric(float64(t.s3Create)/float64(t.localCreate), "dehydrate_vs_local")
	b.ReportMetric(float64(t.s3Restore)/float64(t.localRestore), "hydrate_vs_local")
	b.ReportMetric(mib(peak.heap), "peak_heap_MiB")
	b.ReportMetric(mib(peak.sys), "peak_sys_MiB")
	b.ReportMetric(mib(peak.rss), "peak_rss_MiB")
	fmt.Printf("S3 sandwich, tree %d files, %.0f MiB on %d CPUs, archive %.1f MiB (tar|zstd %.1f MiB):\n"+
		"  dehydrate %v vs tar|zstd %v: ratio %.2fx (archive.Write to a local file %v: S3 costs %.2fx; versitygw used %v CPU)\n"+
		"  hydrate   %v vs zstd -d|tar -x %v: ratio %.2fx (archive.Extract from a local file %v: S3 costs %.2fx; versitygw used %v CPU)\n"+
		"  verify read-back %v; our peak heap %.0f MiB (create %.0f, restore %.0f; archive.Write alone %.0f), Go sys %.0f MiB, RSS (VmHWM) %.0f MiB (archive.Write alone %.0f); versitygw VmHWM %.0f MiB\n",
		files, mib(payload), runtime.GOMAXPROCS(0), mib(size), mib(fileSize(b, theirs)),
		avg(t.s3Create), avg(t.tarCreate), createRatio, avg(t.localCreate), float64(t.s3Create)/float64(t.localCreate), avg(t.srvCreate),
		avg(t.s3Restore), avg(t.tarRestore), restoreRatio, avg(t.localRestore), float64(t.s3Restore)/float64(t.localRestore), avg(t.srvRestore),
		avg(t.verify), mib(peak.heap), mib(createPeak.heap), mib(restorePeak.heap), mib(localPeak.heap),
		mib(peak.sys), mib(peak.rss), mib(localPeak.rss), mib(int64(vmHWM(srv.PID()))))
}

// procCPU is the user+system CPU time a process has used so far; 0 when unknown.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces; the counters follow the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const ticksPerSecond = 100 // USER_HZ, 100 on every Linux platform Go supports
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

func mib[T int64 | uint64](v T) float64 { return float64(v) / (1 << 20) }

// peakMem is the peak memory of our process during a phase.
type peakMem struct {
	heap, sys, rss uint64
}

func (p peakMem) max(q peakMem) peakMem {
	return peakMem{heap: max(p.heap, q.heap), sys: max(p.sys, q.sys), rss: max(p.rss, q.rss)}
}

// measurePeak times f while sampling HeapInuse and Sys, and reads the peak RSS it reached.
func measurePeak(f func() error) (time.Duration, peakMem, error) {
	// Give the previous phase's freed memory back first: the kernel resets the peak to the
	// current RSS, which would otherwise include it.
	debug.FreeOSMemory()
	resetHWM()
	var heap, sys atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			heap.Store(max(heap.Load(), ms.HeapInuse))
			sys.Store(max(sys.Load(), ms.Sys))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	start := time.Now()
	err := f()
	d := time.Since(start)
	close(stop)
	wg.Wait()
	return d, peakMem{heap: heap.Load(), sys: sys.Load(), rss: vmHWM(os.Getpid())}, err
}

// resetHWM restarts the kernel's peak-RSS count of this process (Linux ≥ 4.0), so VmHWM
// speaks for the phase measured rather than for the tree generation before it.
func resetHWM() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// vmHWM reads a process's peak resident set size; 0 when unknown.
func vmHWM(pid int) uint64 {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// flushDisk writes back dirty pages so one side's writes are not paid for by the other.
func flushDisk() { syscall.Sync() }

func runShell(b *testing.B, dir, script string) {
	b.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func fileSize(b *testing.B, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
