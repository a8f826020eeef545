package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tmuxSession runs the console in a real terminal (tmux) so the test sees what a person sees.
type tmuxSession struct {
	t    *testing.T
	name string
}

func startConsole(t *testing.T, c *cli, args ...string) *tmuxSession {
	t.Helper()
	return startTerminal(t, c, "exec "+sailtuiLine(c, args...))
}

// sailtuiLine is the shell command line that runs this binary as sailtui on c's state
// directory, with args.
func sailtuiLine(c *cli, args ...string) string {
	var cmdline strings.Builder
	cmdline.WriteString(shellQuote(os.Args[0]) + " --state-dir " + shellQuote(c.state))
	for _, a := range args {
		cmdline.WriteString(" " + shellQuote(a))
	}
	return cmdline.String()
}

// startTerminal runs the shell command line in a real terminal (tmux, 140x40) with the
// sailtui test environment and c's.
func startTerminal(t *testing.T, c *cli, line string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed for the console tests (make deps installs it): %v", err)
	}
	s := &tmuxSession{t: t, name: fmt.Sprintf("sailtui-test-%d", time.Now().UnixNano())}
	env := append([]string{"SAILTUI_TEST_MAIN=1", "NO_COLOR=1", "TERM=xterm-256color", "SAILTUI_DEFAULT_COMMAND=" + selfCommand()}, c.env...)
	var cmdline strings.Builder
	cmdline.WriteString("env")
	for _, e := range env {
		cmdline.WriteString(" " + shellQuote(e))
	}
	cmdline.WriteString(" sh -c " + shellQuote(line))
	// remain-on-exit keeps the pane readable if the console dies, so the failure shows its output.
	out, err := exec.Command("tmux", "new-session", "-d", "-s", s.name, "-x", "140", "-y", "40", cmdline.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	_ = exec.Command("tmux", "set-option", "-t", s.name, "remain-on-exit", "on").Run()
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-session", "-t", s.name).Run() })
	return s
}

func (s *tmuxSession) screen() string {
	out, err := exec.Command("tmux", "capture-pane", "-p", "-t", s.name).CombinedOutput()
	if err != nil {
		s.t.Fatalf("capture-pane: %v: %s", err, out)
	}
	return string(out)
}

// waitFor polls the screen until every want is on it.
func (s *tmuxSession) waitFor(wants ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var scr string
	for time.Now().Before(deadline) {
		scr = s.screen()
		all := true
		for _, w := range wants {
			if !strings.Contains(scr, w) {
				all = false
			}
		}
		if all {
			return scr
		}
		time.Sleep(150 * time.Millisecond)
	}
	s.t.Fatalf("screen never showed %q:\n%s", wants, scr)
	return ""
}

func (s *tmuxSession) keys(keys ...string) {
	if out, err := exec.Command("tmux", append([]string{"send-keys", "-t", s.name}, keys...)...).CombinedOutput(); err != nil {
		s.t.Fatalf("send-keys: %v: %s", err, out)
	}
}

func (s *tmuxSession) exited() bool {
	out, _ := exec.Command("tmux", "display-message", "-p", "-t", s.name, "#{pane_dead}").Output()
	return strings.TrimSpace(string(out)) == "1"
}

// TestConsoleDemo is `make run` in a terminal: the demo projects show with their states, enter
// drills into a project's containers, and q quits.
func TestConsoleDemo(t *testing.T) {
	c := newCLI(t)
	s := startConsole(t, c, "--demo")
	s.waitFor("storefront", "blog", "notes-api", "hibernated", "active", "last hibernation")
	// o sorts by the next column (status: active before hibernated), O reverses it.
	s.keys("o")
	s.waitFor("↑STATUS")
	s.keys("O")
	scr := s.waitFor("↓STATUS")
	if strings.Index(scr, "notes-api") > strings.Index(scr, "storefront") {
		t.Errorf("reversed status sort lists the hibernated notes-api after active storefront:\n%s", scr)
	}
	s.keys("/", "store")
	s.waitFor("store")
	s.keys("Enter", "Enter")
	s.waitFor("frontend", "backend", "running", "UPTIME")
	s.keys("Escape")
	s.waitFor("/store", "HIBERNATES IN")
	s.keys("Escape") // the second esc clears the filter
	s.waitFor("blog", "notes-api")
	s.keys("q")
	deadline := time.Now().Add(10 * time.Second)
	for !s.exited() {
		if time.Now().After(deadline) {
			t.Fatalf("console did not quit on q:\n%s", s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
