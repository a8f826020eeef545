package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/capped"
)

// The Containers pane's shell, restart and copy-URL actions (k9s s, lazydocker E; restart;
// a URL to paste into a browser).

// whyShell tells why e cannot open a shell in the selected container ("" when it can).
func (c *containersPane) whyShell() string {
	if _, ok := c.selected(); ok && c.env.shell == nil {
		return "this console cannot start sailtui exec (no binary to run)"
	}
	return c.whyRunning()
}

// whyRunning tells why the selected container is not one that runs here now ("" when it is):
// what a shell and a restart need.
func (c *containersPane) whyRunning() string {
	cv, ok := c.selected()
	switch {
	case !ok:
		return "no container selected"
	case cv.Kind == engine.KindExternal:
		return cv.Name + " is an external service: it runs elsewhere"
	case c.proj.Status != engine.StatusActive:
		return fmt.Sprintf("%s is %s", c.proj.Slug, c.proj.Status)
	case cv.Status.State == engine.ContainerStarting:
		return cv.Name + " is starting; wait until it runs"
	case cv.Status.State != engine.ContainerRunning:
		return fmt.Sprintf("%s is %s; s starts it", cv.Name, stateOf(cv))
	}
	return c.env.busyWhy(c.proj)
}

// shell suspends the console and runs `sailtui exec -it` on the selected container; the console
// comes back when the shell ends and says how it ended. sailtui's own complaints (the
// container stopped meanwhile) are caught from its stderr, the shell's output being on the
// terminal, so they reach the status line instead of a screen the console paints over.
func (c *containersPane) shell() tea.Cmd {
	cv, _ := c.selected()
	where := c.proj.Slug + "/" + cv.Name
	cmd := c.env.shell(c.proj.Slug, cv.Name)
	var stderr capped.Buffer
	stderr.Max = 4096
	cmd.Stderr = &stderr
	banner := "sailtui: a shell in " + where + "; exit (or ctrl+d) comes back to the console\r\n"
	return tea.Exec(&bannerCmd{Cmd: cmd, banner: banner}, func(err error) tea.Msg { return shellEnded(where, err, stderr.String()) })
}

// bannerCmd runs an exec.Cmd on the console's terminal (tea.Exec) after a line that says
// what it is and how to come back.
type bannerCmd struct {
	*exec.Cmd
	banner string
}

func (b *bannerCmd) Run() error {
	if b.Stdout != nil {
		_, _ = io.WriteString(b.Stdout, b.banner)
	}
	return b.Cmd.Run()
}

func (b *bannerCmd) SetStdin(r io.Reader) {
	if b.Stdin == nil {
		b.Stdin = r
	}
}

func (b *bannerCmd) SetStdout(w io.Writer) {
	if b.Stdout == nil {
		b.Stdout = w
	}
}

func (b *bannerCmd) SetStderr(w io.Writer) {
	if b.Stderr == nil {
		b.Stderr = w
	}
}

// shellEnded is what the status line says once the shell in where ended with err (nil: exit 0)
// and sailtui wrote complaint to its stderr.
func shellEnded(where string, err error, complaint string) tea.Msg {
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return errMsg{err: fmt.Errorf("shell in %s: %w", where, err)}
	}
	if line := lastLine(complaint); line != "" {
		return errMsg{err: fmt.Errorf("shell in %s: %s", where, strings.TrimPrefix(line, "sailtui: "))}
	}
	return infoMsg{text: fmt.Sprintf("shell in %s ended (exit %d)", where, code)}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func stateOf(cv engine.ContainerView) engine.ContainerState {
	if cv.Status.State == "" {
		return engine.ContainerUnknown
	}
	return cv.Status.State
}

// restart stops the selected container and starts it again, once confirmed: its command runs
// anew (what it held in memory is gone, its files stay).
func (c *containersPane) restart() tea.Cmd {
	cv, _ := c.selected()
	src, p, name := c.env.src, c.proj, cv.Name
	done := containerActedMsg{to: c, name: name}
	run := func() tea.Cmd {
		if c.acting == nil {
			c.acting = map[string]string{}
		}
		c.acting[name] = "restarting…"
		return startOp(opSpec{title: "restart " + p.Slug + "/" + name, projectID: p.ID, run: func(ctx context.Context) opResult {
			if err := src.StopContainer(ctx, p.ID, name); err != nil {
				return opResult{err: err, then: done}
			}
			if _, err := src.StartContainer(ctx, p.ID, name); err != nil {
				return opResult{err: err, then: done}
			}
			return opResult{info: p.Slug + "/" + name + " restarted", then: done}
		}})
	}
	body := []para{
		{text: fmt.Sprintf("%s/%s stops and starts again: its command runs anew.", p.Slug, name)},
		{},
		{text: "Its files stay; what it held in memory (sessions, caches) does not."},
	}
	return msgCmd(openDialogMsg{d: newConfirm(c.env, "Restart "+p.Slug+"/"+name+"?", "Restart", body, c.later(run))})
}

// later runs build when the command runs (a confirmed dialog), in Update, so what it changes
// in the pane is changed there and not by a command's goroutine.
func (c *containersPane) later(build func() tea.Cmd) tea.Cmd {
	return msgCmd(paneRunMsg{to: c, run: build})
}

// paneRunMsg runs a pane's own work in Update once it arrives, while the pane is on screen.
type paneRunMsg struct {
	to  pane
	run func() tea.Cmd
}

func (m paneRunMsg) target() pane     { return m.to }
func (m paneRunMsg) deliver() tea.Cmd { return m.run() }

// shownURL is the URL the row shows for a container: its route, or the loopback address when
// no router serves the route ("" when it has neither).
func shownURL(cv engine.ContainerView) string {
	if (cv.Status.URL == "" || cv.Status.Unrouted) && cv.Status.LocalURL != "" {
		return cv.Status.LocalURL
	}
	return cv.Status.URL
}

func (c *containersPane) whyCopyURL() string {
	cv, ok := c.selected()
	switch {
	case !ok:
		return "no container selected"
	case shownURL(cv) == "":
		return cv.Name + " has no URL"
	}
	return ""
}

// copyURL puts the selected container's URL on the clipboard through the terminal (OSC 52),
// which reaches the operator's machine over ssh too; a terminal that does not take it
// ignores it, so the status line says what was sent.
func (c *containersPane) copyURL() tea.Cmd {
	cv, _ := c.selected()
	u := shownURL(cv)
	return tea.Batch(tea.SetClipboard(u), msgCmd(infoMsg{text: "copied " + u + " (through the terminal: OSC 52)"}))
}
