package ui

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// streamLines makes the source's logs give lines, then stay open (a followed log) until the
// pane closes them.
func streamLines(src *fakeSource, lines ...string) {
	src.logs = func(ctx context.Context, _, _ string, _ engine.LogOptions) (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, strings.Join(lines, "\n")+"\n")
			<-ctx.Done()
			_ = pw.Close()
		}()
		return pr, nil
	}
}

// stamped is a log line as a runtime gives it with LogOptions.Timestamps.
func stamped(at time.Time, text string) string {
	return strings.TrimSuffix(string(engine.FormatLogLine(at, []byte(text))), "\n")
}

// t shows each line's own time, the one the runtime recorded, not the time the pane read it:
// a backlog read in one go keeps its times (issue 17, item 3); quiet counts from the last
// line's own time; a saved log carries the same times; lines from another day show the date.
func TestLogsShowTheLinesOwnTimes(t *testing.T) {
	src, _ := timelineFixture()
	streamLines(src,
		stamped(t0.Add(-26*time.Hour), "from yesterday"),
		stamped(t0.Add(-2*time.Hour), "two hours ago"),
		stamped(t0.Add(-90*time.Second), "a minute and a half ago"))
	h := openLogs(t, src)
	h.press("t")
	v := h.plainView()
	for _, want := range []string{
		"Feb 28 10:00:00.000 from yesterday",
		"10:00:00.000 two hours ago",
		"11:58:30.000 a minute and a half ago",
		"◌ quiet 1m ",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("logs lack %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "12:00:00.000") {
		t.Errorf("a line shows the time it was read:\n%s", v)
	}
	path := filepath.Join(t.TempDir(), "saved.log")
	h.press("s")
	h.m.dialog.(*promptDialog).input.SetValue(path)
	h.press("enter")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "2026-02-28T10:00:00Z from yesterday\n2026-03-01T10:00:00Z two hours ago\n2026-03-01T11:58:30Z a minute and a half ago\n"
	if string(got) != want {
		t.Errorf("saved %q, want %q", got, want)
	}
}

// A line without a time of its own (a log from before times were kept) gets the time it came.
func TestLogsLineWithoutTime(t *testing.T) {
	src, _ := timelineFixture()
	src.logLines = []string{"no time here"}
	h := openLogs(t, src)
	h.press("t")
	if v := h.plainView(); !strings.Contains(v, "12:00:00.000 no time here") {
		t.Errorf("line without a time:\n%s", v)
	}
}

// The pane says when its container does not run, instead of "streaming" (item 4), from the
// status the console reads as it refreshes.
func TestLogsPaneSaysContainerState(t *testing.T) {
	src, p := timelineFixture()
	streamLines(src, stamped(t0.Add(-time.Second), "serving"))
	h := openLogs(t, src)
	if v := h.plainView(); !strings.Contains(v, "● streaming") {
		t.Fatalf("a running container's log is not streaming:\n%s", v)
	}
	for _, step := range []struct {
		project engine.ProjectStatus
		state   engine.ContainerStatus
		want    string
	}{
		{engine.StatusActive, engine.ContainerStatus{State: engine.ContainerStopped}, "■ stopped"},
		{engine.StatusActive, engine.ContainerStatus{State: engine.ContainerExited, ExitCode: 3}, "✗ exited (3)"},
		{engine.StatusHibernated, engine.ContainerStatus{State: engine.ContainerStopped}, "◼ hibernated"},
		{engine.StatusActive, engine.ContainerStatus{State: engine.ContainerRunning}, "● streaming"},
	} {
		src.mu.Lock()
		src.projects[0].Status = step.project
		src.containers[p.ID][0].Status = step.state
		src.mu.Unlock()
		h.send(refreshTickMsg{})
		v := h.plainView()
		if !strings.Contains(v, step.want) || (step.want != "● streaming" && strings.Contains(v, "streaming")) {
			t.Errorf("%s, container %s: want %q:\n%s", step.project, step.state.State, step.want, v)
		}
	}
}
