package main

import (
	"os"
	"os/exec"
	"path/filepath"

	"github.com/adrg/xdg"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sailtui/sailtui/ui"
)

// runConsole opens the interactive console.
func runConsole(cmd *cobra.Command, a *app, demo bool) error {
	ctx := cmd.Context()
	eng, err := a.engine(ctx)
	if err != nil {
		return err
	}
	if demo {
		if err := seedDemo(ctx, eng); err != nil {
			return err
		}
	}
	return ui.Run(ctx, eng, ui.Options{
		Skin: a.cfg.Skin, ReadOnly: a.cfg.ReadOnly, Mode: eng.Mode(), StoreName: eng.StoreName(),
		Shell:   shellCommand(cmd.Root().PersistentFlags()),
		SaveDir: savedLogsDir(),
	})
}

// savedLogsDir is where the console's log saves go: the user's XDG state directory, which
// holds a program's logs and history, not the directory the console was started in (under
// make run, the source tree) nor the state directory (make clean removes the demo's).
func savedLogsDir() string {
	return filepath.Join(xdg.StateHome, "sailtui", "saved-logs")
}

// shellCommand is how the console's e opens a shell: this binary's own `exec -it ... -- sh`,
// with the global flags the console was given (its environment is inherited), so the shell
// reaches the same store and runtime. nil when the binary cannot be found.
func shellCommand(global *pflag.FlagSet) func(project, container string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	var flags []string
	// VisitAll and Changed: the command line was parsed into the merged flag set, which
	// shares these flags but not the set's record of what was given.
	global.VisitAll(func(f *pflag.Flag) {
		if f.Changed && f.Name != "output" {
			flags = append(flags, "--"+f.Name+"="+f.Value.String())
		}
	})
	return func(project, container string) *exec.Cmd {
		args := append(append([]string(nil), flags...), "exec", "-it", project, container, "--", "sh")
		return exec.Command(self, args...)
	}
}
