// Command sailtui is the operator's console for per-project dev environments, and the headless
// sweeps a Kubernetes CronJob runs. It only wires flags and config to the engine, the backends
// and the UI.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/cmd/sailtui/internal/headless"
	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics"
	"github.com/sailtui/sailtui/engine"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// signalled is closed when a signal has ended the command's context: the interrupt test hook
// (crashHook) waits for it.
var signalled <-chan struct{}

// exitError carries a specific exit code (exec passes the command's own through).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	// A hangup (a closed terminal, a dropped ssh) ends a command as SIGTERM does, through its
	// context: by default it would kill sailtui on the spot, leaving what it holds behind (a
	// terminal exec's session running on, its use of the project recorded).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	signalled = ctx.Done()
	err := newRoot().ExecuteContext(ctx)
	stop()
	if err == nil {
		return
	}
	var ee exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	if errors.Is(err, engine.ErrReadOnly) {
		err = fmt.Errorf("%w; %s", err, readOnlyWhy())
	}
	// An error may quote what a container wrote (a failed start's last log lines) or a stored
	// name: quoted where it could drive the terminal.
	fmt.Fprintln(os.Stderr, "sailtui:", printableLines(plainError(err.Error())))
	os.Exit(exitCodeOf(err))
}

// plainError is an error's text for a person: the sentinels the engine wraps for callers
// (errors.Is) end many messages with words the message already said ("… not found: not
// found") or that only restate the exit status ("…: invalid input" is exit 2).
func plainError(msg string) string {
	for {
		trimmed := msg
		for _, s := range []error{engine.ErrBadInput, engine.ErrNotFound, engine.ErrExists, engine.ErrBadPath, engine.ErrBadState} {
			rest, ok := strings.CutSuffix(trimmed, ": "+s.Error())
			if ok && (s == engine.ErrBadInput || strings.Contains(rest, s.Error())) {
				trimmed = rest
			}
		}
		if trimmed == msg {
			return msg
		}
		msg = trimmed
	}
}

// errUnreachable marks a part named by the configuration that did not answer at start (the
// database): like a bad setting it exits 2, before anything was touched, so a CronJob's
// failure reads "fix the setup", not "a project failed".
var errUnreachable = errors.New("unreachable")

// app carries the config and opens the engine on first use, so --help and flag errors never
// touch the state directory.
type app struct {
	cfg   config
	log   *slog.Logger
	parts *parts
}

func (a *app) engine(ctx context.Context) (*engine.Engine, error) {
	if a.parts != nil {
		return a.parts.eng, nil
	}
	if err := a.cfg.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", err, engine.ErrBadInput)
	}
	p, err := openEngine(ctx, a.cfg, a.log)
	if err != nil {
		return nil, err
	}
	a.parts = p
	return p.eng, nil
}

func (a *app) close() {
	if a.parts != nil {
		a.parts.close()
	}
}

func (a *app) out(cmd *cobra.Command) out {
	return out{w: cmd.OutOrStdout(), json: a.cfg.Output == "json"}
}

// withProgress returns ctx reporting to a progress bar on the terminal, and a func to clear it.
func (a *app) withProgress(ctx context.Context) (context.Context, func()) {
	bar := newProgressBar(a.cfg.Output == "json")
	return engine.WithProgress(ctx, bar.report), bar.done
}

func newRoot() *cobra.Command {
	a := &app{cfg: defaultConfig()}
	envErr := a.cfg.fromEnv()
	var (
		demo        bool
		headlessRun bool
		sweep       string
		sw          sweepFlags
		metricsTo   metrics.Flags
	)
	root := &cobra.Command{
		Use:   "sailtui",
		Short: "Operator's console for fleets of per-project dev environments",
		Long: `sailtui runs and watches per-project dev environments: projects with several containers,
their files, logs and snapshot timelines, idle hibernation and restore.

Without a command it opens the console. With --headless --sweep=... it runs one sweep and exits,
as a Kubernetes CronJob does.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		// --version prints what `sailtui version` prints first.
		Version: version,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if headlessRun {
				a.log = headless.NewLogger(os.Stderr)
			} else {
				a.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			}
			if envErr != nil {
				if headlessRun {
					// A CronJob's log collector reads JSON only; its summary line is there too.
					a.log.Error("bad configuration", "err", envErr.Error())
					headless.Refused(cmd.OutOrStdout(), sweep, envErr, headless.ExitBadConfig)
					return exitError{headless.ExitBadConfig}
				}
				return fmt.Errorf("%w: %w", envErr, engine.ErrBadInput)
			}
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) { a.close() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			if headlessRun {
				return runHeadless(cmd, a, sweep, sw, metricsTo)
			}
			if sweep != "" {
				return fmt.Errorf("--sweep needs --headless (or use: sailtui sweep %s): %w", sweep, engine.ErrBadInput)
			}
			if metricsTo.Set() {
				return fmt.Errorf("--metrics-textfile and --pushgateway need --headless: %w", engine.ErrBadInput)
			}
			return runConsole(cmd, a, demo)
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		hint := fmt.Sprintf("see: %s --help", c.CommandPath())
		if c.Name() == "exec" {
			hint = "put -- between the container and the command: " + hint
		}
		return fmt.Errorf("%w (%s): %w", err, hint, engine.ErrBadInput)
	})
	a.cfg.bindFlags(root.PersistentFlags(), root.Flags())
	root.Flags().BoolVar(&demo, "demo", false, "seed a demo workspace when the state is empty")
	root.Flags().BoolVar(&headlessRun, "headless", false, "run without the console (with --sweep)")
	root.Flags().StringVar(&sweep, "sweep", "", "headless sweep to run: hibernate, purge or all")
	sw.bind(root.Flags())
	metricsTo.Bind(root.Flags())

	root.AddCommand(
		projectsCmd(a), projectCmd(a), containersCmd(a), containerCmd(a), connectCmd(a), disconnectCmd(a),
		logsCmd(a), execCmd(a), filesCmd(a), snapshotCmd(a), sweepCmd(a),
		eventsCmd(a), wakerCmd(a), devserverCmd(), versionCmd(), configCmd(a), manifestsCmd(), doctorCmd(a),
	)
	explainArgs(root)
	return root
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "sailtui", version)
		},
	}
}
