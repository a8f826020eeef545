package metrics_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics"
	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics/metricstest"
	"github.com/sailtui/sailtui/engine"
)

// unix is how the metrics write a time.
func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func items(slugs ...string) []engine.SweepItem {
	out := []engine.SweepItem{}
	for _, s := range slugs {
		out = append(out, engine.SweepItem{Slug: s, ID: s, Reason: "why " + s})
	}
	return out
}

func hibernateResult(finished time.Time, failed ...string) metrics.Result {
	r := metrics.Result{Sweep: "hibernate", Finished: finished, Duration: 1500 * time.Millisecond, Report: engine.SweepReport{
		Sweep: "hibernate", Lock: "acquired", Selected: 5, Hibernated: items("a", "b"), Skipped: items("c"),
		Recovered: items("d"), Deferred: items("e"), Failed: items(failed...),
	}}
	if len(failed) > 0 {
		r.Exit = 1
	}
	return r
}

// The textfile holds every metric of the sweeps it was given, parses back with the Prometheus
// parser, is replaced atomically (no temporary file left), keeps the series of sweeps not run
// this time, and keeps a sweep's last success when a later run fails.
func TestMetricsTextfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sailtui.prom")
	log := slog.New(slog.DiscardHandler)
	t1 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

	must(t, metrics.WriteTextfile(path, []metrics.Result{hibernateResult(t1)}, log))
	mfs := metricstest.ReadTextfile(t, path)
	h := map[string]string{"sweep": "hibernate"}
	for outcome, want := range map[string]float64{"selected": 5, "hibernated": 2, "skipped": 1, "recovered": 1, "deferred": 1, "failed": 0, "purged": 0, "stopped": 0} {
		if got, ok := metricstest.Value(mfs, metrics.Items, map[string]string{"sweep": "hibernate", "outcome": outcome}); !ok || got != want {
			t.Errorf("%s{outcome=%s} = %v (%v), want %v", metrics.Items, outcome, got, ok, want)
		}
	}
	checks := []struct {
		name string
		want float64
	}{{metrics.Duration, 1.5}, {metrics.LastRun, unix(t1)}, {metrics.LastSuccess, unix(t1)}, {metrics.Exit, 0}, {metrics.LockHeld, 0}, {metrics.Freed, 0}}
	for _, c := range checks {
		if got, ok := metricstest.Value(mfs, c.name, h); !ok || got != c.want {
			t.Errorf("%s = %v (%v), want %v", c.name, got, ok, c.want)
		}
	}
	if mfs[metrics.Items].GetType() != dto.MetricType_GAUGE || mfs[metrics.Items].GetHelp() == "" {
		t.Errorf("%s: type %s, help %q", metrics.Items, mfs[metrics.Items].GetType(), mfs[metrics.Items].GetHelp())
	}

	// A purge run writes its own series and keeps the hibernation sweep's.
	t2 := t1.Add(time.Hour)
	purge := metrics.Result{Sweep: "purge", Finished: t2, Duration: time.Second, Report: engine.SweepReport{
		Sweep: "purge", Lock: "acquired", Selected: 3, Purged: items("x", "y", "z"), FreedBytes: 12345}}
	must(t, metrics.WriteTextfile(path, []metrics.Result{purge}, log))
	mfs = metricstest.ReadTextfile(t, path)
	if got, _ := metricstest.Value(mfs, metrics.Freed, map[string]string{"sweep": "purge"}); got != 12345 {
		t.Errorf("purge freed %v", got)
	}
	if got, _ := metricstest.Value(mfs, metrics.Items, map[string]string{"sweep": "purge", "outcome": "purged"}); got != 3 {
		t.Errorf("purged %v", got)
	}
	if got, ok := metricstest.Value(mfs, metrics.Items, map[string]string{"sweep": "hibernate", "outcome": "hibernated"}); !ok || got != 2 {
		t.Errorf("the hibernation sweep's series were not kept: %v %v", got, ok)
	}

	// A failed hibernation run: exit status 1, its counts replaced, its last success kept.
	t3 := t2.Add(time.Hour)
	must(t, metrics.WriteTextfile(path, []metrics.Result{hibernateResult(t3, "f1", "f2")}, log))
	mfs = metricstest.ReadTextfile(t, path)
	if got, _ := metricstest.Value(mfs, metrics.Exit, h); got != 1 {
		t.Errorf("exit status %v after a failed run", got)
	}
	if got, _ := metricstest.Value(mfs, metrics.Items, map[string]string{"sweep": "hibernate", "outcome": "failed"}); got != 2 {
		t.Errorf("failed %v", got)
	}
	if got, _ := metricstest.Value(mfs, metrics.LastRun, h); got != unix(t3) {
		t.Errorf("last run %v, want %v", got, unix(t3))
	}
	if got, ok := metricstest.Value(mfs, metrics.LastSuccess, h); !ok || got != unix(t1) {
		t.Errorf("last success %v (%v) after a failed run, want the earlier success %v", got, ok, unix(t1))
	}
	if got, _ := metricstest.Value(mfs, metrics.LastSuccess, map[string]string{"sweep": "purge"}); got != unix(t2) {
		t.Errorf("purge last success %v", got)
	}
	// A run that found the lock taken did nothing: no success, the lock shows.
	held := metrics.Result{Sweep: "hibernate", Finished: t3.Add(time.Minute), Report: engine.SweepReport{Sweep: "hibernate", Lock: "held-by-another-sweep"}}
	must(t, metrics.WriteTextfile(path, []metrics.Result{held}, log))
	mfs = metricstest.ReadTextfile(t, path)
	if got, _ := metricstest.Value(mfs, metrics.LockHeld, h); got != 1 {
		t.Errorf("lock held %v", got)
	}
	if got, _ := metricstest.Value(mfs, metrics.LastSuccess, h); got != unix(t1) {
		t.Errorf("last success %v after a run that did nothing", got)
	}

	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v (%v), want only the textfile: the write is temp file + rename", entries, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("textfile mode %v, want 0644 for the node exporter", fi.Mode().Perm())
	}
}

// Each sweep is pushed to /metrics/job/sailtui_sweep/sweep/<kind> with POST (which replaces
// only the pushed metrics: a failed run does not erase the last success), and the body parses.
func TestMetricsPushgateway(t *testing.T) {
	rec := &metricstest.PushRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	t1 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	m := metrics.Flags{Pushgateway: srv.URL}
	must(t, m.Validate())
	results := []metrics.Result{hibernateResult(t1, "broken"), {Sweep: "purge", Finished: t1, Report: engine.SweepReport{Sweep: "purge", Lock: "acquired", Purged: items("x"), FreedBytes: 7}}}
	must(t, m.Report(t.Context(), results, slog.New(slog.DiscardHandler)))
	reqs := rec.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d pushes, want one per sweep", len(reqs))
	}
	for i, want := range []string{"hibernate", "purge"} {
		r := reqs[i]
		if r.Method != http.MethodPost || r.Path != "/metrics/job/sailtui_sweep/sweep/"+want || r.Err != nil {
			t.Fatalf("push %d: %s %s (%v)", i, r.Method, r.Path, r.Err)
		}
		for name, mf := range r.Families {
			for _, s := range mf.GetMetric() {
				for _, lp := range s.GetLabel() {
					if lp.GetName() == "sweep" {
						t.Errorf("%s carries the grouping label sweep itself", name)
					}
				}
			}
		}
	}
	hib, purge := reqs[0].Families, reqs[1].Families
	if got, _ := metricstest.Value(hib, metrics.Items, map[string]string{"outcome": "failed"}); got != 1 {
		t.Errorf("hibernate failed = %v", got)
	}
	if got, _ := metricstest.Value(hib, metrics.Exit, nil); got != 1 {
		t.Errorf("hibernate exit = %v", got)
	}
	if _, ok := hib[metrics.LastSuccess]; ok {
		t.Errorf("a failed run pushed a last-success timestamp")
	}
	if got, _ := metricstest.Value(purge, metrics.LastSuccess, nil); got != unix(t1) {
		t.Errorf("purge last success = %v", got)
	}
	if got, _ := metricstest.Value(purge, metrics.Freed, nil); got != 7 {
		t.Errorf("purge freed = %v", got)
	}

	// A Pushgateway that refuses is an error that names it; nothing panics or hangs.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusBadRequest) }))
	defer bad.Close()
	if err := (metrics.Flags{Pushgateway: bad.URL}).Report(t.Context(), results[:1], slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--pushgateway") {
		t.Fatalf("push to a refusing gateway: %v", err)
	}
}
