package ui

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// openLogs opens the logs of storefront's backend.
func openLogs(t *testing.T, src *fakeSource) *harness {
	t.Helper()
	h := newHarness(t, src, Options{}, true).start(100, 30)
	h.wait = 300 * time.Millisecond
	h.press("j", "enter", "enter")
	if _, ok := h.m.top().(*logsPane); !ok {
		t.Fatalf("no logs pane:\n%s", h.plainView())
	}
	return h
}

// openLogsInBackground presses enter on a container and runs the stream's commands in the
// background, as the program does; the test pumps the messages.
func openLogsInBackground(h *harness) <-chan tea.Msg {
	h.t.Helper()
	_, cmd := h.m.Update(keyPress("enter"))
	show, ok := cmd().(showMsg)
	if !ok {
		h.t.Fatal("enter did not ask for the logs")
	}
	_, cmd = h.m.Update(show)
	return background(cmd)
}

// openFirstLogs starts a harness over src with short waits and opens the logs of the first
// project's first container, its stream's commands run in the background.
func openFirstLogs(t *testing.T, src *fakeSource) (*harness, <-chan tea.Msg) {
	t.Helper()
	h := newHarness(t, src, Options{}, true).start(100, 30)
	h.wait = 100 * time.Millisecond
	h.press("j", "enter")
	return h, openLogsInBackground(h)
}

// openUntilDone is the log stream r of a source that stays open until ctx (the stream's)
// ends, as a follow of a live container does.
func openUntilDone(ctx context.Context, r *io.PipeReader) (io.ReadCloser, error) {
	go func() { <-ctx.Done(); r.Close() }()
	return r, nil
}

func nLines(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %05d GET /api/items/%d 200", i, i)
	}
	return out
}

func TestLogsShowTheTail(t *testing.T) {
	src, _ := timelineFixture()
	src.logLines = nLines(100)
	h := openLogs(t, src)
	v := h.plainView()
	for _, want := range []string{"Projects › storefront › backend › Logs", "100 lines", "line 00099", "follow on"} {
		if !strings.Contains(v, want) {
			t.Errorf("logs lack %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "line 00000") {
		t.Error("following shows the oldest lines instead of the newest")
	}
	if got := len(strings.Split(h.view(), "\n")); got != 30 {
		t.Errorf("logs view has %d lines", got)
	}
}

func TestLogsCountOneLine(t *testing.T) {
	src, _ := timelineFixture()
	src.logLines = nLines(1)
	h := openLogs(t, src)
	if v := h.plainView(); !strings.Contains(v, "Logs  1 line\n") && !strings.Contains(v, "Logs  1 line ") {
		t.Errorf("one line counted wrong:\n%s", v)
	}
}

// A stream that ends while following says so and reconnects; the reconnect's tail overlaps
// what is already there and is not shown twice.
func TestLogsReconnectWithoutDuplicates(t *testing.T) {
	src, _ := timelineFixture()
	var mu sync.Mutex
	all := nLines(50)
	var tails []int
	src.logs = func(_ context.Context, _, _ string, opts engine.LogOptions) (io.ReadCloser, error) {
		mu.Lock()
		defer mu.Unlock()
		tails = append(tails, opts.Tail)
		from := max(len(all)-opts.Tail, 0)
		return io.NopCloser(strings.NewReader(strings.Join(all[from:], "\n") + "\n")), nil
	}
	h := openLogs(t, src)
	if v := h.plainView(); !strings.Contains(v, "stream ended, reconnecting in 1s") {
		t.Fatalf("an ended stream does not say so:\n%s", v)
	}
	mu.Lock()
	all = append(all, "after the restart 1", "after the restart 2")
	mu.Unlock()
	rc := takeScheduled[logReconnectMsg](h)
	if len(rc) != 1 {
		t.Fatalf("%d reconnects scheduled, want 1", len(rc))
	}
	h.send(rc[0])
	lp := h.m.top().(*logsPane)
	if got := lp.ring.len(); got != 52 {
		t.Errorf("after the reconnect the ring holds %d lines, want 50 + 2 new ones", got)
	}
	if v := h.plainView(); !strings.Contains(v, "after the restart 2") || strings.Contains(v, "may be missing") {
		t.Errorf("reconnect view:\n%s", v)
	}
	mu.Lock()
	if len(tails) != 2 || tails[0] != 1000 || tails[1] != reconnectTail {
		t.Errorf("tails asked %v, want [1000 %d]", tails, reconnectTail)
	}
	mu.Unlock()
	// Failing again backs off further.
	if rc := takeScheduled[logReconnectMsg](h); len(rc) != 1 || lp.retryAt.Sub(t0) != time.Second {
		t.Errorf("second reconnect: %d scheduled, retry after %s", len(rc), lp.retryAt.Sub(t0))
	}
}

func TestLogsReconnectGapIsMarked(t *testing.T) {
	src, _ := timelineFixture()
	first := true
	src.logs = func(context.Context, string, string, engine.LogOptions) (io.ReadCloser, error) {
		text := "old 1\nold 2\nold 3\n"
		if !first {
			text = "new 1\nnew 2\n"
		}
		first = false
		return io.NopCloser(strings.NewReader(text)), nil
	}
	h := openLogs(t, src)
	h.send(takeScheduled[logReconnectMsg](h)[0])
	if v := h.plainView(); !strings.Contains(v, "reconnected; lines written meanwhile may be missing") || !strings.Contains(v, "new 2") {
		t.Errorf("a gap is not marked:\n%s", v)
	}
}

func TestLogsOpenFailureRetries(t *testing.T) {
	src, _ := timelineFixture()
	src.logs = func(context.Context, string, string, engine.LogOptions) (io.ReadCloser, error) {
		return nil, fmt.Errorf("logs storefront/backend: %w", engine.ErrNotFound)
	}
	h := openLogs(t, src)
	if v := h.plainView(); !strings.Contains(v, "✗ stream failed: logs storefront/backend: not found, reconnecting in 1s") {
		t.Errorf("failure not shown:\n%s", v)
	}
	h.send(takeScheduled[logReconnectMsg](h)[0])
	if v := h.plainView(); !strings.Contains(v, "reconnecting in 2s") {
		t.Errorf("no back-off:\n%s", v)
	}
}

// A stream that goes silent is shown as quiet, and reconnected once it is silent too long:
// a dead connection that never closed looks just like a quiet container.
func TestLogsStallReconnects(t *testing.T) {
	src, _ := timelineFixture()
	pr, pw := io.Pipe()
	defer pw.Close()
	calls := 0
	src.logs = func(ctx context.Context, _, _ string, _ engine.LogOptions) (io.ReadCloser, error) {
		calls++
		if calls > 1 {
			return io.NopCloser(strings.NewReader("hello\n")), nil
		}
		return openUntilDone(ctx, pr)
	}
	h, msgs := openFirstLogs(t, src)
	go func() { fmt.Fprintln(pw, "hello") }()
	h.send(next[logBatchMsg](h, msgs)) // opened
	for h.m.top().(*logsPane).ring.len() == 0 {
		h.send(next[logBatchMsg](h, msgs))
	}
	if v := h.plainView(); !strings.Contains(v, "● streaming") {
		t.Fatalf("not streaming:\n%s", v)
	}
	src.setNow(t0.Add(20 * time.Second))
	h.send(refreshTickMsg{})
	if v := h.plainView(); !strings.Contains(v, "◌ quiet 20s") {
		t.Errorf("a quiet stream is not shown as such:\n%s", v)
	}
	src.setNow(t0.Add(stallAfter + time.Second))
	h.send(refreshTickMsg{})
	if calls != 2 {
		t.Errorf("a stalled stream was opened %d times, want a reconnect", calls)
	}
}

func TestLogsBatchedNotPerLine(t *testing.T) {
	src, _ := timelineFixture()
	pr, pw := io.Pipe()
	src.logs = func(context.Context, string, string, engine.LogOptions) (io.ReadCloser, error) { return pr, nil }
	h := newHarness(t, src, Options{}, true).start(100, 30)
	h.press("j", "enter")
	msgs := openLogsInBackground(h)
	const total = 20_000
	go func() {
		for i := 0; i < total; i++ {
			fmt.Fprintf(pw, "line %d\n", i)
		}
		pw.Close()
	}()
	batches := 0
	lp := h.m.top().(*logsPane)
	for lp.state != streamEnded {
		h.send(next[logBatchMsg](h, msgs))
		batches++
	}
	if lp.ring.len() != total {
		t.Errorf("ring holds %d lines, want %d", lp.ring.len(), total)
	}
	if batches > total/100 {
		t.Errorf("%d lines took %d messages; lines should arrive in batches", total, batches)
	}
	t.Logf("%d lines in %d batches", total, batches)
}

func TestLogRingIsBounded(t *testing.T) {
	r := newLogRing(1000)
	for i := 0; i < 5000; i++ {
		r.push(logLine{text: fmt.Sprint(i)})
	}
	if r.len() != 1000 || r.start() != 4000 || r.end() != 5000 {
		t.Fatalf("ring: len %d [%d,%d)", r.len(), r.start(), r.end())
	}
	if r.at(4000).text != "4000" || r.at(4999).text != "4999" {
		t.Errorf("ring order: %q .. %q", r.at(4000).text, r.at(4999).text)
	}
	got := r.lines()
	if len(got) != 1000 || got[0].text != "4000" {
		t.Errorf("lines(): %d, first %q", len(got), got[0].text)
	}
}

func TestLogsToggles(t *testing.T) {
	src, _ := timelineFixture()
	long := "payload " + strings.Repeat("x", 150) + " END"
	src.logLines = append(nLines(60), "ERROR db timeout", long, "\x1b[31mred\x1b[0m\tafter-tab")
	h := openLogs(t, src)
	v := h.plainView()
	if strings.Contains(v, " END") || !strings.Contains(v, "red     after-tab") {
		t.Errorf("unwrapped view should cut the long line and clean escapes/tabs:\n%s", v)
	}
	h.press("w")
	if v := h.plainView(); !strings.Contains(v, "xx END") || !strings.Contains(v, "wrap on") {
		t.Errorf("wrap does not show the end of a long line:\n%s", v)
	}
	h.press("t")
	if v := h.plainView(); !strings.Contains(v, "12:00:00.000 ERROR db timeout") {
		t.Errorf("timestamps not shown:\n%s", v)
	}
	h.press("w", "t")

	// Search: the newest match is brought to the middle, follow stops, n goes older.
	h.press("/")
	h.typeText("line 0001[0-9]")
	h.press("enter")
	lp := h.m.top().(*logsPane)
	if lp.follow {
		t.Error("a search jump left follow on")
	}
	v = h.plainView()
	if !strings.Contains(v, "line 00019") || !strings.Contains(v, "/line 0001[0-9]") {
		t.Errorf("search did not jump to the newest match:\n%s", v)
	}
	h.press("n")
	if v2 := h.plainView(); v2 == v {
		t.Error("n did not move to an older match")
	}
	h.press("G")
	if !lp.follow || !strings.Contains(h.plainView(), "after-tab") {
		t.Error("G did not resume following")
	}
	// Scrolling up stops following, so new lines do not pull the view away.
	h.press("k")
	if lp.follow {
		t.Error("scrolling up kept follow on")
	}
	h.press("f")
	if !lp.follow {
		t.Error("f did not resume following")
	}
}

func TestLogsSearchHighlightsInColour(t *testing.T) {
	src, _ := timelineFixture()
	src.logLines = []string{"alpha", "needle in a haystack", "omega"}
	h := newHarness(t, src, Options{}, false).start(100, 30)
	h.wait = 300 * time.Millisecond
	h.press("j", "enter", "enter", "/")
	h.typeText("needle")
	h.press("enter")
	lp := h.m.top().(*logsPane)
	row := lp.highlight("needle in a haystack")
	if want := h.m.env.theme.Match.Render("needle"); !strings.Contains(row, want) {
		t.Errorf("match not highlighted: %q", row)
	}
}

func TestLogsSaveToFile(t *testing.T) {
	src, _ := timelineFixture()
	src.logLines = nLines(5)
	h := openLogs(t, src)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.log")
	h.press("s")
	if v := h.plainView(); !strings.Contains(v, "Save log") || !strings.Contains(v, "storefront-backend-20260301-120000.log") {
		t.Fatalf("save prompt:\n%s", v)
	}
	lp := h.m.top().(*logsPane)
	d := h.m.dialog.(*promptDialog)
	d.input.SetValue(path)
	h.press("enter")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(nLines(5), "\n") + "\n"; string(got) != want {
		t.Errorf("saved %q, want %q", got, want)
	}
	if v := h.plainView(); !strings.Contains(v, "saved 5 lines to "+path) {
		t.Errorf("save not reported:\n%s", v)
	}
	// An existing file is not overwritten.
	h.press("s")
	h.m.dialog.(*promptDialog).input.SetValue(path)
	h.press("enter")
	if v := h.plainView(); !strings.Contains(v, "file exists") {
		t.Errorf("overwrite not refused:\n%s", v)
	}
	_ = lp
}

func TestLogsTailSizeCycles(t *testing.T) {
	src, _ := timelineFixture()
	var tails []int
	src.logs = func(_ context.Context, _, _ string, opts engine.LogOptions) (io.ReadCloser, error) {
		tails = append(tails, opts.Tail)
		return io.NopCloser(strings.NewReader("x\n")), nil
	}
	h := openLogs(t, src)
	h.press("T")
	if v := h.plainView(); !strings.Contains(v, "tail 10000") {
		t.Errorf("tail size not shown:\n%s", v)
	}
	if len(tails) != 2 || tails[1] != 10_000 {
		t.Errorf("tails asked %v", tails)
	}
}

func TestLogsClosedOnLeave(t *testing.T) {
	src, _ := timelineFixture()
	pr, pw := io.Pipe()
	defer pw.Close()
	var ctxDone <-chan struct{}
	src.logs = func(ctx context.Context, _, _ string, _ engine.LogOptions) (io.ReadCloser, error) {
		ctxDone = ctx.Done()
		return pr, nil
	}
	h := openLogs(t, src)
	h.press("esc")
	select {
	case <-ctxDone:
	case <-time.After(5 * time.Second):
		t.Fatal("leaving the logs did not stop the stream")
	}
}

func TestCleanLogLine(t *testing.T) {
	cases := map[string]string{
		"plain":                     "plain",
		"crlf\r":                    "crlf",
		"\x1b[1;31mbold red\x1b[0m": "bold red",
		"a\tb":                      "a       b",
		"bell\x07":                  "bell ",
		"bad \xff utf8":             "bad � utf8",
	}
	for in, want := range cases {
		if got := cleanLogLine([]byte(in)); got != want {
			t.Errorf("cleanLogLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadLogCutsHugeLines(t *testing.T) {
	src := newFakeSource(nil)
	huge := strings.Repeat("y", 3*maxLogLine)
	src.logs = func(context.Context, string, string, engine.LogOptions) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader("a\n" + huge + "\nb\n" + huge)), nil
	}
	feed := newLogFeed(100)
	readLog(t.Context(), src, "p", "c", engine.LogOptions{}, feed)
	m := feed.take(nil, 0)
	if len(m.lines) != 4 || m.lines[0] != "a" || m.lines[2] != "b" {
		t.Fatalf("lines: %d %q", len(m.lines), m.lines[0])
	}
	for _, i := range []int{1, 3} {
		if n := len(m.lines[i]); n > maxLogLine+8 {
			t.Errorf("line %d kept %d bytes", i, n)
		}
	}
	if !m.ended || m.err != nil {
		t.Errorf("end: %v %v", m.ended, m.err)
	}
}
