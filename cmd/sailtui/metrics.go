package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"

	"github.com/sailtui/sailtui/engine"
)

// pushJob is the Pushgateway job the headless sweeps push under, grouped by sweep kind:
// /metrics/job/sailtui_sweep/sweep/<hibernate|purge>.
const pushJob = "sailtui_sweep"

// pushTimeout bounds one push: metrics must never keep a finished sweep from exiting.
const pushTimeout = 10 * time.Second

// metricsFlags are where a headless run reports its sweeps' metrics; both are optional.
type metricsFlags struct {
	textfile    string
	pushgateway string
}

func (m *metricsFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&m.textfile, "metrics-textfile", "", "headless: write the sweeps' metrics to this file (node-exporter textfile format, replaced atomically)")
	fs.StringVar(&m.pushgateway, "pushgateway", "", "headless: push the sweeps' metrics to this Prometheus Pushgateway URL (job "+pushJob+", grouped by sweep)")
}

func (m metricsFlags) set() bool { return m.textfile != "" || m.pushgateway != "" }

// validate checks the destinations before any sweep runs: a typo shows up at once, not after
// the work is done.
func (m metricsFlags) validate() error {
	if m.textfile != "" {
		dir := filepath.Dir(m.textfile)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("--metrics-textfile %s: directory %s does not exist", m.textfile, dir)
		}
		if fi, err := os.Stat(m.textfile); err == nil && fi.IsDir() {
			return fmt.Errorf("--metrics-textfile %s is a directory", m.textfile)
		}
	}
	if m.pushgateway != "" {
		u, err := url.Parse(m.pushgateway)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--pushgateway %q: want an http(s) URL such as http://pushgateway:9091", engine.RedactURL(m.pushgateway))
		}
	}
	return nil
}

// sweepResult is one sweep of a headless run, as the metrics see it.
type sweepResult struct {
	sweep    string
	rep      engine.SweepReport
	err      error
	exit     int // the exit status this sweep alone would give
	duration time.Duration
	finished time.Time
}

// succeeded: the sweep ran to its end (or to its deadline) with nothing failed. A run that found
// the global lock taken did nothing and does not count, so a lock that never frees shows as a
// last-success timestamp that stops moving.
func (r sweepResult) succeeded() bool {
	return r.err == nil && r.rep.OK() && (r.rep.Lock == engine.LockAcquired || r.rep.DryRun)
}

// sweepGauges are the metrics of a sweep. With the sweep label (textfile: one file may hold
// several sweeps) every series carries sweep="<kind>"; without it (Pushgateway) the grouping
// key carries it instead.
type sweepGauges struct {
	labelled                                              bool
	items                                                 *prometheus.GaugeVec
	freed, duration, lastRun, lastSuccess, exit, lockHeld *prometheus.GaugeVec
}

// The metric names, also used to carry series over from a previous textfile.
const (
	metricItems       = "sailtui_sweep_items"
	metricFreed       = "sailtui_sweep_freed_bytes"
	metricDuration    = "sailtui_sweep_duration_seconds"
	metricLastRun     = "sailtui_sweep_last_run_timestamp_seconds"
	metricLastSuccess = "sailtui_sweep_last_success_timestamp_seconds"
	metricExit        = "sailtui_sweep_exit_status"
	metricLockHeld    = "sailtui_sweep_lock_held_by_other"
)

// outcomes are the values of the items' outcome label: the lists of the summary line.
var outcomes = []string{"selected", "hibernated", "stopped", "recovered", "skipped", "failed", "deferred", "purged"}

func newSweepGauges(reg prometheus.Registerer, labelled bool) *sweepGauges {
	var base []string
	if labelled {
		base = []string{"sweep"}
	}
	gauge := func(name, help string, extra ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append(append([]string{}, base...), extra...))
		reg.MustRegister(v)
		return v
	}
	return &sweepGauges{
		labelled: labelled,
		items: gauge(metricItems, "Projects (hibernate sweep) or snapshots (purge sweep) of the last run, by outcome; "+
			"selected counts what the sweep picked, the others what became of them.", "outcome"),
		freed:       gauge(metricFreed, "Bytes of snapshot storage the last run freed (purge)."),
		duration:    gauge(metricDuration, "Wall time of the last run."),
		lastRun:     gauge(metricLastRun, "When the last run finished (Unix time)."),
		lastSuccess: gauge(metricLastSuccess, "When a run last finished with the lock taken and nothing failed (Unix time)."),
		exit:        gauge(metricExit, "Exit status of the last run: 0 nothing failed, 1 a project or the sweep failed, 2 bad configuration."),
		lockHeld:    gauge(metricLockHeld, "1 when the last run found another sweep holding the global lock and did nothing."),
	}
}

func (g *sweepGauges) labels(sweep string, extra ...string) []string {
	if g.labelled {
		return append([]string{sweep}, extra...)
	}
	return extra
}

func (g *sweepGauges) observe(r sweepResult) {
	l := g.labels
	rep := r.rep
	counts := map[string]int{
		"selected": rep.Selected, "hibernated": len(rep.Hibernated), "stopped": len(rep.Stopped),
		"recovered": len(rep.Recovered), "skipped": len(rep.Skipped), "failed": len(rep.Failed),
		"deferred": len(rep.Deferred), "purged": len(rep.Purged),
	}
	for _, o := range outcomes {
		g.items.WithLabelValues(l(r.sweep, o)...).Set(float64(counts[o]))
	}
	g.freed.WithLabelValues(l(r.sweep)...).Set(float64(rep.FreedBytes))
	g.duration.WithLabelValues(l(r.sweep)...).Set(r.duration.Seconds())
	g.lastRun.WithLabelValues(l(r.sweep)...).Set(unix(r.finished))
	if r.succeeded() {
		g.lastSuccess.WithLabelValues(l(r.sweep)...).Set(unix(r.finished))
	}
	g.exit.WithLabelValues(l(r.sweep)...).Set(float64(r.exit))
	held := 0.0
	if rep.Lock == engine.LockHeld {
		held = 1
	}
	g.lockHeld.WithLabelValues(l(r.sweep)...).Set(held)
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// report writes and pushes the metrics of the sweeps a headless run did. Failures are logged
// and returned; they never change what the sweeps did.
func (m metricsFlags) report(ctx context.Context, results []sweepResult, log *slog.Logger) error {
	var errs []error
	if m.textfile != "" {
		if err := writeTextfile(m.textfile, results, log); err != nil {
			log.Error("write metrics textfile", "path", m.textfile, "err", err)
			errs = append(errs, fmt.Errorf("--metrics-textfile %s: %w", m.textfile, err))
		}
	}
	if m.pushgateway != "" {
		// The sweep's context may be cancelled (SIGTERM); the metrics of what it did still go out.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
		defer cancel()
		for _, r := range results {
			if err := pushResult(pctx, m.pushgateway, r); err != nil {
				log.Error("push metrics", "pushgateway", engine.RedactURL(m.pushgateway), "sweep", r.sweep, "err", err)
				errs = append(errs, fmt.Errorf("--pushgateway: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// pushResult pushes one sweep's metrics to /metrics/job/sailtui_sweep/sweep/<kind> with POST,
// which replaces only the metrics pushed: a failed run leaves the group's last-success
// timestamp as the previous successful run set it.
func pushResult(ctx context.Context, gateway string, r sweepResult) error {
	reg := prometheus.NewRegistry()
	newSweepGauges(reg, false).observe(r)
	return push.New(gateway, pushJob).
		Grouping("sweep", r.sweep).
		Gatherer(reg).
		Client(&http.Client{Timeout: pushTimeout}).
		AddContext(ctx)
}

// writeTextfile replaces path with the metrics of these sweeps (temp file + rename, so the node
// exporter never reads half a file). Series of other sweeps already in the file stay, and so
// does a sweep's last-success timestamp when this run did not succeed: one file can serve
// several sweeps, and a failure does not erase when things last worked.
func writeTextfile(path string, results []sweepResult, log *slog.Logger) error {
	reg := prometheus.NewRegistry()
	g := newSweepGauges(reg, true)
	ran := map[string]sweepResult{}
	for _, r := range results {
		ran[r.sweep] = r
	}
	if err := carryOver(path, g, ran); err != nil {
		log.Warn("previous metrics textfile not carried over", "path", path, "err", err)
	}
	for _, r := range results {
		g.observe(r)
	}
	return prometheus.WriteToTextfile(path, reg)
}

// carryOver re-sets the series of a previous textfile that this run does not replace.
func carryOver(path string, g *sweepGauges, ran map[string]sweepResult) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		return err
	}
	vecs := map[string]*prometheus.GaugeVec{
		metricItems: g.items, metricFreed: g.freed, metricDuration: g.duration, metricLastRun: g.lastRun,
		metricLastSuccess: g.lastSuccess, metricExit: g.exit, metricLockHeld: g.lockHeld,
	}
	for name, mf := range families {
		vec, ok := vecs[name]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			lbls := prometheus.Labels{}
			for _, lp := range m.GetLabel() {
				lbls[lp.GetName()] = lp.GetValue()
			}
			sweep := lbls["sweep"]
			r, thisRun := ran[sweep]
			keep := !thisRun || (name == metricLastSuccess && !r.succeeded())
			if !keep || sweep == "" {
				continue
			}
			if c, err := vec.GetMetricWith(lbls); err == nil {
				c.Set(gaugeValue(m))
			}
		}
	}
	return nil
}

func gaugeValue(m *dto.Metric) float64 {
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}
