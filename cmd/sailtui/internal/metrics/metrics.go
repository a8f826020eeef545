// Package metrics reports the sweeps of a headless run to Prometheus: a node-exporter textfile
// (--metrics-textfile) and a Pushgateway (--pushgateway). It only reads sweep reports; what it
// writes never changes what the sweeps did.
package metrics

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

// PushJob is the Pushgateway job the headless sweeps push under, grouped by sweep kind:
// /metrics/job/sailtui_sweep/sweep/<hibernate|purge>.
const PushJob = "sailtui_sweep"

// pushTimeout bounds one push: metrics must never keep a finished sweep from exiting.
const pushTimeout = 10 * time.Second

// The metric names: dashboards and alerts depend on them, and a previous textfile's series are
// carried over by them.
const (
	Items       = "sailtui_sweep_items"
	Freed       = "sailtui_sweep_freed_bytes"
	Duration    = "sailtui_sweep_duration_seconds"
	LastRun     = "sailtui_sweep_last_run_timestamp_seconds"
	LastSuccess = "sailtui_sweep_last_success_timestamp_seconds"
	Exit        = "sailtui_sweep_exit_status"
	LockHeld    = "sailtui_sweep_lock_held_by_other"
)

// Flags are where a headless run reports its sweeps' metrics; both are optional.
type Flags struct {
	Textfile    string
	Pushgateway string
}

// Bind registers --metrics-textfile and --pushgateway.
func (m *Flags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&m.Textfile, "metrics-textfile", "", "headless: write the sweeps' metrics to this file (node-exporter textfile format, replaced atomically)")
	fs.StringVar(&m.Pushgateway, "pushgateway", "", "headless: push the sweeps' metrics to this Prometheus Pushgateway URL (job "+PushJob+", grouped by sweep)")
}

// Set reports whether any destination was given.
func (m Flags) Set() bool { return m.Textfile != "" || m.Pushgateway != "" }

// Validate checks the destinations before any sweep runs: a typo shows up at once, not after
// the work is done.
func (m Flags) Validate() error {
	if m.Textfile != "" {
		dir := filepath.Dir(m.Textfile)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("--metrics-textfile %s: directory %s does not exist", m.Textfile, dir)
		}
		if fi, err := os.Stat(m.Textfile); err == nil && fi.IsDir() {
			return fmt.Errorf("--metrics-textfile %s is a directory", m.Textfile)
		}
	}
	if m.Pushgateway != "" {
		u, err := url.Parse(m.Pushgateway)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--pushgateway %q: want an http(s) URL such as http://pushgateway:9091", engine.RedactURL(m.Pushgateway))
		}
	}
	return nil
}

// Result is one sweep of a headless run, as the metrics see it.
type Result struct {
	Sweep    string
	Report   engine.SweepReport
	Err      error
	Exit     int // the exit status this sweep alone would give
	Duration time.Duration
	Finished time.Time
}

// Succeeded: the sweep ran to its end (or to its deadline) with nothing failed. A run that found
// the global lock taken did nothing and does not count, so a lock that never frees shows as a
// last-success timestamp that stops moving.
func (r Result) Succeeded() bool {
	return r.Err == nil && r.Report.OK() && (r.Report.Lock == engine.LockAcquired || r.Report.DryRun)
}

// sweepGauges are the metrics of a sweep. With the sweep label (textfile: one file may hold
// several sweeps) every series carries sweep="<kind>"; without it (Pushgateway) the grouping
// key carries it instead.
type sweepGauges struct {
	labelled                                              bool
	items                                                 *prometheus.GaugeVec
	freed, duration, lastRun, lastSuccess, exit, lockHeld *prometheus.GaugeVec
}

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
		items: gauge(Items, "Projects (hibernate sweep) or snapshots (purge sweep) of the last run, by outcome; "+
			"selected counts what the sweep picked, the others what became of them.", "outcome"),
		freed:       gauge(Freed, "Bytes of snapshot storage the last run freed (purge)."),
		duration:    gauge(Duration, "Wall time of the last run."),
		lastRun:     gauge(LastRun, "When the last run finished (Unix time)."),
		lastSuccess: gauge(LastSuccess, "When a run last finished with the lock taken and nothing failed (Unix time)."),
		exit:        gauge(Exit, "Exit status of the last run: 0 nothing failed, 1 a project or the sweep failed, 2 bad configuration."),
		lockHeld:    gauge(LockHeld, "1 when the last run found another sweep holding the global lock and did nothing."),
	}
}

func (g *sweepGauges) labels(sweep string, extra ...string) []string {
	if g.labelled {
		return append([]string{sweep}, extra...)
	}
	return extra
}

func (g *sweepGauges) observe(r Result) {
	l := g.labels
	rep := r.Report
	counts := map[string]int{
		"selected": rep.Selected, "hibernated": len(rep.Hibernated), "stopped": len(rep.Stopped),
		"recovered": len(rep.Recovered), "skipped": len(rep.Skipped), "failed": len(rep.Failed),
		"deferred": len(rep.Deferred), "purged": len(rep.Purged),
	}
	for _, o := range outcomes {
		g.items.WithLabelValues(l(r.Sweep, o)...).Set(float64(counts[o]))
	}
	g.freed.WithLabelValues(l(r.Sweep)...).Set(float64(rep.FreedBytes))
	g.duration.WithLabelValues(l(r.Sweep)...).Set(r.Duration.Seconds())
	g.lastRun.WithLabelValues(l(r.Sweep)...).Set(unix(r.Finished))
	if r.Succeeded() {
		g.lastSuccess.WithLabelValues(l(r.Sweep)...).Set(unix(r.Finished))
	}
	g.exit.WithLabelValues(l(r.Sweep)...).Set(float64(r.Exit))
	held := 0.0
	if rep.Lock == engine.LockHeld {
		held = 1
	}
	g.lockHeld.WithLabelValues(l(r.Sweep)...).Set(held)
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Report writes and pushes the metrics of the sweeps a headless run did. Failures are logged
// and returned; they never change what the sweeps did.
func (m Flags) Report(ctx context.Context, results []Result, log *slog.Logger) error {
	var errs []error
	if m.Textfile != "" {
		if err := WriteTextfile(m.Textfile, results, log); err != nil {
			log.Error("write metrics textfile", "path", m.Textfile, "err", err)
			errs = append(errs, fmt.Errorf("--metrics-textfile %s: %w", m.Textfile, err))
		}
	}
	if m.Pushgateway != "" {
		// The sweep's context may be cancelled (SIGTERM); the metrics of what it did still go out.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
		defer cancel()
		for _, r := range results {
			if err := pushResult(pctx, m.Pushgateway, r); err != nil {
				log.Error("push metrics", "pushgateway", engine.RedactURL(m.Pushgateway), "sweep", r.Sweep, "err", err)
				errs = append(errs, fmt.Errorf("--pushgateway: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// pushResult pushes one sweep's metrics to /metrics/job/sailtui_sweep/sweep/<kind> with POST,
// which replaces only the metrics pushed: a failed run leaves the group's last-success
// timestamp as the previous successful run set it.
func pushResult(ctx context.Context, gateway string, r Result) error {
	reg := prometheus.NewRegistry()
	newSweepGauges(reg, false).observe(r)
	if err := push.New(gateway, PushJob).
		Grouping("sweep", r.Sweep).
		Gatherer(reg).
		Client(&http.Client{Timeout: pushTimeout}).
		AddContext(ctx); err != nil {
		return fmt.Errorf("push sweep %s: %w", r.Sweep, err)
	}
	return nil
}

// WriteTextfile replaces path with the metrics of these sweeps (temp file + rename, so the node
// exporter never reads half a file). Series of other sweeps already in the file stay, and so
// does a sweep's last-success timestamp when this run did not succeed: one file can serve
// several sweeps, and a failure does not erase when things last worked.
func WriteTextfile(path string, results []Result, log *slog.Logger) error {
	reg := prometheus.NewRegistry()
	g := newSweepGauges(reg, true)
	ran := map[string]Result{}
	for _, r := range results {
		ran[r.Sweep] = r
	}
	if err := carryOver(path, g, ran); err != nil {
		log.Warn("previous metrics textfile not carried over", "path", path, "err", err)
	}
	for _, r := range results {
		g.observe(r)
	}
	// WriteToTextfile's errors name the file already.
	return prometheus.WriteToTextfile(path, reg)
}

// carryOver re-sets the series of a previous textfile that this run does not replace.
func carryOver(path string, g *sweepGauges, ran map[string]Result) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read previous textfile: %w", err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		return fmt.Errorf("parse previous textfile %s: %w", path, err)
	}
	vecs := map[string]*prometheus.GaugeVec{
		Items: g.items, Freed: g.freed, Duration: g.duration, LastRun: g.lastRun,
		LastSuccess: g.lastSuccess, Exit: g.exit, LockHeld: g.lockHeld,
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
			keep := !thisRun || (name == LastSuccess && !r.Succeeded())
			if !keep || sweep == "" {
				continue
			}
			if c, err := vec.GetMetricWith(lbls); err == nil {
				c.Set(GaugeValue(m))
			}
		}
	}
	return nil
}

// GaugeValue is the value of a parsed sample: a textfile's gauges may come back untyped.
func GaugeValue(m *dto.Metric) float64 {
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}
