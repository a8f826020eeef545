package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sailtui/sailtui/backends/sqlite"
)

// The console's fleet goals (issue 19), per fleet size. Zero: no goal at that size.
var consoleFleetGoals = map[int]struct {
	firstList time.Duration
	rssMiB    float64
	idleCPU   float64 // percent of one core
}{
	1_000:   {idleCPU: 0.3},
	10_000:  {firstList: 100 * time.Millisecond, rssMiB: 64, idleCPU: 0.3},
	100_000: {firstList: 500 * time.Millisecond, rssMiB: 160, idleCPU: 0.3},
}

// consoleBaseline is the console before it was event-driven and kept compact rows (commit
// f6c56bb, full reload every 5 s, 60 frames a second), measured with this benchmark on the
// 2-core machine of issue 19: the old console cannot run beside the new one, so each figure
// is also given as a ratio to it. A loaded machine moves both; compare runs of one load.
var consoleBaseline = map[int]struct {
	firstList time.Duration
	rssMiB    float64
	idleCPU   float64
}{
	1_000:   {firstList: 56 * time.Millisecond, rssMiB: 48.6, idleCPU: 0.95},
	10_000:  {firstList: 114 * time.Millisecond, rssMiB: 67.8, idleCPU: 1.85},
	100_000: {firstList: 1054 * time.Millisecond, rssMiB: 171.7, idleCPU: 12.5},
}

// seedSQLiteFleet writes n projects into the state directory's database in one transaction:
// 85% active (seen within the last 20 minutes), 15% hibernated.
func seedSQLiteFleet(tb testing.TB, state string, n int) {
	tb.Helper()
	path := filepath.Join(state, "sailtui.db")
	st, err := sqlite.Open(context.Background(), path) // creates the schema
	if err != nil {
		tb.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO projects (id, slug, name, owner, status, last_activity, created_at, updated_at, op_heartbeat)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)`)
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	for i := range n {
		status := "active"
		if i%20 < 3 {
			status = "hibernated"
		}
		last := now.Add(-time.Duration(i%1200) * time.Second).UnixMicro()
		created := now.Add(-time.Duration(n-i) * time.Second).UnixMicro()
		if _, err := ins.Exec(uuid.NewString(), fmt.Sprintf("proj-%06d", i), fmt.Sprintf("Project %d", i),
			fmt.Sprintf("owner-%d", i%50), status, last, created, created); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// procCPU is the process's CPU time so far: the sum of its threads' time on a CPU in
// nanoseconds (/proc/PID/task/*/schedstat), or where the kernel keeps no such figures, its
// user+system time in clock ticks (/proc/PID/stat). An idle console uses 30-60 ms over 20 s,
// a handful of 10 ms ticks: ticks alone would put ±25 % on the figure the goal is read from.
// A thread that ends takes its time with it; neither of the programs measured here (both Go)
// ends one.
func procCPU(tb testing.TB, pid int) time.Duration {
	if d, ok := schedstatCPU(pid); ok {
		return d
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("read the console's CPU time: %v", err)
	}
	// The command name may hold spaces; the fields after it are fixed.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// schedstatCPU sums the first field of each thread's schedstat (ns on a CPU).
func schedstatCPU(pid int) (time.Duration, bool) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended between the listing and the read
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += ns
	}
	return time.Duration(sum), true
}

// procRSS reads VmRSS and VmHWM (peak) of a process in MiB.
func procRSS(tb testing.TB, pid int) (rss, peak float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("read the console's memory: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		var kb float64
		for _, k := range []string{"VmRSS:", "VmHWM:"} {
			if strings.HasPrefix(l, k) {
				fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(l, k)), " kB"), &kb)
				if k == "VmRSS:" {
					rss = kb / 1024
				} else {
					peak = kb / 1024
				}
			}
		}
	}
	return rss, peak
}

const mib = 1 << 20

func ratio(now, base float64) string {
	if base == 0 {
		return "no baseline"
	}
	return fmt.Sprintf("%.2f× before", now/base)
}

func goalText(ok bool, goal string) string {
	if goal == "" {
		return ""
	}
	return fmt.Sprintf("(goal %s) %s", goal, map[bool]string{true: "ok", false: "MISSED"}[ok])
}

// BenchmarkConsoleFleet runs the real sailtui binary's console in tmux over 1k, 10k and 100k
// projects in SQLite: the time until the full list is on screen, the resident memory once it
// is, the CPU it uses over 20 s of doing nothing, and how long a key takes to show.
func BenchmarkConsoleFleet(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Fatalf("tmux is needed (make deps installs it): %v", err)
	}
	bin := filepath.Join(b.TempDir(), "sailtui")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build sailtui: %v: %s", err, out)
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			for range b.N {
				benchConsoleFleet(b, bin, n)
			}
		})
	}
}

// fleetRSS1k is the 1k run's resident memory, the base the larger fleets' cost per project is
// counted from.
var fleetRSS1k float64

// tuiCols and tuiRows are the terminal every console of the fleet benchmarks gets.
const tuiCols, tuiRows = 140, 40

// tuiSession is a console running in a tmux session of its own.
type tuiSession struct {
	name    string
	pid     int // the pane's process: the console, since its command line execs it
	stopped bool
	// control is the tmux control-mode client the session was made by; closing its input
	// detaches it.
	control *exec.Cmd
	input   io.Closer
}

// startTUI starts cmdline in a tmux session of its own and returns it, how long it took until
// listed held of the screen, and the CPU time the console had used by then (on a loaded
// machine the wall time is mostly waiting for a core). The session is stopped when b ends.
//
// The time counts from the exec of the console by the pane's shell, as from a user's Enter in
// a terminal already open: the pane's shell notes the time just before it. Making the tmux
// session and starting its shell took 45-50 ms here, the same for every console, and no part
// of any; fromTmux also counts it.
//
// The screen is read when the console writes, not on a timer: the session is made by a tmux
// control-mode client, which tmux tells of every write to the pane (%output), and the screen
// is captured after each. Capturing every 5 ms, as this did before, forked a tmux client 200
// times a second: on two cores that took close to half of the machine from the console being
// measured (a 100k list read in 465 ms took 800 ms under it).
func startTUI(b *testing.B, what, cmdline string, listed func(screen string) bool) (s *tuiSession, firstList, fromTmux, cpu time.Duration) {
	s = &tuiSession{name: fmt.Sprintf("sailtui-bench-%d", time.Now().UnixNano())}
	stamp := filepath.Join(b.TempDir(), "exec-at")
	cmdline = "date +%s%N > " + shellQuote(stamp) + "; exec " + cmdline
	var start time.Time
	var wrote <-chan time.Time
	// Other tests on the machine start and kill sessions on the same tmux server; when its
	// last session ends under this new-session it fails with "server exited unexpectedly".
	for try := 0; ; try++ {
		var err error
		start = time.Now()
		if wrote, err = s.startControl(cmdline); err == nil {
			break
		}
		if try == 4 {
			b.Fatalf("tmux new-session for %s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Cleanup(func() { s.stop(b) })
	out, err := tmux("display-message", "-p", "-t", s.name, "#{pane_pid}").Output()
	if err != nil {
		b.Fatalf("the pid of %s: %v", what, err)
	}
	if s.pid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		b.Fatalf("the pid of %s: %v", what, err)
	}
	// at is when tmux last told of a write: the screen captured after it is what that write
	// left, and the first such screen that lists everything dates the full list.
	at := time.Now()
	for scr := tmuxCapture(s.name); !listed(scr); scr = tmuxCapture(s.name) {
		select {
		case t, ok := <-wrote:
			if !ok {
				b.Fatalf("%s: tmux's control client ended before the full list showed:\n%s", what, scr)
			}
			at = t
		case <-time.After(time.Second):
			// Nothing written for a second: read the screen once more all the same.
		}
		// Take every write already told of: the capture below shows them all.
		for drained := false; !drained; {
			select {
			case t, ok := <-wrote:
				if ok {
					at = t
				} else {
					drained = true
				}
			default:
				drained = true
			}
		}
		if time.Since(start) > 90*time.Second {
			b.Fatalf("%s never showed its full list:\n%s", what, scr)
		}
	}
	ns, err := os.ReadFile(stamp)
	if err != nil {
		b.Fatalf("%s: when its shell exec'd it: %v", what, err)
	}
	execAt, err := strconv.ParseInt(strings.TrimSpace(string(ns)), 10, 64)
	if err != nil {
		b.Fatalf("%s: when its shell exec'd it: %q: %v", what, ns, err)
	}
	return s, time.Duration(at.UnixNano() - execAt), at.Sub(start), procCPU(b, s.pid)
}

// startControl makes the session through a tmux control-mode client running cmdline, and
// returns when tmux tells of each write to its pane (the channel closes with the client).
func (s *tuiSession) startControl(cmdline string) (<-chan time.Time, error) {
	c := tmux("-C", "new-session", "-s", s.name, "-x", strconv.Itoa(tuiCols), "-y", strconv.Itoa(tuiRows), cmdline)
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	wrote := make(chan time.Time, 4096)
	begun := make(chan error, 1)
	go func() {
		defer close(wrote)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		first := true
		for sc.Scan() {
			line := sc.Text()
			switch {
			case first && strings.HasPrefix(line, "%begin"):
				first = false
				begun <- nil
			case first && strings.HasPrefix(line, "%exit"):
				begun <- fmt.Errorf("tmux control client: %s", line)
				return
			case strings.HasPrefix(line, "%output"):
				select {
				case wrote <- time.Now():
				default: // the reader is behind: it captures the screen anyway
				}
			}
		}
		if first {
			begun <- fmt.Errorf("tmux control client ended at once: %v", sc.Err())
		}
	}()
	if err := <-begun; err != nil {
		_ = in.Close()
		_ = c.Wait()
		return nil, err
	}
	s.control, s.input = c, in
	return wrote, nil
}

// stop kills the session and makes sure its console is gone: one that ignored the hangup would
// go on using the core the next measurement counts.
func (s *tuiSession) stop(tb testing.TB) {
	if s.stopped {
		return
	}
	s.stopped = true
	_ = tmux("kill-session", "-t", s.name).Run()
	if s.control != nil {
		_ = s.input.Close()
		_ = s.control.Wait()
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(s.pid, 0); err != nil {
			return
		}
	}
	if err := syscall.Kill(s.pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		tb.Errorf("kill %d of session %s: %v", s.pid, s.name, err)
	}
}

func tmux(args ...string) *exec.Cmd { return exec.Command("tmux", args...) }

func tmuxCapture(name string) string {
	out, _ := tmux("capture-pane", "-p", "-t", name).Output()
	return string(out)
}

// tuiFigures are what the fleet benchmarks measure of one console.
type tuiFigures struct {
	// firstList counts from the console's exec, fromTmux from the making of its tmux session.
	firstList, fromTmux, firstCPU time.Duration // medians of three starts
	rss, peak                     float64       // MiB, once settled; peak after the idle stretch
	idle                          float64       // percent of one core over idleFor
	idleCPU                       time.Duration // the CPU time behind idle
	keyP50, keyMax                time.Duration
}

const idleFor = 20 * time.Second

// measureTUI measures a console the same way whatever it is: the time from its start until
// listed holds of the screen (the median of three starts), then, of the last one, the resident
// memory once settled, the CPU it uses over idleFor of doing nothing, and how long a key that
// moves the cursor (j, k) takes to show.
func measureTUI(b *testing.B, what, cmdline string, listed func(screen string) bool) tuiFigures {
	var f tuiFigures
	var starts, tmuxStarts, cpus []time.Duration
	var s *tuiSession
	for i := range 3 {
		var d, dt, cpu time.Duration
		s, d, dt, cpu = startTUI(b, what, cmdline, listed)
		starts, tmuxStarts, cpus = append(starts, d), append(tmuxStarts, dt), append(cpus, cpu)
		if i < 2 {
			s.stop(b)
		}
	}
	pid := s.pid
	f.firstList, f.fromTmux, f.firstCPU = pctDur(starts, 0.5), pctDur(tmuxStarts, 0.5), pctDur(cpus, 0.5)
	// With its escapes: k9s shows its cursor only in colour.
	capture := func() string {
		out, _ := tmux("capture-pane", "-p", "-e", "-t", s.name).Output()
		return string(out)
	}
	// Settle: the first usage fetches and the load's garbage.
	time.Sleep(3 * time.Second)
	f.rss, _ = procRSS(b, pid)
	cpu0, t0 := procCPU(b, pid), time.Now()
	time.Sleep(idleFor)
	f.idleCPU = procCPU(b, pid) - cpu0
	f.idle = 100 * float64(f.idleCPU) / float64(time.Since(t0))
	_, f.peak = procRSS(b, pid)

	// Key to frame: j moves the cursor; the frame that shows it is the first screen that differs
	// (in text or attributes).
	var lat []time.Duration
	for i := range 20 {
		before := capture()
		k := "j"
		if i%2 == 1 {
			k = "k"
		}
		t := time.Now()
		if err := tmux("send-keys", "-t", s.name, k).Run(); err != nil {
			b.Fatal(err)
		}
		for capture() == before && time.Since(t) < 5*time.Second {
		}
		lat = append(lat, time.Since(t))
		time.Sleep(50 * time.Millisecond)
	}
	f.keyP50, f.keyMax = pctDur(lat, 0.5), pctDur(lat, 1)
	s.stop(b)
	return f
}

// sailtuiCmdline runs the console of bin on state, in the monochrome the screen checks read.
func sailtuiCmdline(bin, state string) string {
	return "env NO_COLOR=1 TERM=xterm-256color " + shellQuote(bin) + " --state-dir " + shellQuote(state)
}

// sailtuiListed holds once the console's header counts all n projects.
func sailtuiListed(n int) func(string) bool {
	marker := fmt.Sprintf("%d projects:", n)
	return func(scr string) bool { return strings.Contains(scr, marker) }
}

func benchConsoleFleet(b *testing.B, bin string, n int) {
	state := b.TempDir()
	seedSQLiteFleet(b, state, n)
	f := measureTUI(b, "the console", sailtuiCmdline(bin, state), sailtuiListed(n))
	firstList, rss, peak, idle, keyP50 := f.firstList, f.rss, f.peak, f.idle, f.keyP50

	g, base := consoleFleetGoals[n], consoleBaseline[n]
	b.ReportMetric(float64(firstList)/1e6, "first-list-ms")
	b.ReportMetric(rss, "rss-MiB")
	b.ReportMetric(idle, "idle-cpu-%")
	b.ReportMetric(float64(keyP50)/1e6, "key-p50-ms")
	fmt.Printf("console, %d projects (sqlite): first full list %d ms from its exec (%d ms from tmux new-session), %d ms of CPU (medians of 3 starts; load %s) %s %s\n", n,
		firstList.Milliseconds(), f.fromTmux.Milliseconds(), f.firstCPU.Milliseconds(), loadAvg(),
		ratio(float64(firstList), float64(base.firstList)), goalText(firstList <= g.firstList, durGoal(g.firstList)))
	perProject := "the base the others are counted from"
	if n == 1_000 {
		fleetRSS1k = rss
	} else if fleetRSS1k > 0 {
		perProject = fmt.Sprintf("%.0f bytes per project over the 1k console", (rss-fleetRSS1k)*mib/float64(n-1_000))
	}
	fmt.Printf("console, %d projects: RSS %.1f MiB (peak %.1f) %s %s; %s\n", n, rss, peak,
		ratio(rss, base.rssMiB), goalText(rss <= g.rssMiB, numGoal(g.rssMiB, "MiB")), perProject)
	fmt.Printf("console, %d projects: idle CPU %.3f %% of a core over %s %s %s\n", n, idle, idleFor,
		ratio(idle, base.idleCPU), goalText(idle <= g.idleCPU, numGoal(g.idleCPU, "%")))
	fmt.Printf("console, %d projects: key to frame (through tmux) p50 %.1f ms, max %.1f ms\n", n,
		float64(keyP50)/1e6, float64(f.keyMax)/1e6)
}

// loadAvg is the machine's 1-minute load average: figures taken under load are not figures
// of the console alone.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

func durGoal(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return "≤ " + d.String()
}

func numGoal(v float64, unit string) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("≤ %g %s", v, unit)
}

func pctDur(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c[min(int(float64(len(c))*p), len(c)-1)]
}
