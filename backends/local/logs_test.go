package local

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/logfile"
)

// A chatty container's log stays under its cap: the current file rotates once, and what is
// kept is the newest lines, whole and in order, with no gap.
func TestLogSizeCap(t *testing.T) {
	f := newFixture(t)
	const limit = 64 << 10
	f.cfg.LogMaxBytes = limit
	f.r = newTestRuntime(t, f.cfg)
	// 5,000 lines of ~100 bytes: about 500 KB, eight times the cap.
	f.start("chatty", `i=0; while [ $i -lt 5000 ]; do printf 'line %05d %s\n' $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done; echo done; exec sleep 300`)
	waitFor(t, "the last line", func() bool { return strings.HasSuffix(f.output("chatty"), "done\n") })
	path := f.r.logPath("demo", "chatty")
	var total int64
	for _, p := range []string{path, logfile.Rotated(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v (a log eight times its cap must have rotated)", p, err)
		}
		total += fi.Size()
	}
	if total > limit {
		t.Errorf("log takes %d bytes on disk; the cap is %d", total, limit)
	}
	if m, _ := filepath.Glob(path + ".*"); len(m) != 2 { // .1 and the lock
		t.Errorf("log files %v, want the log, one rotated file and the lock", m)
	}
	out := strings.Split(strings.TrimSuffix(f.output("chatty"), "\n"), "\n")
	if len(out) < 100 || out[len(out)-1] != "done" {
		t.Fatalf("kept %d lines ending %q; want the newest ones ending with done", len(out), out[len(out)-1])
	}
	var first int
	if _, err := fmt.Sscanf(out[0], "line %05d", &first); err != nil {
		t.Fatalf("first kept line %q is not a whole line", out[0])
	}
	for i, l := range out[:len(out)-1] {
		var n int
		if _, err := fmt.Sscanf(l, "line %05d", &n); err != nil || n != first+i {
			t.Fatalf("kept line %d is %q, want line %05d: a gap or a torn line", i, l, first+i)
		}
	}
	if first+len(out)-1 != 5000 {
		t.Errorf("kept lines %d..%d, want them to end at line 4999", first, first+len(out)-2)
	}
	// A tail reaches across both files.
	if got := tailLines(t, f, "chatty", len(out)); got != len(out) {
		t.Errorf("Tail %d read %d lines", len(out), got)
	}
}

func tailLines(t *testing.T, f *fixture, name string, n int) int {
	t.Helper()
	rc, err := f.r.Logs(t.Context(), f.p, engine.Container{Name: name}, engine.LogOptions{Tail: n})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	return strings.Count(readAll(t, rc), "\n")
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The times of a log are those of the writes, also for the lines a container wrote while no
// one read: the capture runs on its own, and a stop waits for it before its marker.
func TestLogTimesAndMarkers(t *testing.T) {
	f := newFixture(t)
	f.start("slow", `echo one; sleep 1.5; echo two; exec sleep 300`)
	waitFor(t, "two lines", func() bool { return strings.Contains(f.output("slow"), "two\n") })
	if err := f.r.StopContainer(t.Context(), f.p, engine.Container{Name: "slow"}); err != nil {
		t.Fatal(err)
	}
	rc, err := f.r.Logs(t.Context(), f.p, engine.Container{Name: "slow"}, engine.LogOptions{Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	log := readAll(t, rc)
	rc.Close()
	var texts []string
	times := map[string]time.Time{}
	for _, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		at, text, ok := engine.ParseLogLine([]byte(line))
		if !ok {
			t.Fatalf("line without a time: %q", line)
		}
		texts = append(texts, string(text))
		times[string(text)] = at
	}
	want := []string{engine.LogMarker(engine.LogMarkStarted), "one", "two", engine.LogMarker(engine.LogMarkStopped)}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("log %q, want %q", texts, want)
	}
	if d := times["two"].Sub(times["one"]); d < time.Second {
		t.Errorf("two written %v after one; the command slept 1.5s", d)
	}
	// A stopped container's capture process is gone with it.
	rec, err := readRecordFile(f.r.recordPath("demo", "slow"))
	if err != nil || rec == nil || rec.CapturePID == 0 {
		t.Fatalf("record %+v, %v: no capture process recorded", rec, err)
	}
	if groupAlive(rec.CapturePID, rec.CaptureTicks) {
		t.Errorf("capture process %d still runs after the stop", rec.CapturePID)
	}
}

// A container that ends on its own gets an exit marker with its code.
func TestLogExitMarker(t *testing.T) {
	f := newFixture(t)
	f.start("quitter", `echo bye; sleep 0.3; exit 3`)
	want := engine.LogMarker("exited with code 3")
	var out string
	waitFor(t, "the exit marker", func() bool {
		rc, err := f.r.Logs(t.Context(), f.p, engine.Container{Name: "quitter"}, engine.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		out = readAll(t, rc)
		return strings.HasSuffix(out, "bye\n"+want+"\n")
	})
}

// A log directory inside the projects directory would put logs into snapshots.
func TestLogDirInsideProjectsRefused(t *testing.T) {
	base := t.TempDir()
	_, err := New(Config{ProjectsDir: base, RunDir: filepath.Join(t.TempDir(), "run"), LogDir: filepath.Join(base, "x", "logs")})
	if err == nil || !strings.Contains(err.Error(), "inside ProjectsDir") {
		t.Fatalf("New with LogDir inside ProjectsDir: %v", err)
	}
}

// slowCaptureDir in a log path makes the capture process started for it sleep before it
// reads, as a loaded machine makes it: package variables initialise before the init that
// takes over as the capture process.
const slowCaptureDir = "slow-capture"

var _ = func() int {
	if os.Getenv(captureEnv) == "1" && len(os.Args) == 3 && strings.Contains(os.Args[1], slowCaptureDir) {
		time.Sleep(2 * time.Second)
	}
	return 0
}()

// A line written at once by a container whose capture process is slow to start still carries
// the time it was written: the container starts only once its output is read.
func TestLogTimeOfFirstLineWithSlowCapture(t *testing.T) {
	f := newFixture(t)
	f.cfg.LogDir = filepath.Join(t.TempDir(), slowCaptureDir)
	f.r = newTestRuntime(t, f.cfg)
	stamp := filepath.Join(t.TempDir(), "written")
	f.start("early", `date +%s%N > `+stamp+`; echo one; exec sleep 300`)
	waitFor(t, "the first line", func() bool { return f.output("early") == "one\n" })
	b, err := os.ReadFile(stamp)
	if err != nil {
		t.Fatal(err)
	}
	var ns int64
	if _, err := fmt.Sscan(string(b), &ns); err != nil {
		t.Fatalf("the container's clock %q: %v", b, err)
	}
	written := time.Unix(0, ns)
	rc, err := f.r.Logs(t.Context(), f.p, engine.Container{Name: "early"}, engine.LogOptions{Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	for _, line := range strings.Split(readAll(t, rc), "\n") {
		at, text, ok := engine.ParseLogLine([]byte(line))
		if !ok || string(text) != "one" {
			continue
		}
		if late := at.Sub(written); late > time.Second {
			t.Errorf("one carries a time %v after it was written: the time it was read, not written", late)
		}
		return
	}
	t.Fatal("no line one in the log with times")
}

// A capture process that died before reading fails the start (its container would die of
// SIGPIPE at its first line); one that is only slow does not.
func TestAwaitCaptureReady(t *testing.T) {
	for _, tc := range []struct {
		name    string
		writer  func(w *os.File)
		wantErr bool
	}{
		{"ready", func(w *os.File) { _, _ = w.Write([]byte{1}); _ = w.Close() }, false},
		{"died", func(w *os.File) { _ = w.Close() }, true},
		{"slow", func(w *os.File) { t.Cleanup(func() { _ = w.Close() }) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tc.writer(w)
			if err := awaitReady(r, 100*time.Millisecond); (err != nil) != tc.wantErr {
				t.Errorf("awaitReady: %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}

// A capture process started as a console from before the ready pipe starts it (without
// captureReadyEnv) leaves descriptor 3 alone, whatever it is, and still captures.
func TestCaptureWithoutReadyPipe(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.log")
	r3, w3, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	cmd := exec.Command(exe, path, "1048576")
	cmd.Env = []string{captureEnv + "=1", "GOMAXPROCS=1"}
	cmd.Stdin = strings.NewReader("hello\n")
	cmd.ExtraFiles = []*os.File{w3}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w3.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("capture: %v", err)
	}
	if b := readAll(t, r3); b != "" {
		t.Errorf("the capture wrote %q to a descriptor it was not told is its ready pipe", b)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "hello") {
		t.Errorf("the log: %q, %v", b, err)
	}
}
