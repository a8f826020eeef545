package kubernetes

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/dirstore"
	"github.com/sailtui/sailtui/engine"
)

// keeperRuntime is a runtime that only keeps logs, in a directory object store: enough for the
// segment rules, which need no cluster (the node tests read real pods' logs through them).
func keeperRuntime(t *testing.T, max int64) *Runtime {
	t.Helper()
	store, err := dirstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &Runtime{cfg: Config{Logs: store, LogPrefix: "logs/", LogMaxBytes: max}}
}

func stamped(at time.Time, lines ...string) []byte {
	var b bytes.Buffer
	for i, l := range lines {
		b.Write(engine.FormatLogLine(at.Add(time.Duration(i)*time.Millisecond), []byte(l)))
	}
	return b.Bytes()
}

func keptText(t *testing.T, r *Runtime, p engine.Project, name string, want int) string {
	t.Helper()
	segs, err := r.segments(t.Context(), p, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.keptTail(t.Context(), segs, want)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for line := range bytes.Lines(b) {
		_, text, _ := engine.ParseLogLine(line)
		out.Write(text)
	}
	return out.String()
}

// A save keeps only lines after the last kept one (a stop that failed after its save leaves
// the pod, whose log is read again at the next stop), markers go in place and move nothing on,
// and a tail counts across segments.
func TestKeptSegments(t *testing.T) {
	r := keeperRuntime(t, 1<<20)
	p := engine.Project{ID: "p/1", Slug: "p1"} // an id that must not add a key level
	t0 := time.Now().Add(-time.Hour)
	ctx := t.Context()
	if err := r.saveSegment(ctx, p, "web", stamped(t0, "one", "two"), engine.LogMarkStopped); err != nil {
		t.Fatal(err)
	}
	// The same pod read again, with one more line: only "three" is new.
	if err := r.saveSegment(ctx, p, "web", stamped(t0, "one", "two", "three"), engine.LogMarkStopped); err != nil {
		t.Fatal(err)
	}
	if err := r.MarkLog(ctx, p, []engine.Container{{Name: "web"}, {Name: "never-ran"}}, engine.LogMarkHibernated); err != nil {
		t.Fatal(err)
	}
	stopped, hib := engine.LogMarker(engine.LogMarkStopped), engine.LogMarker(engine.LogMarkHibernated)
	want := "one\ntwo\n" + stopped + "\nthree\n" + stopped + "\n" + hib + "\n"
	if got := keptText(t, r, p, "web", -1); got != want {
		t.Errorf("kept log = %q, want %q", got, want)
	}
	if got := keptText(t, r, p, "web", 3); got != "three\n"+stopped+"\n"+hib+"\n" {
		t.Errorf("tail 3 across segments = %q", got)
	}
	segs, _ := r.segments(ctx, p, "never-ran")
	if len(segs) != 0 {
		t.Errorf("a container with no kept log got a marker: %v", segs)
	}
	// The marker's time (this machine's clock) does not hide pod lines timed before it.
	segs, _ = r.segments(ctx, p, "web")
	if got, want := lastKept(segs), t0.Add(2*time.Millisecond).UnixNano(); got != want {
		t.Errorf("last kept line time %d, want %d (the time of \"three\")", got, want)
	}
	var out bytes.Buffer
	after := lastKept(segs)
	if err := copyAfter(&out, bytes.NewReader(stamped(t0, "one", "two", "three", "four")), &after); err != nil {
		t.Fatal(err)
	}
	if _, text, _ := engine.ParseLogLine(out.Bytes()); string(text) != "four\n" {
		t.Errorf("live lines after the kept ones = %q, want only four", out.String())
	}

	if err := r.DropLogs(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := keptText(t, r, p, "web", -1); got != "" {
		t.Errorf("kept log after DropLogs = %q", got)
	}
}

// The oldest segments go once a container's pass the cap; the newest stays whatever its size.
func TestKeptSegmentsCapped(t *testing.T) {
	r := keeperRuntime(t, 4<<10)
	p := engine.Project{ID: "p2", Slug: "p2"}
	t0 := time.Now().Add(-time.Hour)
	for i := range 40 {
		var lines []string
		for j := range 50 {
			lines = append(lines, fmt.Sprintf("run %d line %d %x", i, j, time.Now().UnixNano()*int64(j+1)))
		}
		if err := r.saveSegment(t.Context(), p, "web", stamped(t0.Add(time.Duration(i)*time.Second), lines...), engine.LogMarkStopped); err != nil {
			t.Fatal(err)
		}
	}
	segs, err := r.segments(t.Context(), p, "web")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range segs {
		total += s.size
	}
	if total > 4<<10 || len(segs) == 0 || len(segs) == 40 {
		t.Fatalf("%d segments, %d bytes after 40 saves under a 4 KiB cap", len(segs), total)
	}
	got := keptText(t, r, p, "web", -1)
	if !strings.Contains(got, "run 39 line 49") || strings.Contains(got, "run 0 line") {
		t.Errorf("capped log keeps the newest and drops the oldest: first line %q", strings.SplitN(got, "\n", 2)[0])
	}
}
