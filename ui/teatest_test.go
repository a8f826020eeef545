package ui

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/theme"
)

// Smoke runs through a real Bubble Tea program (teatest): renderer, ticks and commands as in
// production. Screens are checked by the View goldens; these check that the pieces run
// together. The output holds escape sequences between changed cells, so they look for words.

func teatestModel(t *testing.T, src *fakeSource) (*teatest.TestModel, *model) {
	t.Helper()
	th, err := theme.New(theme.Dark, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	m := newModel(ctx, src, th, Options{Mode: "local", Location: time.UTC})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30),
		teatest.WithProgramOptions(tea.WithEnvironment([]string{"TERM=xterm-256color", "NO_COLOR=1"})))
	return tm, m
}

func waitOutput(t *testing.T, tm *teatest.TestModel, words ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, w := range words {
			if !bytes.Contains(b, []byte(w)) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(10*time.Second))
}

func TestTeatestRestoreSmoke(t *testing.T) {
	src, _ := timelineFixture()
	tm, _ := teatestModel(t, src)
	waitOutput(t, tm, "storefront", "notes-api")
	tm.Send(keyPress("j"))
	tm.Send(keyPress("t"))
	waitOutput(t, tm, "Timeline", "upgrade")
	tm.Send(keyPress("r"))
	waitOutput(t, tm, "Cancel", "Restore")
	tm.Send(keyPress("y"))
	// The result, and the safety snapshot once the timeline reloaded on its own.
	waitOutput(t, tm, "restored", "safety-001", "[undo]")
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	wantCalls(t, src, "restore p1 manual-20260301-114500-0123456789ab")
}

func TestTeatestLogsSmoke(t *testing.T) {
	src, _ := timelineFixture()
	pr, pw := io.Pipe()
	defer pw.Close()
	src.logs = func(context.Context, string, string, engine.LogOptions) (io.ReadCloser, error) { return pr, nil }
	tm, _ := teatestModel(t, src)
	waitOutput(t, tm, "storefront")
	tm.Send(keyPress("j"))
	tm.Send(keyPress("enter"))
	waitOutput(t, tm, "backend", "frontend")
	tm.Send(keyPress("enter"))
	waitOutput(t, tm, "Logs")
	go func() {
		for i := 0; i < 500; i++ {
			io.WriteString(pw, "hello-from-the-container "+strings.Repeat("=", i%10)+"\n")
		}
		io.WriteString(pw, "the-last-line\n")
	}()
	// The renderer writes only the cells that changed, so a count like "501 lines" may reach the
	// byte stream in pieces; the last line arriving whole is what this smoke test can rely on.
	waitOutput(t, tm, "the-last-line")
	tm.Send(keyPress("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}
