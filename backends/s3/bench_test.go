package s3store

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
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

// s3BenchReps is how many times each side runs per iteration, alternating which goes first.
// File creation and compression times on a shared machine swing by a factor of several from
// one run to the next; the fastest run of each side compares the tools rather than the
// neighbours (as engine/archive's benchmark does), and the median is reported beside it.
const s3BenchReps = 3

// BenchmarkS3Sandwich measures the S3 sandwich end to end against a local versitygw: Create
// (dehydrate: archive straight into a multipart upload) against `tar | zstd -1 -T0` to a local
// file, and Restore (hydrate: stream the object back, extract, sync, swap in) against
// `zstd -d | tar -x`, on the tree of engine/archive's benchmark. It reports the time ratios
// (ours / theirs, goal ≤ 1.1) of the fastest runs, and our process's peak memory (goal
// < 64 MiB): the heap in use and the runtime's total sampled every 10 ms, and VmHWM (peak RSS)
// from /proc/self/status, reset before each measured phase.
//
// To tell the cost of S3 from the cost of the archive format, the same run also times
// archive.Write into a local file and archive.Extract from it, and reports the CPU time the
// server used: on a small machine the server competes with the archiver for the same cores,
// which tar | zstd writing a local file does not. The tools need sh, tar and zstd on PATH
// (Debian packages tar and zstd).
func BenchmarkS3Sandwich(b *testing.B) {
	archivetest.NeedTools(b, "sh", "tar", "zstd", "rclone", "aws")
	ctx := context.Background()
	srv := s3test.Start(b)
	store := open(b, srv, "bench")
	work := b.TempDir()
	src := filepath.Join(work, "tree")
	files, payload := archivetest.GenerateTree(b, src)
	theirs := filepath.Join(work, "theirs.tar.zst")
	local := filepath.Join(work, "local.tar.zst")
	dirs := benchDirs{"src": src}
	sw := archive.NewSandwich(store, dirs, archive.SandwichOptions{Exclude: []string{}})
	srcProject := engine.Project{ID: "src", Owner: "bench"}
	scripted := newScripted(srv)

	times := map[string][]time.Duration{}
	// cpu is the CPU time each run took in this process and its children (the shell
	// pipelines); the server's is counted apart. On a machine this small the ratios are
	// mostly a matter of CPU, and this says where it goes.
	cpu := map[string][]time.Duration{}
	var verify, srvCreate, srvRestore time.Duration
	var createPeak, restorePeak, localPeak peakMem
	var size int64
	// run times one step, after flushing the disk so that no side pays for the previous one's
	// writes.
	run := func(what string, f func()) {
		b.StopTimer()
		archivetest.FlushDisk()
		b.StartTimer()
		cpu0 := ownCPU()
		start := time.Now()
		f()
		times[what] = append(times[what], time.Since(start))
		cpu[what] = append(cpu[what], ownCPU()-cpu0)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for rep := range s3BenchReps {
			oursFirst := rep%2 == 0
			var snap engine.Snapshot
			s3Create := func() {
				cpu0 := procCPU(srv.PID())
				_, p, err := measurePeak(func() error {
					var err error
					snap, err = sw.Create(ctx, srcProject, engine.Snapshot{ID: fmt.Sprintf("snap-%d-%d", i, rep), ProjectID: "src", Owner: "bench", Type: engine.SnapshotManual})
					return err
				})
				srvCreate += procCPU(srv.PID()) - cpu0
				if err != nil {
					b.Fatalf("Sandwich.Create: %v", err)
				}
				createPeak = createPeak.max(p)
			}
			localCreate := func() {
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
			}
			tarCreate := func() { runShell(b, src, fmt.Sprintf("tar -cf - . | zstd -1 -T0 -q -f -o %q", theirs)) }
			key := fmt.Sprintf("scripted/%d-%d.tar.zst", i, rep)
			rcloneCreate := func() { runShell(b, src, scripted.rcloneUpload(key+".rclone")) }
			awsCreate := func() { runShell(b, src, scripted.awsUpload(key+".aws")) }
			if oursFirst {
				run("s3 create", s3Create)
				run("local create", localCreate)
				run("tar create", tarCreate)
				run("rclone create", rcloneCreate)
				run("aws create", awsCreate)
			} else {
				run("aws create", awsCreate)
				run("rclone create", rcloneCreate)
				run("tar create", tarCreate)
				run("local create", localCreate)
				run("s3 create", s3Create)
			}
			size = snap.SizeBytes

			b.StopTimer()
			start := time.Now()
			if _, err := sw.WaitReady(ctx, snap); err != nil {
				b.Fatalf("Sandwich.WaitReady: %v", err)
			}
			verify += time.Since(start)
			b.StartTimer()

			// Every restore goes to a directory of its own, all removed at the end: deleting a
			// tree between runs would bill its cleanup to whichever runs next.
			dst := engine.Project{ID: fmt.Sprintf("dst-%d-%d", i, rep), Owner: "bench"}
			dirs[dst.ID] = filepath.Join(work, "restored-"+dst.ID)
			localOut := filepath.Join(work, fmt.Sprintf("local-out-%d-%d", i, rep))
			tarOut := filepath.Join(work, fmt.Sprintf("tar-out-%d-%d", i, rep))
			if err := os.Mkdir(tarOut, 0o755); err != nil {
				b.Fatal(err)
			}
			s3Restore := func() {
				cpu0 := procCPU(srv.PID())
				_, p, err := measurePeak(func() error { return sw.Restore(ctx, dst, snap) })
				srvRestore += procCPU(srv.PID()) - cpu0
				if err != nil {
					b.Fatalf("Sandwich.Restore: %v", err)
				}
				restorePeak = restorePeak.max(p)
			}
			localRestore := func() {
				f, err := os.Open(local)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				if _, err := archive.Extract(ctx, f, localOut, archive.Limits{}); err != nil {
					b.Fatalf("archive.Extract: %v", err)
				}
			}
			tarRestore := func() { runShell(b, work, fmt.Sprintf("zstd -d -q -c %q | tar -xf - -C %q", theirs, tarOut)) }
			// A restore ends with the tree on disk (syncfs before the swap); tar leaves it in
			// the page cache. The same pipeline followed by `sync -f` (syncfs) is the like for
			// like comparison, reported beside the ratio.
			syncOut := tarOut + "-sync"
			if err := os.Mkdir(syncOut, 0o755); err != nil {
				b.Fatal(err)
			}
			tarSyncRestore := func() {
				runShell(b, work, fmt.Sprintf("zstd -d -q -c %q | tar -xf - -C %q && sync -f %q", theirs, syncOut, syncOut))
			}
			rcloneOut, awsOut := tarOut+"-rclone", tarOut+"-aws"
			for _, d := range []string{rcloneOut, awsOut} {
				if err := os.Mkdir(d, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			rcloneRestore := func() { runShell(b, work, scripted.rcloneDownload(key+".rclone", rcloneOut)) }
			awsRestore := func() { runShell(b, work, scripted.awsDownload(key+".aws", awsOut)) }
			if oursFirst {
				run("s3 restore", s3Restore)
				run("local restore", localRestore)
				run("tar restore", tarRestore)
				run("tar+sync restore", tarSyncRestore)
				run("rclone restore", rcloneRestore)
				run("aws restore", awsRestore)
			} else {
				run("aws restore", awsRestore)
				run("rclone restore", rcloneRestore)
				run("tar+sync restore", tarSyncRestore)
				run("tar restore", tarRestore)
				run("local restore", localRestore)
				run("s3 restore", s3Restore)
			}

			b.StopTimer()
			if err := sw.Delete(ctx, snap); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()

	best := func(what string) time.Duration { return slices.Min(times[what]) }
	median := func(what string) time.Duration { return medianOf(times[what]) }
	ratio := func(f func(string) time.Duration, ours, theirs string) float64 {
		return float64(f(ours)) / float64(f(theirs))
	}
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	all := func(what string) string {
		var parts []string
		for _, d := range times[what] {
			parts = append(parts, ms(d).String())
		}
		return strings.Join(parts, " ")
	}
	runs := time.Duration(b.N * s3BenchReps)
	createRatio, restoreRatio := ratio(best, "s3 create", "tar create"), ratio(best, "s3 restore", "tar restore")
	peak := createPeak.max(restorePeak)
	b.ReportMetric(createRatio, "dehydrate_ratio")
	b.ReportMetric(restoreRatio, "hydrate_ratio")
	b.ReportMetric(ratio(median, "s3 create", "tar create"), "dehydrate_ratio_median")
	b.ReportMetric(ratio(median, "s3 restore", "tar restore"), "hydrate_ratio_median")
	b.ReportMetric(ratio(best, "s3 restore", "tar+sync restore"), "hydrate_ratio_durable")
	b.ReportMetric(ratio(best, "s3 create", "local create"), "dehydrate_vs_local")
	b.ReportMetric(ratio(best, "s3 restore", "local restore"), "hydrate_vs_local")
	fasterCreate, fasterRestore := faster(best, "rclone create", "aws create"), faster(best, "rclone restore", "aws restore")
	b.ReportMetric(ratio(best, "s3 create", fasterCreate), "dehydrate_vs_scripted")
	b.ReportMetric(ratio(best, "s3 restore", fasterRestore), "hydrate_vs_scripted")
	b.ReportMetric(mib(peak.heap), "peak_heap_MiB")
	b.ReportMetric(mib(peak.sys), "peak_sys_MiB")
	b.ReportMetric(mib(peak.rss), "peak_rss_MiB")
	fmt.Printf("S3 against what a user would script, to the same versitygw, best of %d (goal ≤ 1.00x the faster tool, both ways):\n"+
		"  dehydrate %v vs tar|zstd -1 -T0|rclone rcat %v, |aws s3 cp - %v: %.2fx the faster (%s) %s\n"+
		"  hydrate   %v vs rclone cat|zstd -d|tar -x %v, aws s3 cp - -|zstd -d|tar -x %v: %.2fx the faster (%s) %s\n",
		s3BenchReps,
		ms(best("s3 create")), ms(best("rclone create")), ms(best("aws create")), ratio(best, "s3 create", fasterCreate), fasterCreate, met(ratio(best, "s3 create", fasterCreate) <= 1),
		ms(best("s3 restore")), ms(best("rclone restore")), ms(best("aws restore")), ratio(best, "s3 restore", fasterRestore), fasterRestore, met(ratio(best, "s3 restore", fasterRestore) <= 1))
	fmt.Printf("S3 sandwich, tree %d files, %.0f MiB on %d CPUs, archive %.1f MiB (tar|zstd %.1f MiB), best of %d (median ratio in brackets):\n"+
		"  dehydrate %v vs tar|zstd %v: ratio %.2fx (%.2fx) (archive.Write to a local file %v: S3 costs %.2fx; versitygw used %v CPU per run)\n"+
		"  hydrate   %v vs zstd -d|tar -x %v: ratio %.2fx (%.2fx) (archive.Extract from a local file %v: S3 costs %.2fx; versitygw used %v CPU per run)\n"+
		"  hydrate to disk: S3 restore %v vs zstd -d|tar -x then sync -f %v: ratio %.2fx (%.2fx)\n"+
		"  runs: S3 create [%s], tar|zstd [%s], local Write [%s]; S3 restore [%s], zstd -d|tar -x [%s], local Extract [%s], tar then sync [%s]\n"+
		"  CPU per run (median): S3 create %v + versitygw %v, tar|zstd %v, local Write %v; S3 restore %v + versitygw %v, zstd -d|tar -x %v, local Extract %v\n"+
		"  verify read-back %v; our peak heap %.0f MiB (create %.0f, restore %.0f; archive.Write alone %.0f), Go sys %.0f MiB, RSS (VmHWM) %.0f MiB (create %.0f, restore %.0f; archive.Write alone %.0f); versitygw VmHWM %.0f MiB\n",
		files, mib(payload), runtime.GOMAXPROCS(0), mib(size), mib(archivetest.FileSize(b, theirs)), s3BenchReps,
		ms(best("s3 create")), ms(best("tar create")), createRatio, ratio(median, "s3 create", "tar create"), ms(best("local create")), ratio(best, "s3 create", "local create"), ms(srvCreate/runs),
		ms(best("s3 restore")), ms(best("tar restore")), restoreRatio, ratio(median, "s3 restore", "tar restore"), ms(best("local restore")), ratio(best, "s3 restore", "local restore"), ms(srvRestore/runs),
		ms(best("s3 restore")), ms(best("tar+sync restore")), ratio(best, "s3 restore", "tar+sync restore"), ratio(median, "s3 restore", "tar+sync restore"),
		all("s3 create"), all("tar create"), all("local create"), all("s3 restore"), all("tar restore"), all("local restore"), all("tar+sync restore"),
		ms(medianOf(cpu["s3 create"])), ms(srvCreate/runs), ms(medianOf(cpu["tar create"])), ms(medianOf(cpu["local create"])),
		ms(medianOf(cpu["s3 restore"])), ms(srvRestore/runs), ms(medianOf(cpu["tar restore"])), ms(medianOf(cpu["local restore"])),
		ms(verify/runs), mib(peak.heap), mib(createPeak.heap), mib(restorePeak.heap), mib(localPeak.heap),
		mib(peak.sys), mib(peak.rss), mib(createPeak.rss), mib(restorePeak.rss), mib(localPeak.rss), mib(int64(vmHWM(srv.PID()))))
}

func medianOf(ds []time.Duration) time.Duration {
	ts := slices.Sorted(slices.Values(ds))
	return ts[len(ts)/2]
}

// ownCPU is the user+system CPU time of this process and of its children waited for.
func ownCPU() time.Duration {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
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

// measurePeak times f while sampling the heap in use and the runtime's total, and reads the
// peak RSS it reached. runtime/metrics rather than runtime.ReadMemStats: the latter stops the
// world at every sample, which slows down only the side being measured.
func measurePeak(f func() error) (time.Duration, peakMem, error) {
	// Give the previous phase's freed memory back first: the kernel resets the peak to the
	// current RSS, which would otherwise include it.
	debug.FreeOSMemory()
	resetHWM()
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/total:bytes"},
	}
	stop := archivetest.Peak(10*time.Millisecond, 2, func(v []uint64) {
		metrics.Read(samples)
		v[0], v[1] = samples[0].Value.Uint64()+samples[1].Value.Uint64(), samples[2].Value.Uint64()
	})
	start := time.Now()
	err := f()
	d := time.Since(start)
	peak := stop()
	return d, peakMem{heap: peak[0], sys: peak[1], rss: vmHWM(os.Getpid())}, err
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

func runShell(b *testing.B, dir, script string) {
	b.Helper()
	if err := archivetest.Shell(dir, script); err != nil {
		b.Fatal(err)
	}
}
