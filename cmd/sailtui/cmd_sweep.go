package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sailtui/sailtui/cmd/sailtui/internal/headless"
	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics"
	"github.com/sailtui/sailtui/engine"
)

type sweepFlags struct {
	dryRun      bool
	idle        time.Duration
	stopIdle    time.Duration
	asOf        string
	concurrency int
	deadline    time.Duration
	// yes confirms a sweep that judges as of a time in the future (see options).
	yes bool
	// idleSet: --idle was given (an explicit 0 is an error, not "the default").
	idleSet bool
}

func (s *sweepFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&s.dryRun, "dry-run", false, "report what the sweep would do and change nothing")
	fs.DurationVar(&s.idle, "idle", 0, "idle timeout for this sweep (default K8S_HIBERNATION_IDLE_MINUTES or 30m)")
	fs.DurationVar(&s.stopIdle, "stop-idle", 0, "first idle tier: stop the containers of projects idle this long, keep their files (default SAILTUI_STOP_IDLE_MINUTES; off)")
	fs.StringVar(&s.asOf, "as-of", "", "judge idleness and expiry as of this RFC3339 time")
	fs.IntVar(&s.concurrency, "concurrency", 0, "projects hibernated at once (default SAILTUI_SWEEP_CONCURRENCY or 16)")
	fs.DurationVar(&s.deadline, "deadline", 0, "stop taking new projects after this long; in-flight ones finish (0: none)")
	fs.BoolVarP(&s.yes, "yes", "y", false, "confirm a sweep --as-of a time in the future without --dry-run")
}

// options are the engine's options of the flags, judged at now. A future --as-of makes every
// project touched until then idle and every snapshot deleted until then expired: outside
// --dry-run that hibernates projects in use and purges snapshots deleted seconds ago, so it is
// a destructive action like the others and wants --yes (a CronJob never passes --as-of).
func (s sweepFlags) options(now time.Time) (engine.SweepOptions, error) {
	o := engine.SweepOptions{DryRun: s.dryRun, Idle: s.idle, StopIdle: s.stopIdle, Concurrency: s.concurrency}
	if s.idle < 0 || (s.idleSet && s.idle == 0) {
		return o, fmt.Errorf("--idle %s: the idle timeout must be positive, such as 30m: %w", s.idle, engine.ErrBadInput)
	}
	if s.stopIdle < 0 {
		return o, fmt.Errorf("--stop-idle %s: must be positive (0 turns the first idle tier off): %w", s.stopIdle, engine.ErrBadInput)
	}
	if s.concurrency < 0 || s.deadline < 0 {
		return o, fmt.Errorf("--concurrency and --deadline must not be negative: %w", engine.ErrBadInput)
	}
	if s.asOf != "" {
		t, err := time.Parse(time.RFC3339, s.asOf)
		if err != nil {
			return o, fmt.Errorf("--as-of %q: want RFC3339 such as 2026-11-29T22:00:00Z: %w", s.asOf, engine.ErrBadInput)
		}
		o.AsOf = t.UTC()
		if o.AsOf.After(now) && !s.dryRun && !s.yes {
			return o, fmt.Errorf("--as-of %s is in the future (it is %s now): the sweep would hibernate projects in use and purge snapshots deleted moments ago; add --dry-run to see what it would do, or --yes to do it: %w",
				o.AsOf.Format(time.RFC3339), now.UTC().Format(time.RFC3339), engine.ErrBadInput)
		}
	}
	return o, nil
}

// runSweep runs one sweep; its callers print the report.
func runSweep(ctx context.Context, a *app, cmd *cobra.Command, which string, f sweepFlags) (engine.SweepReport, error) {
	f.idleSet = cmd.Flags().Changed("idle")
	opts, err := f.options(time.Now())
	if err != nil {
		return engine.SweepReport{}, err
	}
	eng, err := a.engine(ctx)
	if err != nil {
		return engine.SweepReport{}, err
	}
	if a.parts.sweepOptions != nil {
		opts = a.parts.sweepOptions(opts)
	}
	// The engine stops claiming at the deadline; SIGTERM (ctx) also cuts the waits in flight short.
	opts.Deadline = f.deadline
	var rep engine.SweepReport
	switch which {
	case "hibernate":
		rep, err = eng.SweepHibernate(ctx, opts)
	case "purge":
		rep, err = eng.SweepPurge(ctx, opts)
	default:
		return rep, fmt.Errorf("unknown sweep %q: want hibernate, purge or all: %w", which, engine.ErrBadInput)
	}
	if rep.StoppedEarly != "" {
		a.log.Warn("sweep stopped early", "sweep", which, "cause", rep.StoppedEarly)
	}
	return rep, err
}

// printSweep prints a sweep's report: its one-line JSON summary with -o json, else a table.
func printSweep(a *app, cmd *cobra.Command, rep engine.SweepReport) error {
	if a.cfg.Output == "json" {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(cmd.OutOrStdout(), string(b))
		return nil
	}
	o := out{w: cmd.OutOrStdout()}
	return o.emit(rep, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "sweep %s (as of %s, lock %s, dry run %v): %d selected in %dms\n",
			rep.Sweep, rep.AsOf.Format(time.RFC3339), rep.Lock, rep.DryRun, rep.Selected, rep.DurationMS)
		hibernated, stopped, recovered, purged := "hibernated", "stopped", "recovered", "purged"
		if rep.DryRun {
			hibernated, stopped, recovered, purged = "would hibernate", "would stop", "would recover", "would purge"
		}
		lists := []struct {
			name  string
			items []engine.SweepItem
		}{{hibernated, rep.Hibernated}, {stopped, rep.Stopped}, {recovered, rep.Recovered}, {purged, rep.Purged}, {"skipped", rep.Skipped}, {"failed", rep.Failed}, {"deferred", rep.Deferred}}
		for _, l := range lists {
			for _, it := range l.items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.name, it.Slug, it.ID, printable(it.Reason))
			}
		}
		if r := rep.Router; r != nil {
			switch {
			case r.Error != "":
				fmt.Fprintf(tw, "router\t%s\t%s\n", r.Router, printable(r.Error))
			case len(r.Touched) > 0:
				fmt.Fprintf(tw, "router\t%s\trequests since the last sweep: %s\n", r.Router, printable(strings.Join(r.Touched, ", ")))
			default:
				fmt.Fprintf(tw, "router\t%s\tno requests to any project since the last sweep\n", r.Router)
			}
		}
		if rep.Sweep == "purge" {
			freed := "freed"
			if rep.DryRun {
				freed = "would free"
			}
			fmt.Fprintf(tw, "%s\t%s\n", freed, size(rep.FreedBytes))
			if rep.FreedCapacityBytes > 0 {
				// CSI drivers report a snapshot's volume capacity, not its data.
				fmt.Fprintf(tw, "%s\t%s of volume capacity (data size not known)\n", freed, size(rep.FreedCapacityBytes))
			}
		}
	})
}

func sweepCmd(a *app) *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep hibernate|purge|all",
		Short: "Run one sweep: hibernate idle projects, purge expired snapshots, or both (all)",
		Example: `  sailtui sweep hibernate --dry-run
  sailtui sweep hibernate --idle 10m
  sailtui sweep purge --as-of 2027-01-01T00:00:00Z -o json
  sailtui sweep all --dry-run`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"hibernate", "purge", "all"},
		RunE: func(cmd *cobra.Command, args []string) error {
			sweeps := []string{args[0]}
			if args[0] == "all" {
				// As --headless --sweep=all: the hibernation first, then the purge.
				sweeps = []string{"hibernate", "purge"}
			}
			ok := true
			for _, which := range sweeps {
				rep, err := runSweep(cmd.Context(), a, cmd, which, f)
				if err != nil {
					return err
				}
				if err := printSweep(a, cmd, rep); err != nil {
					return err
				}
				ok = ok && rep.OK()
			}
			if !ok {
				return exitError{1}
			}
			return nil
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// runHeadless is the CronJob form (package headless): the sweeps run through the same
// runSweep as `sailtui sweep`.
func runHeadless(cmd *cobra.Command, a *app, which string, f sweepFlags, m metrics.Flags) error {
	r := headless.Runner{
		Sweep: which, Metrics: m, Log: a.log, Stdout: cmd.OutOrStdout(), ExitCode: exitCodeOf,
		RunSweep: func(ctx context.Context, sweep string) (engine.SweepReport, error) {
			if err := a.cfg.checkHeadlessStore(); err != nil {
				return engine.SweepReport{}, err
			}
			return runSweep(ctx, a, cmd, sweep, f)
		},
	}
	if code := r.Run(cmd.Context()); code != 0 {
		return exitError{code}
	}
	return nil
}

// exitCodeOf is the exit status main gives err: 130 when a signal cut it short, 2 for bad
// input, else 1.
func exitCodeOf(err error) int {
	if errors.Is(err, errInterrupted) {
		return 130
	}
	if errors.Is(err, engine.ErrBadInput) || errors.Is(err, engine.ErrBadPath) || errors.Is(err, errUnreachable) {
		return 2
	}
	return 1
}
