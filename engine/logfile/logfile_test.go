package logfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// MarkLogs marks the logs that are there and makes none for a container that never ran; a
// slug or container name that could name another file is refused before anything is written.
func TestMarkLogs(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name+".log") }
	if err := Mark(path("web"), 0, engine.LogMarkStopped); err != nil {
		t.Fatal(err)
	}
	p := engine.Project{ID: "p1", Slug: "demo"}
	if err := MarkLogs(p, []engine.Container{{Name: "web"}, {Name: "never-ran"}}, path, 0, engine.LogMarkHibernated); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path("web"), 0); !strings.HasSuffix(got, " "+engine.LogMarker(engine.LogMarkHibernated)+"\n") {
		t.Errorf("web's log after MarkLogs:\n%s", got)
	}
	if _, err := os.Stat(path("never-ran")); !os.IsNotExist(err) {
		t.Errorf("a log was made for a container that never ran: %v", err)
	}
	for _, bad := range []struct {
		p  engine.Project
		cs []engine.Container
	}{
		{engine.Project{Slug: "../demo"}, []engine.Container{{Name: "web"}}},
		{engine.Project{Slug: ".demo"}, []engine.Container{{Name: "web"}}},
		{p, []engine.Container{{Name: "web"}, {Name: "../web"}}},
		{p, []engine.Container{{Name: "web"}, {Name: "Web"}}},
	} {
		before := read(t, path("web"), 0)
		if err := MarkLogs(bad.p, bad.cs, path, 0, engine.LogMarkStopped); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("MarkLogs(%q, %v): %v, want ErrBadInput", bad.p.Slug, bad.cs, err)
		}
		if after := read(t, path("web"), 0); after != before {
			t.Errorf("a refused MarkLogs(%q, %v) wrote:\n%s", bad.p.Slug, bad.cs, after)
		}
	}
}

// Logs refuses names that could name another file before it opens anything, names the
// container in a failure, and takes the times off unless asked for them.
func TestLogs(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	line := engine.FormatLogLine(at, []byte("hello"))
	opened := 0
	open := func(context.Context, engine.Project, engine.Container, engine.LogOptions) (io.ReadCloser, error) {
		opened++
		return io.NopCloser(strings.NewReader(string(line))), nil
	}
	p := engine.Project{ID: "p1", Slug: "demo"}
	for _, opts := range []engine.LogOptions{{}, {Timestamps: true}} {
		rc, err := Logs(t.Context(), p, engine.Container{Name: "web"}, opts, open)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
		want := "hello\n"
		if opts.Timestamps {
			want = string(line)
		}
		if string(b) != want {
			t.Errorf("Logs with %+v: %q, want %q", opts, b, want)
		}
	}
	opened = 0
	for _, bad := range []struct{ slug, name string }{{"../demo", "web"}, {"demo", "../web"}, {"demo", "Web"}} {
		if _, err := Logs(t.Context(), engine.Project{Slug: bad.slug}, engine.Container{Name: bad.name}, engine.LogOptions{}, open); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("Logs of %s/%s: %v, want ErrBadInput", bad.slug, bad.name, err)
		}
	}
	if opened != 0 {
		t.Errorf("%d opens of logs with a bad name", opened)
	}
	failing := func(context.Context, engine.Project, engine.Container, engine.LogOptions) (io.ReadCloser, error) {
		return nil, fs.ErrPermission
	}
	if _, err := Logs(t.Context(), p, engine.Container{Name: "web"}, engine.LogOptions{}, failing); !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "demo/web") {
		t.Errorf("a failed open: %v, want it naming demo/web", err)
	}
}
