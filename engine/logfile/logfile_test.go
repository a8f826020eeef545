package logfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

func read(t *testing.T, path string, tail int) string {
	t.Helper()
	b, err := Open(path, tail)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out, err := io.ReadAll(b.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Rotation keeps the newest lines, whole, under the cap; a tail reaches into the rotated file;
// Strip gives back what was written.
func TestWriterRotatesUnderCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	const limit = 8 << 10
	w := NewWriter(path, limit)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 1000 {
		if err := w.WriteLines(at.Add(time.Duration(i)*time.Millisecond), [][]byte{fmt.Appendf(nil, "line %04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Mark(at.Add(2*time.Second), engine.LogMarkStopped); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var total int64
	for _, p := range []string{path, Rotated(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if total > limit {
		t.Errorf("%d bytes on disk, cap %d", total, limit)
	}
	all := read(t, path, 0)
	lines := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, " "+engine.LogMarker(engine.LogMarkStopped)) {
		t.Errorf("last line %q, want the marker", last)
	}
	first := -1
	for i, l := range lines[:len(lines)-1] {
		ts, text, ok := engine.ParseLogLine([]byte(l))
		var n int
		if _, err := fmt.Sscanf(string(text), "line %04d", &n); !ok || err != nil {
			t.Fatalf("line %d %q is not a whole stamped line", i, l)
		}
		if first < 0 {
			first = n
		}
		if n != first+i || !ts.Equal(at.Add(time.Duration(n)*time.Millisecond)) {
			t.Fatalf("line %d is %q, want line %04d at its own time", i, l, first+i)
		}
	}
	if first+len(lines)-1 != 1000 {
		t.Errorf("kept lines end at %d, want 999", first+len(lines)-2)
	}
	// The current file alone holds fewer lines than this tail.
	cur, _ := os.ReadFile(path)
	n := strings.Count(string(cur), "\n") + 5
	if got := read(t, path, n); got != strings.Join(lines[len(lines)-n:], "\n")+"\n" {
		t.Errorf("tail %d across both files wrong:\n%s", n, got)
	}
	if got := read(t, path, -1); got != "" {
		t.Errorf("tail -1 = %q", got)
	}
	plain, err := io.ReadAll(Strip(strings.NewReader(all)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(plain), fmt.Sprintf("line %04d\nline %04d\n", first, first+1)) {
		t.Errorf("stripped log starts %q", string(plain)[:40])
	}
}

// Lines written before sailtui kept times pass Strip unchanged, as do times inside a line.
func TestStripLeavesUnstamped(t *testing.T) {
	in := "plain line\n2026-12-01T10:00:00.000000000Z stamped\nnot 2026-12-01T10:00:00Z here\n" + strings.Repeat("x", 70000) + "\n"
	want := "plain line\nstamped\nnot 2026-12-01T10:00:00Z here\n" + strings.Repeat("x", 70000) + "\n"
	got, err := io.ReadAll(Strip(strings.NewReader(in)))
	if err != nil || string(got) != want {
		t.Errorf("Strip = %.80q, %v", got, err)
	}
}
