package enginetest

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// logToken is what the container of LogsAcrossHibernation prints; its command computes it, so
// it is in the log and nowhere in the project's tree or the store.
const logToken = "LOGTOKEN-42"

// LogsAcrossHibernation checks that a container's log is kept across hibernate and wake, with
// markers of what happened in between and the times the lines were written, that it is in no
// snapshot archive (objects is the root of the directory object store the archives go to), and
// that it goes with the project (named name): keptLogs lists the files the runtime keeps the project's logs
// in, read behind the engine's back.
func LogsAcrossHibernation(t *testing.T, eng *engine.Engine, name, objects string, keptLogs func(engine.Project) []string) {
	t.Helper()
	ctx := t.Context()
	p := NewProject(t, eng, name)
	if _, err := eng.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "app", Directory: ".", Command: `echo "LOGTOKEN-$((6*7)) run"; exec sleep 600`}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.StartProject(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	waitLog(t, eng, p, func(s string) bool { return strings.Count(s, logToken) == 1 })
	hp, err := eng.Hibernate(ctx, p.Slug)
	if err != nil {
		t.Fatalf("hibernate: %v", err)
	}
	// Hibernated: the environment is gone, the log is not.
	lines := readTimed(t, eng, p)
	wantInOrder(t, lines, logToken+" run", engine.LogMarker(engine.LogMarkStopped), engine.LogMarker(engine.LogMarkHibernated))
	snap, err := eng.Snapshots(ctx, p.Slug, false)
	if err != nil {
		t.Fatal(err)
	}
	checked := false
	for _, s := range snap {
		if s.ID == hp.HibernationSnapshot {
			archiveHoldsNoLog(t, objects, s)
			checked = true
		}
	}
	if !checked {
		t.Fatalf("hibernation snapshot %q not in the timeline %+v", hp.HibernationSnapshot, snap)
	}
	if _, err := eng.Wake(ctx, p.Slug); err != nil {
		t.Fatalf("wake: %v", err)
	}
	waitLog(t, eng, p, func(s string) bool { return strings.Count(s, logToken) == 2 })
	lines = readTimed(t, eng, p)
	wantInOrder(t, lines, logToken+" run", engine.LogMarker(engine.LogMarkStopped), engine.LogMarker(engine.LogMarkHibernated),
		engine.LogMarker(engine.LogMarkWoke), engine.LogMarker(engine.LogMarkStarted), logToken+" run")
	for _, l := range lines {
		t.Logf("%s %s", l.at.Format(time.RFC3339Nano), l.text)
	}
	for i := 1; i < len(lines); i++ {
		if lines[i].at.Before(lines[i-1].at) {
			t.Errorf("line %d (%q at %v) is older than the line before it (%q at %v)", i, lines[i].text, lines[i].at, lines[i-1].text, lines[i-1].at)
		}
	}
	if len(keptLogs(p)) == 0 {
		t.Fatalf("no kept log files for %s while it is active", p.Slug)
	}
	if _, err := eng.DeleteProject(ctx, p.Slug); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if left := keptLogs(p); len(left) > 0 {
		t.Errorf("logs left after the project was deleted: %v", left)
	}
}

type timedLine struct {
	at   time.Time
	text string
}

func readLog(t *testing.T, eng *engine.Engine, p engine.Project, opts engine.LogOptions) string {
	t.Helper()
	rc, err := eng.Logs(t.Context(), p.Slug, "app", opts)
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read logs: %v", err)
	}
	return string(b)
}

func waitLog(t *testing.T, eng *engine.Engine, p engine.Project, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := readLog(t, eng, p, engine.LogOptions{})
		if ok(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log never got there; it is:\n%s", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readTimed(t *testing.T, eng *engine.Engine, p engine.Project) []timedLine {
	t.Helper()
	s := readLog(t, eng, p, engine.LogOptions{Timestamps: true})
	var out []timedLine
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		at, text, ok := engine.ParseLogLine([]byte(line))
		if !ok {
			t.Fatalf("log line %q has no time; log:\n%s", line, s)
		}
		out = append(out, timedLine{at, string(text)})
	}
	return out
}

// wantInOrder checks that the lines hold want in this order (other lines may come between).
func wantInOrder(t *testing.T, lines []timedLine, want ...string) {
	t.Helper()
	i := 0
	for _, l := range lines {
		if i < len(want) && l.text == want[i] {
			i++
		}
	}
	if i < len(want) {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(l.at.Format(time.RFC3339Nano) + " " + l.text + "\n")
		}
		t.Fatalf("log lacks %q (after %q) in order %q; log:\n%s", want[i], want[:i], want, b.String())
	}
}

// archiveHoldsNoLog reads a snapshot's archive: no entry is a log, none holds the log's token.
func archiveHoldsNoLog(t *testing.T, objects string, s engine.Snapshot) {
	t.Helper()
	n := eachArchived(t, objects, s, func(name string, r io.Reader) {
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".log") || strings.Contains(name, ".log.") || bytes.Contains(b, []byte(logToken)) {
			t.Errorf("snapshot %s holds a log: entry %s", s.ID, name)
		}
	})
	if n == 0 {
		t.Fatalf("snapshot %s's archive has no entries: nothing was checked", s.ID)
	}
}
