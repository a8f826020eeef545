package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sailtui/sailtui/engine"
)

// execOnTerminal runs req in a container on a terminal of its own (exec -t, -it): this
// terminal's size is the remote one's and follows it (SIGWINCH); with -i what is typed goes to
// the command unprocessed (raw mode), so ctrl+c, ctrl+d and the arrows reach the shell there.
// The terminal's mode is restored on every way out.
func execOnTerminal(cmd *cobra.Command, eng *engine.Engine, slug, name string, req engine.ExecRequest, interactive bool) (engine.ExecResult, error) {
	in, ok := cmd.InOrStdin().(*os.File)
	if !ok || !isTerminal(in) {
		return engine.ExecResult{}, fmt.Errorf("exec -t: the input is not a terminal (a pipe or a file); run it from a terminal, or drop -t (piped input is passed without it): %w", engine.ErrBadInput)
	}
	fd := int(in.Fd())
	t := engine.Terminal{Out: cmd.OutOrStdout(), Size: termSize(fd)}
	if interactive {
		state, err := term.MakeRaw(fd)
		if err != nil {
			return engine.ExecResult{}, fmt.Errorf("exec -it: put the terminal in raw mode: %w", err)
		}
		defer func() { _ = term.Restore(fd, state) }()
		t.In = in
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	resize := make(chan engine.TermSize, 1)
	t.Resize = resize
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				sz := termSize(fd)
				select {
				case resize <- sz:
				case <-done:
					return
				}
			}
		}
	}()
	return eng.ExecTerminal(cmd.Context(), slug, name, req, t)
}

// termSize is the size of the terminal on fd, or the default when it cannot be told.
func termSize(fd int) engine.TermSize {
	w, h, err := term.GetSize(fd)
	if err != nil || w <= 0 || h <= 0 || w > 0xffff || h > 0xffff {
		return engine.DefaultTermSize
	}
	return engine.TermSize{Cols: uint16(w), Rows: uint16(h)}
}
