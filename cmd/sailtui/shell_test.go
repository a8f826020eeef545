package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// shellProject is a local project shop with one running container web that notes each start
// in starts.txt.
func shellProject(t *testing.T) *cli {
	t.Helper()
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.ok("container", "add", "shop", "web", "--dir", ".", "--command", "echo started >> starts.txt; "+selfCommand())
	c.ok("project", "start", "shop")
	return c
}

func (s *tmuxSession) resize(w, h string) {
	s.t.Helper()
	if out, err := exec.Command("tmux", "resize-window", "-t", s.name, "-x", w, "-y", h).CombinedOutput(); err != nil {
		s.t.Fatalf("resize-window: %v: %s", err, out)
	}
}

// sizeAfterResize resizes the window and asks the remote terminal its size until it reads
// "h w": a resize reaches a docker or kubernetes terminal through an API call after the
// SIGWINCH, so a command typed at once may still see the old size, as with docker exec -it.
func (s *tmuxSession) sizeAfterResize(w, h string) {
	s.t.Helper()
	s.resize(w, h)
	want := h + " " + w
	for range 20 {
		s.keys("stty size", "Enter")
		time.Sleep(250 * time.Millisecond)
		if strings.Contains(s.screen(), want) {
			return
		}
	}
	s.waitFor(want)
}

// sailtui exec -it gives the command a terminal of this window's size that follows it, passes
// what is typed, exits with the command's exit code and leaves the terminal as it found it.
func TestCLIExecTerminal(t *testing.T) {
	c := shellProject(t)
	// After sailtui: its status, and whether the terminal is back in canonical mode.
	s := startTerminal(t, c, sailtuiLine(c, "exec", "-it", "shop", "web", "--", "sh")+
		`; echo "sailtui-exit=$?"; stty -a | grep -o -- '-\?icanon'; sleep 600`)
	s.keys(`stty size; test -t 0 && echo "tty-$((6*7))"`, "Enter")
	s.waitFor("40 140", "tty-42")
	s.resize("100", "30")
	s.keys("stty size", "Enter")
	s.waitFor("30 100")
	// Raw mode: ctrl+c interrupts the command in the container, not sailtui.
	s.keys("sleep 30", "Enter")
	time.Sleep(300 * time.Millisecond)
	s.keys("C-c")
	s.keys(`echo "after-$((6*7))"`, "Enter")
	s.waitFor("after-42")
	s.keys(`echo $((6*7)); exit 5`, "Enter")
	scr := s.waitFor("sailtui-exit=5", "icanon")
	if strings.Contains(scr, "-icanon") {
		t.Errorf("the terminal was left in raw mode:\n%s", scr)
	}
	if !strings.Contains(scr, "\n42") {
		t.Errorf("the command's output is not on the terminal:\n%s", scr)
	}
}

// exec -t refuses what cannot have a terminal, saying what to do instead.
func TestCLIExecTerminalRefusals(t *testing.T) {
	c := shellProject(t)
	for _, rf := range []refusal{
		{"piped input", nil, []string{"exec", "-it", "shop", "web", "--", "sh"}, 2, []string{"exec -t: the input is not a terminal", "drop -t"}},
		{"json", nil, []string{"exec", "-t", "-o", "json", "shop", "web", "--", "true"}, 2, []string{"a terminal's output cannot be JSON"}},
	} {
		t.Run(rf.name, func(t *testing.T) { rf.check(t, c.runIn(strings.NewReader("echo hi\n"), rf.env, rf.args...)) })
	}
}

// e in the Containers pane suspends the console for a shell in the container and brings it back
// when the shell ends; R restarts the container after a confirmation; y copies its URL.
func TestConsoleShellRestartCopy(t *testing.T) {
	c := shellProject(t)
	url := c.containers("shop")["web"].URL
	if url == "" {
		t.Fatalf("web has no URL: %+v", c.containers("shop"))
	}
	s := startConsole(t, c)
	s.waitFor("shop")
	s.keys("Enter")
	s.waitFor("web", "running", "e shell")
	s.keys("e")
	s.waitFor("a shell in shop/web")
	s.keys(`echo "in-shell-$((6*7))"; cat starts.txt`, "Enter")
	s.waitFor("in-shell-42", "started")
	s.keys("exit 3", "Enter")
	s.waitFor("shell in shop/web ended (exit 3)", "NAME", "SOURCE")

	// OSC 52 sets tmux's buffer when tmux takes it from applications.
	if out, err := exec.Command("tmux", "set-option", "-s", "set-clipboard", "on").CombinedOutput(); err != nil {
		t.Fatalf("set-clipboard: %v: %s", err, out)
	}
	s.keys("y")
	s.waitFor("copied " + url)
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("tmux", "show-buffer").Output()
		if got = string(out); got == url {
			break
		}
	}
	if got != url {
		t.Errorf("the clipboard (tmux's buffer) holds %q, want %q", got, url)
	}

	s.keys("R")
	s.waitFor("Restart shop/web?", "[ Cancel ]")
	s.keys("y")
	s.waitFor("shop/web restarted")
	if starts := c.ok("files", "get", "shop", "starts.txt"); starts != "started\nstarted\n" {
		t.Errorf("after R, web started %q, want twice", starts)
	}
	if st := c.containers("shop")["web"].Status; st != "running" {
		t.Errorf("after R, web is %s", st)
	}
	s.keys("q")
}

// A read-only console says why e and R do nothing.
func TestConsoleShellReadOnly(t *testing.T) {
	c := shellProject(t)
	s := startConsole(t, c, "--readonly")
	s.waitFor("shop")
	s.keys("Enter")
	s.waitFor("web", "running")
	s.keys("e")
	s.waitFor("shell: the console is read-only")
	s.keys("R")
	s.waitFor("restart: the console is read-only")
	s.keys("q")
}

// In docker mode, exec -it and the console's e reach a shell in the container itself: its
// own user and directory, the terminal sized and resized.
func TestDockerExecTerminal(t *testing.T) {
	t.Parallel()
	slug := "tty-" + randSuffix(t)
	c, _ := dockerCLI(t, slug)
	c.ok("project", "create", slug, "--from", writeDockerSource(t), "--owner", "tester")
	c.ok("project", "start", slug)
	s := startTerminal(t, c, sailtuiLine(c, "exec", "-it", slug, "web", "--", "sh")+`; echo "sailtui-exit=$?"; sleep 600`)
	// As a person would: type at the prompt. This engine's API (1.41) takes the terminal's size
	// only once the exec runs, so a command typed ahead reads 0x0, as with docker exec -it.
	s.waitFor("/app/web $")
	s.keys(`stty size; echo "$(id -u)-$(pwd)-$((6*7))"`, "Enter")
	s.waitFor("40 140", "1000-/app/web-42")
	s.sizeAfterResize("100", "30")
	s.keys("exit 5", "Enter")
	s.waitFor("sailtui-exit=5")

	con := startConsole(t, c)
	con.waitFor(slug)
	con.keys("/", slug, "Enter", "Enter")
	con.waitFor("web", "running", "e shell")
	con.keys("j") // web, after app
	con.keys("e")
	con.waitFor("a shell in " + slug + "/web")
	con.keys(`echo "in-docker-$((6*7))"`, "Enter")
	con.waitFor("in-docker-42")
	con.keys("exit", "Enter")
	con.waitFor("shell in "+slug+"/web ended (exit 0)", "NAME")
	con.keys("q")
}

// In kubernetes mode exec -it is a shell in the container's dev pod on the real node: the
// kubelet's terminal, sized and resized, the exit code passed through.
func TestKubernetesNodeExecTerminal(t *testing.T) {
	t.Parallel()
	c, _ := nodeCLI(t, "")
	slug := "tty-" + randSuffix(t)
	c.ok("project", "create", slug)
	c.ok("container", "add", slug, "web", "--dir", "web", "--mkdir", "--port", "8080", "--command", `exec sailtui devserver --port "$PORT"`)
	c.ok("project", "start", slug)
	waitState(t, c, slug, "web", "running")
	s := startTerminal(t, c, sailtuiLine(c, "exec", "-it", slug, "web", "--", "sh")+`; echo "sailtui-exit=$?"; sleep 600`)
	s.keys(`stty size; test -t 0 && echo "pod-tty-$((6*7))"`, "Enter")
	s.waitFor("40 140", "pod-tty-42")
	s.sizeAfterResize("100", "30")
	s.keys("exit 5", "Enter")
	s.waitFor("sailtui-exit=5")
}
