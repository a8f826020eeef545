package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sailtui/sailtui/engine"
)

type sweepFlags struct {
	dryRun      bool
	idle        time.Duration
	stopIdle    time.Duration
	asOf        string
	concurrency int
	deadline    time.Duration
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
}

func (s sweepFlags) options() (engine.SweepOptions, error) {
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
	}
	return o, nil
}

// runSweep runs one sweep and prints its one-line JSON summary (or a table on a terminal).
func runSweep(ctx context.Context, a *app, cmd *cobra.Command, which string, f sweepFlags, forceJSON bool) (engine.SweepReport, error) {
	f.idleSet = cmd.Flags().Changed("idle")
	opts, err := f.options()
	if err != nil {
		return engine.SweepReport{}, err
	}
	if a.cfg.Mode == "kubernetes" {
		// The sweeper's role (kubernetes.SweeperProjectRules) cannot create namespaces or
		// PVCs; an interrupted wake or restore is finished by the next wake instead.
		opts.LeaveInterrupted = []engine.OpKind{engine.OpWake, engine.OpRestore}
	}
	eng, err := a.engine(ctx)
	if err != nil {
		return engine.SweepReport{}, err
	}
	if f.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.deadline)
		defer cancel()
	}
	var rep engine.SweepReport
	switch which {
	case "hibernate":
		rep, err = eng.SweepHibernate(ctx, opts)
	case "purge":
		rep, err = eng.SweepPurge(ctx, opts)
	default:
		return rep, fmt.Errorf("unknown sweep %q: want hibernate or purge: %w", which, engine.ErrBadInput)
	}
	if rep.StoppedEarly != "" {
		a.log.Warn("sweep stopped early", "sweep", which, "cause", rep.StoppedEarly)
	}
	if err != nil {
		return rep, err
	}
	if forceJSON || a.cfg.Output == "json" {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(cmd.OutOrStdout(), string(b))
		return rep, nil
	}
	o := out{w: cmd.OutOrStdout()}
	return rep, o.emit(rep, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "sweep %s (as of %s, lock %s, dry run %v): %d selected in %dms\n",
			rep.Sweep, rep.AsOf.Format(time.RFC3339), rep.Lock, rep.DryRun, rep.Selected, rep.DurationMS)
		verb := "hibernated"
		if rep.DryRun {
			verb = "would hibernate"
		}
		lists := []struct {
			name  string
			items []engine.SweepItem
		}{{verb, rep.Hibernated}, {"stopped", rep.Stopped}, {"recovered", rep.Recovered}, {"purged", rep.Purged}, {"skipped", rep.Skipped}, {"failed", rep.Failed}, {"deferred", rep.Deferred}}
		for _, l := range lists {
			for _, it := range l.items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.name, it.Slug, it.ID, it.Reason)
			}
		}
		if rep.Sweep == "purge" {
			fmt.Fprintf(tw, "freed\t%s\n", size(rep.FreedBytes))
		}
	})
}

func sweepCmd(a *app) *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep hibernate|purge",
		Short: "Run one sweep: hibernate idle projects, or purge expired snapshots",
		Example: `  sailtui sweep hibernate --dry-run
  sailtui sweep hibernate --idle 10m
  sailtui sweep purge --as-of 2027-01-01T00:00:00Z -o json`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"hibernate", "purge"},
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := runSweep(cmd.Context(), a, cmd, args[0], f, false)
			if err != nil {
				return err
			}
			if !rep.OK() {
				return exitError{1}
			}
			return nil
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// runHeadless is the CronJob form: JSON logs on stderr (errors included: nothing else is
// written there), one JSON summary line per sweep on stdout, and the metrics of every sweep to
// --metrics-textfile / --pushgateway. The exit status is 0 only when nothing failed: 1 when a
// project or a sweep failed, 2 for bad configuration, which is found before anything is touched.
// After SIGTERM (or --deadline) the sweep in progress stops claiming projects, lets the ones in
// flight finish, and prints its summary with the rest deferred; no further sweep starts.
func runHeadless(cmd *cobra.Command, a *app, which string, f sweepFlags, m metricsFlags) error {
	ctx := cmd.Context()
	var sweeps []string
	switch which {
	case "hibernate", "purge":
		sweeps = []string{which}
	case "all":
		sweeps = []string{"hibernate", "purge"}
	case "":
		return headlessFailed(a, "", fmt.Errorf("--headless needs --sweep=hibernate|purge|all: %w", engine.ErrBadInput))
	default:
		return headlessFailed(a, "", fmt.Errorf("--sweep=%q: want hibernate, purge or all: %w", which, engine.ErrBadInput))
	}
	if err := m.validate(); err != nil {
		return headlessFailed(a, "", fmt.Errorf("%w: %w", err, engine.ErrBadInput))
	}
	var results []sweepResult
	report := func() {
		if m.set() {
			_ = m.report(ctx, results, a.log)
		}
	}
	failed := false
	for _, s := range sweeps {
		if ctx.Err() != nil {
			a.log.Warn("sweep not started: stopping", "sweep", s, "cause", context.Cause(ctx))
			break
		}
		start := time.Now()
		rep, err := runSweep(ctx, a, cmd, s, f, true)
		res := sweepResult{sweep: s, rep: rep, err: err, duration: time.Since(start), finished: time.Now()}
		if rep.Sweep != "" {
			res.duration = time.Duration(rep.DurationMS) * time.Millisecond
		}
		if err != nil {
			res.exit = exitCodeOf(err)
			results = append(results, res)
			if rep.Sweep != "" {
				// The sweep got going before it failed: say what it did.
				b, _ := json.Marshal(struct {
					engine.SweepReport
					Error string `json:"error"`
				}{rep, err.Error()})
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
			}
			report()
			return headlessFailed(a, s, err)
		}
		if !rep.OK() {
			res.exit = 1
		}
		results = append(results, res)
		a.log.Info("sweep finished", "sweep", s, "lock", rep.Lock, "selected", rep.Selected,
			"hibernated", len(rep.Hibernated), "skipped", len(rep.Skipped), "failed", len(rep.Failed),
			"deferred", len(rep.Deferred), "purged", len(rep.Purged), "duration_ms", rep.DurationMS)
		for _, it := range rep.Failed {
			a.log.Error("project failed", "sweep", s, "project", it.Slug, "id", it.ID, "reason", it.Reason)
		}
		failed = failed || !rep.OK()
	}
	report()
	if failed {
		return exitError{1}
	}
	return nil
}

// headlessFailed logs err as JSON and exits with its status, so stderr stays JSON lines only.
func headlessFailed(a *app, sweep string, err error) error {
	a.log.Error("sweep failed", "sweep", sweep, "err", err.Error())
	return exitError{exitCodeOf(err)}
}

// exitCodeOf is the exit status main gives err: 2 for bad input, else 1.
func exitCodeOf(err error) int {
	if errors.Is(err, engine.ErrBadInput) || errors.Is(err, engine.ErrBadPath) || errors.Is(err, errUnreachable) {
		return 2
	}
	return 1
}
