package ui

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// containersOf opens storefront's containers (backend selected) in a console with opts.
func containersOf(t *testing.T, opts Options) (*harness, *fakeSource, *containersPane) {
	t.Helper()
	h, src := projectsHarness(t, opts)
	h.press("j", "enter")
	c, ok := h.m.top().(*containersPane)
	if !ok {
		t.Fatalf("no containers pane:\n%s", h.plainView())
	}
	return h, src, c
}

// echoShell is an Options.Shell that records what it was asked for.
func echoShell(asked *[]string) func(project, container string) *exec.Cmd {
	return func(project, container string) *exec.Cmd {
		*asked = append(*asked, project+"/"+container)
		return exec.Command("true")
	}
}

func TestContainerShellKey(t *testing.T) {
	var asked []string
	h, src, c := containersOf(t, Options{Shell: echoShell(&asked)})
	if v := h.plainView(); !strings.Contains(v, "e shell") {
		t.Errorf("help for a running container lacks e shell:\n%s", v)
	}
	// e suspends the console for the command Shell gives (the program runs it on the terminal).
	_, cmd := h.m.Update(keyPress("e"))
	if cmd == nil {
		t.Fatalf("e gave no command:\n%s", h.plainView())
	}
	if msg := cmd(); fmt.Sprintf("%T", msg) != "tea.execMsg" {
		t.Fatalf("e gave %T, want the program's exec of the shell", msg)
	}
	if len(asked) != 1 || asked[0] != "storefront/backend" {
		t.Fatalf("shell asked for %q, want storefront/backend", asked)
	}
	wantCalls(t, src) // the shell is sailtui exec's business, not the console's

	// A stopped container has no shell: e says how to start it.
	src.mu.Lock()
	src.containers["p1"][0].Status.State = engine.ContainerStopped
	src.mu.Unlock()
	h.run(c.load())
	h.press("e")
	if v := h.plainView(); !strings.Contains(v, "shell: backend is stopped; s starts it") || strings.Contains(v, "e shell") {
		t.Errorf("e on a stopped container:\n%s", v)
	}
	if len(asked) != 1 {
		t.Errorf("a shell was asked for a stopped container: %q", asked)
	}
}

func TestContainerShellNeedsACommand(t *testing.T) {
	h, _, _ := containersOf(t, Options{})
	h.press("e")
	if v := h.plainView(); !strings.Contains(v, "shell: this console cannot start sailtui exec") {
		t.Errorf("e without a shell command:\n%s", v)
	}
}

// How the shell ended is what the status line says: its exit code, or what sailtui exec
// complained of (on its stderr, as the terminal is the shell's).
func TestShellEnded(t *testing.T) {
	run := func(script string) error { return exec.Command("sh", "-c", script).Run() }
	for _, tc := range []struct {
		err       error
		complaint string
		want      string
		isErr     bool
	}{
		{nil, "", "shell in shop/web ended (exit 0)", false},
		{run("exit 5"), "", "shell in shop/web ended (exit 5)", false},
		{run("exit 1"), "slog noise\nsailtui: exec in shop/web: container web is not running; start it first\n",
			"shell in shop/web: exec in shop/web: container web is not running; start it first", true},
		{exec.Command("/no/such/sailtui").Run(), "", "shell in shop/web: ", true},
	} {
		msg := shellEnded("shop/web", tc.err, tc.complaint)
		switch m := msg.(type) {
		case infoMsg:
			if tc.isErr || m.text != tc.want {
				t.Errorf("shellEnded(%v, %q) = info %q, want %q (error %v)", tc.err, tc.complaint, m.text, tc.want, tc.isErr)
			}
		case errMsg:
			if !tc.isErr || !strings.HasPrefix(m.err.Error(), tc.want) {
				t.Errorf("shellEnded(%v, %q) = error %q, want %q (error %v)", tc.err, tc.complaint, m.err, tc.want, tc.isErr)
			}
		default:
			t.Errorf("shellEnded gave %T", msg)
		}
	}
}

func TestContainerRestart(t *testing.T) {
	h, src, _ := containersOf(t, Options{})
	h.press("R")
	if v := h.plainView(); !strings.Contains(v, "Restart storefront/backend?") || !strings.Contains(v, "Its files stay") {
		t.Fatalf("R gave no confirmation:\n%s", v)
	}
	h.press("enter") // Cancel is focused
	wantCalls(t, src)
	h.press("R", "y")
	wantCalls(t, src, "stop p1/backend", "start p1/backend")
	if v := h.plainView(); !strings.Contains(v, "storefront/backend restarted") || !strings.Contains(h.selectedLine(), "running") {
		t.Errorf("restart not reported, or the row not read again:\n%s", v)
	}
	// A failed stop is said, and nothing is started after it.
	src.opErr = fmt.Errorf("runtime says no")
	h.press("R", "y")
	wantCalls(t, src, "stop p1/backend", "start p1/backend", "stop p1/backend")
	if v := h.plainView(); !strings.Contains(v, "runtime says no") {
		t.Errorf("failed restart not reported:\n%s", v)
	}
}

func TestContainerCopyURL(t *testing.T) {
	h, _, c := containersOf(t, Options{})
	h.press("j") // frontend
	cmd := c.copyURL()
	batch, ok := cmd().(tea.BatchMsg)
	if !ok {
		t.Fatalf("copy gave %T, want a batch", cmd())
	}
	var sent, said string
	for _, sub := range batch {
		switch m := sub().(type) {
		case infoMsg:
			said = m.text
		default:
			// tea.SetClipboard's message: the program writes it as OSC 52.
			if fmt.Sprintf("%T", m) == "tea.setClipboardMsg" {
				sent = fmt.Sprint(m)
			}
		}
	}
	if sent != "http://storefront-frontend.localhost" || !strings.Contains(said, "copied http://storefront-frontend.localhost") {
		t.Errorf("copy sent %q to the clipboard and said %q", sent, said)
	}
	// The loopback address when no router serves the route: what the row shows.
	cv := engine.ContainerView{Status: engine.ContainerStatus{URL: "http://x.localhost", Unrouted: true, LocalURL: "http://127.0.0.1:41002/"}}
	if got := shownURL(cv); got != "http://127.0.0.1:41002/" {
		t.Errorf("shownURL of an unrouted container = %q", got)
	}
	h.press("y")
	if v := h.plainView(); !strings.Contains(v, "copied http://storefront-frontend.localhost") {
		t.Errorf("y did not say what it copied:\n%s", v)
	}
}

// Read-only mode blocks the shell and the restart with the usual message; copying a URL
// changes nothing and stays.
func TestContainerKeysReadOnly(t *testing.T) {
	var asked []string
	h, src, c := containersOf(t, Options{ReadOnly: true, Shell: echoShell(&asked)})
	for _, k := range []string{"e", "R"} {
		if c.actions.has(k) {
			t.Errorf("read-only containers pane registered %q", k)
		}
		h.press(k)
		if v := h.plainView(); !strings.Contains(v, "the console is read-only") || h.m.dialog != nil {
			t.Errorf("%s in read-only mode:\n%s", k, v)
		}
	}
	if !c.actions.has("y") {
		t.Error("read-only mode dropped copy URL, which changes nothing")
	}
	if len(asked) != 0 {
		t.Errorf("read-only mode asked for a shell: %q", asked)
	}
	wantCalls(t, src)
}
