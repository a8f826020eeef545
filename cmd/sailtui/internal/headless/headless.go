// Package headless is `sailtui --headless --sweep=...`, the form a Kubernetes CronJob runs: JSON
// logs on stderr (errors included: nothing else is written there), one JSON summary line per
// sweep on stdout, the metrics of every sweep to --metrics-textfile / --pushgateway, and an exit
// status a CronJob can act on. It knows nothing of flags or wiring: the command gives it a
// function that runs one sweep, so all of it is tested without the binary.
package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics"
	"github.com/sailtui/sailtui/engine"
)

// Exit statuses: 0 when nothing failed.
const (
	// ExitFailed: a project or a sweep failed.
	ExitFailed = 1
	// ExitBadConfig: bad configuration, found before anything was touched (also what ExitCode
	// gives errors of bad input).
	ExitBadConfig = 2
)

// NewLogger is the headless log: JSON lines on w, from level info, as a CronJob's log collector
// reads them.
func NewLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// Runner is one headless run.
type Runner struct {
	// Sweep is --sweep: hibernate, purge or all (hibernate, then purge).
	Sweep   string
	Metrics metrics.Flags
	// Log must write JSON (NewLogger): stderr carries nothing else.
	Log *slog.Logger
	// Stdout gets one JSON summary line per sweep.
	Stdout io.Writer
	// RunSweep runs one sweep ("hibernate" or "purge") and returns its report; a report with
	// Sweep set came from a sweep that got going, even when err is not nil.
	RunSweep func(ctx context.Context, sweep string) (engine.SweepReport, error)
	// ExitCode is the exit status of an error RunSweep returned (ExitBadConfig for a
	// configuration found bad, ExitFailed for the rest); nil gives ExitBadConfig to errors of
	// engine.ErrBadInput and engine.ErrBadPath.
	ExitCode func(error) int
}

// Run runs the sweeps and returns the exit status. After ctx is cancelled (SIGTERM, or
// --deadline inside RunSweep) the sweep in progress stops claiming projects, lets the ones in
// flight finish and prints its summary with the rest deferred; no further sweep starts.
func (r Runner) Run(ctx context.Context) int {
	var sweeps []string
	switch r.Sweep {
	case "hibernate", "purge":
		sweeps = []string{r.Sweep}
	case "all":
		sweeps = []string{"hibernate", "purge"}
	case "":
		return r.refused("", fmt.Errorf("--headless needs --sweep=hibernate|purge|all: %w", engine.ErrBadInput))
	default:
		return r.refused(r.Sweep, fmt.Errorf("--sweep=%q: want hibernate, purge or all: %w", r.Sweep, engine.ErrBadInput))
	}
	if err := r.Metrics.Validate(); err != nil {
		return r.refused(r.Sweep, fmt.Errorf("%w: %w", err, engine.ErrBadInput))
	}
	var results []metrics.Result
	report := func() {
		if r.Metrics.Set() {
			// Report logs its own failures; they do not change the exit status, which is about
			// the sweeps.
			_ = r.Metrics.Report(ctx, results, r.Log)
		}
	}
	failed := false
	for _, s := range sweeps {
		if ctx.Err() != nil {
			r.Log.Warn("sweep not started: stopping", "sweep", s, "cause", context.Cause(ctx))
			break
		}
		start := time.Now()
		rep, err := r.RunSweep(ctx, s)
		res := metrics.Result{Sweep: s, Report: rep, Err: err, Duration: time.Since(start), Finished: time.Now()}
		if rep.Sweep != "" {
			res.Duration = time.Duration(rep.DurationMS) * time.Millisecond
		}
		if err != nil {
			res.Exit = r.exitCode(err)
			results = append(results, res)
			if rep.Sweep != "" {
				// The sweep got going before it failed: say what it did.
				r.summary(struct {
					engine.SweepReport
					Error string `json:"error"`
					Exit  int    `json:"exit"`
				}{rep, err.Error(), res.Exit})
			} else {
				// Refused before it began (a store or cluster that cannot be reached, a bad
				// setting): a CronJob's summary line is still there, saying why.
				r.refusedSummary(s, err)
			}
			report()
			return r.failed(s, err)
		}
		r.summary(rep)
		if !rep.OK() {
			res.Exit = ExitFailed
		}
		results = append(results, res)
		r.Log.Info("sweep finished", "sweep", s, "lock", rep.Lock, "selected", rep.Selected,
			"hibernated", len(rep.Hibernated), "skipped", len(rep.Skipped), "failed", len(rep.Failed),
			"deferred", len(rep.Deferred), "purged", len(rep.Purged), "duration_ms", rep.DurationMS)
		for _, it := range rep.Failed {
			r.Log.Error("project failed", "sweep", s, "project", it.Slug, "id", it.ID, "reason", it.Reason)
		}
		failed = failed || !rep.OK()
	}
	report()
	if failed {
		return ExitFailed
	}
	return 0
}

// refused is a run refused before any sweep: its summary line, its log line, its exit status.
func (r Runner) refused(sweep string, err error) int {
	r.refusedSummary(sweep, err)
	return r.failed(sweep, err)
}

// summary prints one JSON line on stdout. A report always marshals (plain data), so the error
// is not checked.
func (r Runner) summary(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintln(r.Stdout, string(b))
}

// refusedSummary is the summary line of a sweep refused before it began: what it was, why,
// and the exit status that follows, so every run prints one whatever stopped it.
func (r Runner) refusedSummary(sweep string, err error) {
	Refused(r.Stdout, sweep, err, r.exitCode(err))
}

// Refused prints the summary line of a run refused before a sweep began, for the refusals
// made before a Runner exists (a bad setting in the environment).
func Refused(w io.Writer, sweep string, err error, exit int) {
	b, _ := json.Marshal(struct {
		Sweep string `json:"sweep"`
		Error string `json:"error"`
		Exit  int    `json:"exit"`
	}{sweep, err.Error(), exit})
	fmt.Fprintln(w, string(b))
}

// failed logs err as JSON and returns its exit status, so stderr stays JSON lines only.
func (r Runner) failed(sweep string, err error) int {
	r.Log.Error("sweep failed", "sweep", sweep, "err", err.Error())
	return r.exitCode(err)
}

func (r Runner) exitCode(err error) int {
	switch {
	case r.ExitCode != nil:
		return r.ExitCode(err)
	case errors.Is(err, engine.ErrBadInput), errors.Is(err, engine.ErrBadPath):
		return ExitBadConfig
	}
	return ExitFailed
}
