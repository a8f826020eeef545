package ui

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
)

// go test ./ui -run Golden -update rewrites the golden screens. teatest's golden package
// registers the same flag when it is linked in; one flag then serves both.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden screens in testdata/golden/ui")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// goldenDir is the repository's testdata/golden/ui (tests run in the package directory).
var goldenDir = filepath.Join("..", "testdata", "golden", "ui")

// goldenSizes are the screens every pane and dialog is checked at: the smallest the console
// supports, and a roomy one.
var goldenSizes = [][2]int{{80, 24}, {120, 40}}

// screenText is the view as a person reads it: no escape sequences (NO_COLOR writes none; the
// strip is a second guard) and no trailing blanks, which diff tools hide.
func screenText(view string) string {
	lines := strings.Split(ansi.Strip(view), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name+".golden")
	if updating() {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ui -run Golden -update to create it)", err)
	}
	if string(want) == got {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Errorf("%s differs from line %d:\nwant %q\ngot  %q\n\nwhole screen:\n%s", path, i+1, w, g, got)
			return
		}
	}
}

// goldenFleet is the timeline fixture plus a few more projects in other states.
func goldenFleet() *fakeSource {
	src, _ := timelineFixture()
	more := []engine.Project{
		{ID: "p3", Slug: "blog", Name: "Blog", Owner: "demo", Status: engine.StatusActive,
			LastActivity: t0.Add(-42 * time.Minute), UpdatedAt: t0.Add(-time.Hour)},
		{ID: "p4", Slug: "crm-sync", Name: "CRM sync", Owner: "ops", Status: engine.StatusFailed,
			StatusReason: "start: exit 1", LastActivity: t0.Add(-5 * time.Hour), UpdatedAt: t0.Add(-time.Hour)},
		{ID: "p5", Slug: "landing", Name: "landing", Owner: "alice", Status: engine.StatusRestoring,
			OpID: "op-1", OpKind: "wake", LastActivity: t0.Add(-time.Minute), UpdatedAt: t0.Add(-time.Hour)},
	}
	src.projects = append(src.projects, more...)
	src.containers["p3"] = []engine.ContainerView{
		{Container: engine.Container{Name: "app", Directory: ".", Port: 3000}, Status: engine.ContainerStatus{State: engine.ContainerStopped}},
	}
	return src
}

// screen is one golden screen: how to get there from a fresh console.
type screen struct {
	name string
	opts Options
	// setup prepares the source; drive presses keys (and may return a cleanup).
	setup func(src *fakeSource)
	drive func(t *testing.T, h *harness) func()
}

func press(keys ...string) func(*testing.T, *harness) func() {
	return func(_ *testing.T, h *harness) func() {
		h.press(keys...)
		return nil
	}
}

// toStorefront moves the cursor to storefront, the last of the fleet by slug.
var toStorefront = []string{"G"}

// storefront selects storefront and then presses keys.
func storefront(keys ...string) func(*testing.T, *harness) func() {
	return press(append(toStorefront, keys...)...)
}

var goldenScreens = []screen{
	{name: "projects", drive: press()},
	{name: "projects_filter", drive: func(_ *testing.T, h *harness) func() {
		h.press("/")
		h.typeText("!api")
		return nil
	}},
	{name: "projects_readonly", opts: Options{ReadOnly: true, Mode: "kubernetes", StoreName: "postgres db.internal/sailtui"}, drive: storefront()},
	{name: "help", drive: storefront("?")},
	{name: "help_last_error", setup: func(src *fakeSource) {
		src.opErr = fmt.Errorf("hibernate storefront: snapshot hibernation-20260301-120000-0123456789ab: verify: read back 2.5 MiB, sha256 3f2a… does not match the recorded e91c…: %w", engine.ErrChecksum)
	}, drive: storefront("h", "y", "?")},
	{name: "containers", drive: storefront("enter")},
	{name: "describe", drive: storefront("d")},
	{name: "stop_confirm", drive: storefront("s")},
	{name: "hibernate_confirm", drive: storefront("h")},
	{name: "timeline", drive: storefront("t")},
	{name: "timeline_create", drive: func(_ *testing.T, h *harness) func() {
		h.press("G", "t", "c")
		h.typeText("before the migration")
		return nil
	}},
	{name: "timeline_restore", drive: storefront("t", "r")},
	{name: "timeline_restored", drive: func(_ *testing.T, h *harness) func() {
		h.press("G", "t", "r", "y")
		h.flushReload()
		return nil
	}},
	{name: "timeline_relabel", drive: storefront("t", "l")},
	{name: "timeline_delete", drive: storefront("t", "x")},
	{name: "timeline_full", setup: func(src *fakeSource) { fillTimeline(src, "p1") }, drive: func(_ *testing.T, h *harness) func() {
		h.press("G", "t", "c")
		h.typeText("fresh")
		h.press("enter")
		return nil
	}},
	{name: "timeline_readonly", opts: Options{ReadOnly: true}, drive: storefront("t")},
	{name: "progress", drive: driveProgress},
	{name: "error", setup: func(src *fakeSource) {
		src.opErr = fmt.Errorf("restore storefront: snapshot manual-20260301-114500-0123456789ab: checksum mismatch: %w", engine.ErrChecksum)
	}, drive: storefront("t", "r", "y")},
	{name: "logs", drive: driveLogs(false)},
	{name: "logs_search", drive: driveLogs(true)},
	{name: "command", drive: func(_ *testing.T, h *harness) func() {
		h.press(":")
		h.typeText("ti")
		return nil
	}},
	{name: "sweep", drive: press(":", "s", "w", "e", "e", "p", "enter")},
}

// driveProgress leaves a restore running with a progress report on screen.
func driveProgress(t *testing.T, h *harness) func() {
	h.src.gate = make(chan struct{})
	h.src.progress = []engine.Progress{{Phase: "extract", Done: 5 << 20, Total: 8 << 20}}
	h.wait = 50 * time.Millisecond
	h.press("G", "t", "r")
	_, cmd := h.m.Update(keyPress("y"))
	_, cmd = h.m.Update(cmd())
	msgs := background(cmd)
	h.send(next[opProgressMsg](h, msgs))
	return func() {
		close(h.src.gate)
		for range msgs {
		}
	}
}

// driveLogs opens a live stream of 300 lines (the stream stays open: streaming).
func driveLogs(search bool) func(*testing.T, *harness) func() {
	return func(t *testing.T, h *harness) func() {
		pr, pw := io.Pipe()
		h.src.logs = func(context.Context, string, string, engine.LogOptions) (io.ReadCloser, error) { return pr, nil }
		h.wait = 50 * time.Millisecond
		h.press("G", "enter")
		msgs := openLogsInBackground(h)
		go func() {
			for i := 0; i < 300; i++ {
				level := "INFO"
				if i%37 == 0 {
					level = "ERROR"
				}
				fmt.Fprintf(pw, "%s request id=%04d path=/api/cart/%d status=200 took=%dms user-agent=Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0\n", level, i, i%17, i%90)
			}
		}()
		lp := h.m.top().(*logsPane)
		for lp.ring.len() < 300 {
			h.send(next[logBatchMsg](h, msgs))
		}
		if search {
			h.press("t", "w", "/")
			h.typeText("error")
			h.press("enter")
		}
		return func() {
			pw.Close()
			for range msgs {
			}
		}
	}
}

func TestGolden(t *testing.T) {
	for _, sc := range goldenScreens {
		for _, size := range goldenSizes {
			name := fmt.Sprintf("%s_%dx%d", sc.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				src := goldenFleet()
				if sc.setup != nil {
					sc.setup(src)
				}
				h := newHarness(t, src, sc.opts, true).start(size[0], size[1])
				// The live badge is part of the header; pretend the notifier answered.
				h.m.header.events = eventsLive
				if done := sc.drive(t, h); done != nil {
					defer done()
				}
				v := h.view()
				if strings.Contains(v, "\x1b") {
					t.Errorf("escape sequences under NO_COLOR: %q", v)
				}
				if got := len(strings.Split(v, "\n")); got != size[1] {
					t.Errorf("%d lines, want %d", got, size[1])
				}
				for i, l := range strings.Split(v, "\n") {
					if w := ansi.StringWidth(l); w != size[0] {
						t.Errorf("line %d is %d wide, want %d", i, w, size[0])
					}
				}
				checkGolden(t, name, screenText(v))
			})
		}
	}
}

func TestGoldenTooSmall(t *testing.T) {
	h := newHarness(t, goldenFleet(), Options{}, true).start(60, 20)
	checkGolden(t, "too_small_60x20", screenText(h.view()))
}

// The dark skin is checked for escapes only (goldens hold NO_COLOR text): every screen must
// still be exactly the terminal's size once styled.
func TestStyledScreensKeepTheirSize(t *testing.T) {
	for _, sc := range goldenScreens {
		t.Run(sc.name, func(t *testing.T) {
			src := goldenFleet()
			if sc.setup != nil {
				sc.setup(src)
			}
			h := newHarness(t, src, sc.opts, false).start(120, 40)
			if done := sc.drive(t, h); done != nil {
				defer done()
			}
			lines := strings.Split(h.view(), "\n")
			if len(lines) != 40 {
				t.Errorf("%d lines", len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w != 120 {
					t.Errorf("line %d is %d wide: %q", i, w, ansi.Strip(l))
				}
			}
		})
	}
}
