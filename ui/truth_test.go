package ui

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Issue 17, item 5: what the console shows is what is true now.

// A message leaves the status line after a while (info sooner than an error), on the
// console's own ticks; the help screen still has it whole.
func TestStatusMessagesExpire(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	h.send(infoMsg{text: "storefront started"})
	if got := statusRow(h); !strings.Contains(got, "storefront started") {
		t.Fatalf("info not shown: %q", got)
	}
	src.setNow(t0.Add(infoShownFor - time.Second))
	h.send(refreshTickMsg{})
	if got := statusRow(h); !strings.Contains(got, "storefront started") {
		t.Errorf("info gone before %s: %q", infoShownFor, got)
	}
	src.setNow(t0.Add(infoShownFor))
	h.send(refreshTickMsg{})
	if got := statusRow(h); strings.Contains(got, "storefront started") {
		t.Errorf("info still shown after %s: %q", infoShownFor, got)
	}
	h.press("?")
	if v := h.plainView(); !strings.Contains(v, "Last message") || !strings.Contains(v, "storefront started") {
		t.Errorf("help lost the expired message:\n%s", v)
	}
	h.press("?")

	start := t0.Add(time.Minute)
	src.setNow(start)
	h.send(errMsg{err: errors.New("load containers: boom")})
	src.setNow(start.Add(errShownFor - time.Second))
	h.send(refreshTickMsg{})
	if got := statusRow(h); !strings.Contains(got, "boom") {
		t.Errorf("error gone before %s: %q", errShownFor, got)
	}
	src.setNow(start.Add(errShownFor))
	h.send(refreshTickMsg{})
	if got := statusRow(h); strings.Contains(got, "boom") {
		t.Errorf("error still shown after %s: %q", errShownFor, got)
	}
}

// An action's error goes once the row of its project changes: the row is newer news.
func TestStatusErrorEndsWhenItsRowChanges(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	src.opErr = errors.New("hibernate storefront: snapshot failed")
	h.press("G", "h", "y")
	h.flushReload() // the reload the action asked for: the row as the error left it
	if got := statusRow(h); !strings.Contains(got, "snapshot failed") {
		t.Fatalf("error not shown: %q", got)
	}
	// Another project changing does not end it.
	src.mu.Lock()
	src.setProject("p2", func(p *engine.Project) { p.Status = engine.StatusActive })
	src.mu.Unlock()
	h.send(reloadDueMsg{})
	if got := statusRow(h); !strings.Contains(got, "snapshot failed") {
		t.Errorf("another row's change ended the error: %q", got)
	}
	src.mu.Lock()
	src.setProject("p1", func(p *engine.Project) { p.Status = engine.StatusHibernated })
	src.mu.Unlock()
	h.send(reloadDueMsg{})
	if got := statusRow(h); strings.Contains(got, "snapshot failed") {
		t.Errorf("the error outlived a change of its row: %q", got)
	}
}

// The describe view reads the runtime again at the console's pace and on events for its
// project, keeping where it was scrolled; it says when what it shows was read.
func TestDescribeRefreshes(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	h.press("j", "d")
	if v := h.plainView(); !strings.Contains(v, "as of 12:00:00") {
		t.Errorf("describe does not say when it was read:\n%s", v)
	}
	src.mu.Lock()
	src.describeNote = "web exited(1)\n"
	src.mu.Unlock()
	src.setNow(t0.Add(paneRefreshInterval))
	h.send(refreshTickMsg{})
	if v := h.plainView(); !strings.Contains(v, "web exited(1)") || !strings.Contains(v, "as of 12:00:05") {
		t.Errorf("the slow refresh did not read describe again:\n%s", v)
	}
	src.mu.Lock()
	src.describeNote = "web running again\n"
	src.mu.Unlock()
	h.send(eventsMsg{ch: closedEvents(), evs: []engine.Event{{ProjectID: "p1", Slug: "storefront", Kind: "status", To: engine.StatusActive}}})
	h.flushReload()
	if v := h.plainView(); !strings.Contains(v, "web running again") {
		t.Errorf("an event for the project did not read describe again:\n%s", v)
	}
}

// A container's row says "stopping…" while its stop runs, and what the runtime says at once
// when it ends, not at the next refresh.
func TestContainerRowDuringAndAfterStop(t *testing.T) {
	h, src := projectsHarness(t, Options{})
	src.gate = make(chan struct{})
	h.wait = 100 * time.Millisecond
	h.press("j", "enter")
	_, cmd := h.m.Update(keyPress("s"))
	_, cmd = h.m.Update(cmd())
	msgs := background(cmd)
	if got := h.selectedLine(); !strings.Contains(got, "stopping…") {
		t.Errorf("the row does not say its stop runs: %q", got)
	}
	src.mu.Lock()
	src.setContainers("p1", engine.ContainerRunning) // a refresh meanwhile still sees it run
	src.mu.Unlock()
	h.send(refreshTickMsg{})
	if got := h.selectedLine(); !strings.Contains(got, "stopping…") {
		t.Errorf("a refresh during the stop took the action's word away: %q", got)
	}
	close(src.gate)
	h.send(next[opDoneMsg](h, msgs))
	takeScheduled[reloadDueMsg](h) // no waiting for the coalesced reload
	if got := h.selectedLine(); !strings.Contains(got, "stopped") || strings.Contains(got, "stopping") {
		t.Errorf("after the stop the row is not read again at once: %q", got)
	}
	for range msgs {
	}
}

// "quiet" counts from the last line received, and says so when none came yet; not from
// the pane's opening.
func TestLogsQuietCountsFromTheLastLine(t *testing.T) {
	src, _ := timelineFixture()
	pr, pw := io.Pipe()
	defer pw.Close()
	src.logs = func(ctx context.Context, _, _ string, _ engine.LogOptions) (io.ReadCloser, error) {
		return openUntilDone(ctx, pr)
	}
	h, msgs := openFirstLogs(t, src)
	h.send(next[logBatchMsg](h, msgs)) // opened, nothing in its log
	l := h.m.top().(*logsPane)
	if v := h.plainView(); !strings.Contains(v, "● streaming") {
		t.Fatalf("not streaming:\n%s", v)
	}
	src.setNow(t0.Add(15 * time.Second))
	h.send(refreshTickMsg{})
	if v := h.plainView(); !strings.Contains(v, "◌ quiet: no line received yet") || strings.Contains(v, "quiet 15s") {
		t.Errorf("a log that never said anything is counted from the opening:\n%s", v)
	}
	src.setNow(t0.Add(20 * time.Second))
	h.send(logBatchMsg{to: l, gen: l.gen, lines: []string{"GET / 200"}})
	if v := h.plainView(); !strings.Contains(v, "● streaming") {
		t.Errorf("a line arrived, still quiet:\n%s", v)
	}
	src.setNow(t0.Add(32 * time.Second))
	h.send(refreshTickMsg{})
	if v := h.plainView(); !strings.Contains(v, "◌ quiet 12s") {
		t.Errorf("quiet does not count from the last line (20s in):\n%s", v)
	}
}

// A describe line wider than the screen (a long command) can be read whole: scrolled to its
// end, or wrapped with w.
func TestDescribeWrapsLongLines(t *testing.T) {
	h, _ := projectsHarness(t, Options{})
	h.press("j", "d")
	d := h.m.top().(*describePane)
	cmd := "sh -c 'npm install && npm run dev -- --host 0.0.0.0 --port $PORT" + strings.Repeat(" --flag", 20) + " END'"
	h.send(describedMsg{to: d, text: "command of web:\n  " + cmd + "\n", asked: t0})
	if v := h.plainView(); strings.Contains(v, "END") || !strings.Contains(v, "w wrap") {
		t.Fatalf("a wide line should be cut, with w offered:\n%s", v)
	}
	h.press("w")
	v := h.plainView()
	var joined strings.Builder
	for _, l := range strings.Split(v, "\n")[3:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		joined.WriteString(l)
	}
	if got := strings.TrimSpace(joined.String()); !strings.Contains(got, strings.TrimSpace(cmd)) {
		t.Errorf("wrapped, the command is not whole:\n%s\ngot %q", v, got)
	}
	if !strings.Contains(v, "w no wrap") || strings.Contains(v, "→ scroll right") {
		t.Errorf("wrapped: help should offer no wrap and no sideways scroll:\n%s", v)
	}
	if !strings.Contains(v, "2 lines") {
		t.Errorf("the line count is the text's, not the wrapped rows':\n%s", v)
	}
	h.press("w")
	if v := h.plainView(); strings.Contains(v, "END") {
		t.Errorf("w again does not unwrap:\n%s", v)
	}
}
