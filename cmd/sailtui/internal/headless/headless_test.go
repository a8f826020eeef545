package headless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/cmd/sailtui/internal/headless"
	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics"
	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics/metricstest"
	"github.com/sailtui/sailtui/engine"
)

// run is one headless run over fake sweeps, with what it printed.
type run struct {
	code           int
	stdout, stderr string
	called         []string
}

func (r run) lines(t *testing.T) []map[string]any {
	t.Helper()
	return jsonLines(t, r.stdout)
}

func (r run) logged(t *testing.T, msg string, kv ...string) bool {
	t.Helper()
next:
	for _, rec := range jsonLines(t, r.stderr) {
		if rec["msg"] != msg {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if fmt.Sprint(rec[kv[i]]) != kv[i+1] {
				continue next
			}
		}
		return true
	}
	return false
}

// jsonLines parses every line of s as a JSON object; anything else fails the test.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

type sweepFunc func(ctx context.Context, sweep string) (engine.SweepReport, error)

func runWith(t *testing.T, ctx context.Context, which string, m metrics.Flags, sweep sweepFunc) run {
	t.Helper()
	var stdout, stderr bytes.Buffer
	var r run
	code := headless.Runner{
		Sweep: which, Metrics: m, Log: headless.NewLogger(&stderr), Stdout: &stdout,
		RunSweep: func(ctx context.Context, s string) (engine.SweepReport, error) {
			r.called = append(r.called, s)
			return sweep(ctx, s)
		},
	}.Run(ctx)
	r.code, r.stdout, r.stderr = code, stdout.String(), stderr.String()
	return r
}

func report(sweep string, failed ...string) engine.SweepReport {
	rep := engine.SweepReport{Sweep: sweep, Lock: engine.LockAcquired, Selected: 1 + len(failed),
		Hibernated: []engine.SweepItem{{Slug: "fine", ID: "p1"}}, Failed: []engine.SweepItem{}}
	for _, f := range failed {
		rep.Failed = append(rep.Failed, engine.SweepItem{Slug: f, ID: f, Reason: "broken"})
	}
	return rep
}

// --sweep=all runs hibernate then purge, prints one summary line each, and exits 1 when a
// project failed, with the failure in the JSON log.
func TestHeadlessRunAll(t *testing.T) {
	r := runWith(t, t.Context(), "all", metrics.Flags{}, func(_ context.Context, s string) (engine.SweepReport, error) {
		if s == "hibernate" {
			return report(s, "doomed"), nil
		}
		return report(s), nil
	})
	if r.code != headless.ExitFailed || strings.Join(r.called, ",") != "hibernate,purge" {
		t.Fatalf("exit %d, sweeps %v; want 1 after hibernate,purge", r.code, r.called)
	}
	lines := r.lines(t)
	if len(lines) != 2 || lines[0]["sweep"] != "hibernate" || lines[1]["sweep"] != "purge" {
		t.Fatalf("summaries %v", lines)
	}
	if !r.logged(t, "project failed", "project", "doomed", "level", "ERROR") || !r.logged(t, "sweep finished", "sweep", "purge", "failed", "0") {
		t.Errorf("log:\n%s", r.stderr)
	}

	r = runWith(t, t.Context(), "purge", metrics.Flags{}, func(_ context.Context, s string) (engine.SweepReport, error) { return report(s), nil })
	if r.code != 0 || strings.Join(r.called, ",") != "purge" || len(r.lines(t)) != 1 {
		t.Fatalf("purge alone: exit %d, sweeps %v, stdout %s", r.code, r.called, r.stdout)
	}
}

// A bad --sweep or metrics destination is refused with exit 2 before any sweep runs, and the
// run still prints its one summary line, saying why (a CronJob's output is never empty).
func TestHeadlessRefusedBeforeSweeping(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		which string
		m     metrics.Flags
		want  string
	}{
		{"", metrics.Flags{}, "--headless needs --sweep"},
		{"moon", metrics.Flags{}, `--sweep=\"moon\"`},
		{"all", metrics.Flags{Textfile: filepath.Join(dir, "missing", "x.prom")}, "metrics-textfile"},
		{"all", metrics.Flags{Pushgateway: "pushgateway:9091"}, "pushgateway"},
	} {
		r := runWith(t, t.Context(), tc.which, tc.m, func(context.Context, string) (engine.SweepReport, error) {
			return engine.SweepReport{}, errors.New("must not run")
		})
		if r.code != headless.ExitBadConfig || len(r.called) != 0 {
			t.Errorf("%q %+v: exit %d, sweeps %v", tc.which, tc.m, r.code, r.called)
		}
		if lines := r.lines(t); len(lines) != 1 || lines[0]["sweep"] != tc.which || !strings.Contains(fmt.Sprint(lines[0]["error"]), strings.ReplaceAll(tc.want, `\"`, `"`)) || lines[0]["exit"] != float64(2) {
			t.Errorf("%q %+v: summary %v, want one line with the error and exit 2", tc.which, tc.m, lines)
		}
		if !r.logged(t, "sweep failed", "level", "ERROR") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q %+v: log does not say %s:\n%s", tc.which, tc.m, tc.want, r.stderr)
		}
	}
}

// A sweep that fails after it got going prints what it did with the error; one that fails
// before prints the error alone (bad configuration: exit 2). Either way no further sweep runs, the exit status is the error's,
// and the metrics of what ran are still written.
func TestHeadlessSweepError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sweeps.prom")
	m := metrics.Flags{Textfile: path}
	r := runWith(t, t.Context(), "all", m, func(_ context.Context, s string) (engine.SweepReport, error) {
		return report(s), errors.New("store went away")
	})
	if r.code != headless.ExitFailed || strings.Join(r.called, ",") != "hibernate" {
		t.Fatalf("exit %d, sweeps %v", r.code, r.called)
	}
	if lines := r.lines(t); len(lines) != 1 || lines[0]["error"] != "store went away" || lines[0]["sweep"] != "hibernate" {
		t.Fatalf("summaries %v", lines)
	}
	if !r.logged(t, "sweep failed", "sweep", "hibernate", "err", "store went away") {
		t.Errorf("log:\n%s", r.stderr)
	}
	if got, ok := metricstest.Value(metricstest.ReadTextfile(t, path), metrics.Exit, map[string]string{"sweep": "hibernate"}); !ok || got != 1 {
		t.Errorf("textfile exit status %v (%v), want 1", got, ok)
	}

	r = runWith(t, t.Context(), "hibernate", metrics.Flags{}, func(context.Context, string) (engine.SweepReport, error) {
		return engine.SweepReport{}, fmt.Errorf("S3_PROJECTS_PREFIX: %w", engine.ErrBadInput)
	})
	if lines := r.lines(t); r.code != headless.ExitBadConfig || len(lines) != 1 || lines[0]["sweep"] != "hibernate" ||
		lines[0]["error"] != "S3_PROJECTS_PREFIX: invalid input" || lines[0]["exit"] != float64(2) {
		t.Fatalf("bad input: exit %d, summaries %v", r.code, lines)
	}
}

// Once the run is told to stop (SIGTERM), the sweep in progress reports and no further sweep
// starts.
func TestHeadlessStopsBetweenSweeps(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	r := runWith(t, ctx, "all", metrics.Flags{}, func(_ context.Context, s string) (engine.SweepReport, error) {
		cancel(errors.New("SIGTERM"))
		rep := report(s)
		rep.Deferred = []engine.SweepItem{{Slug: "later", ID: "p2"}}
		return rep, nil
	})
	if r.code != 0 || strings.Join(r.called, ",") != "hibernate" || len(r.lines(t)) != 1 {
		t.Fatalf("exit %d, sweeps %v, stdout %s", r.code, r.called, r.stdout)
	}
	if !r.logged(t, "sweep not started: stopping", "sweep", "purge", "cause", "SIGTERM") {
		t.Errorf("log:\n%s", r.stderr)
	}
}
