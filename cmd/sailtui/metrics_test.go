package main

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sailtui/sailtui/engine"
)

// readTextfile parses a node-exporter textfile back.
func readTextfile(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("the textfile does not parse: %v", err)
	}
	return mfs
}

// value finds the sample of family name whose labels include want.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return gaugeValue(m), true
	}
	return 0, false
}

func items(slugs ...string) []engine.SweepItem {
	out := []engine.SweepItem{}
	for _, s := range slugs {
		out = append(out, engine.SweepItem{Slug: s, ID: s, Reason: "why " + s})
	}
	return out
}

func hibernateResult(finished time.Time, failed ...string) sweepResult {
	r := sweepResult{sweep: "hibernate", finished: finished, duration: 1500 * time.Millisecond, rep: engine.SweepReport{
		Sweep: "hibernate", Lock: "acquired", Selected: 5, Hibernated: items("a", "b"), Skipped: items("c"),
		Recovered: items("d"), Deferred: items("e"), Failed: items(failed...),
	}}
	if len(failed) > 0 {
		r.exit = 1
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

	must(t, writeTextfile(path, []sweepResult{hibernateResult(t1)}, log))
	mfs := readTextfile(t, path)
	h := map[string]string{"sweep": "hibernate"}
	for outcome, want := range map[string]float64{"selected": 5, "hibernated": 2, "skipped": 1, "recovered": 1, "deferred": 1, "failed": 0, "purged": 0, "stopped": 0} {
		if got, ok := value(mfs, metricItems, map[string]string{"sweep": "hibernate", "outcome": outcome}); !ok || got != want {
			t.Errorf("%s{outcome=%s} = %v (%v), want %v", metricItems, outcome, got, ok, want)
		}
	}
	checks := []struct {
		name string
		want float64
	}{{metricDuration, 1.5}, {metricLastRun, unix(t1)}, {metricLastSuccess, unix(t1)}, {metricExit, 0}, {metricLockHeld, 0}, {metricFreed, 0}}
	for _, c := range checks {
		if got, ok := value(mfs, c.name, h); !ok || got != c.want {
			t.Errorf("%s = %v (%v), want %v", c.name, got, ok, c.want)
		}
	}
	if mfs[metricItems].GetType() != dto.MetricType_GAUGE || mfs[metricItems].GetHelp() == "" {
		t.Errorf("%s: type %s, help %q", metricItems, mfs[metricItems].GetType(), mfs[metricItems].GetHelp())
	}

	// A purge run writes its own series and keeps the hibernation sweep's.
	t2 := t1.Add(time.Hour)
	purge := sweepResult{sweep: "purge", finished: t2, duration: time.Second, rep: engine.SweepReport{
		Sweep: "purge", Lock: "acquired", Selected: 3, Purged: items("x", "y", "z"), FreedBytes: 12345}}
	must(t, writeTextfile(path, []sweepResult{purge}, log))
	mfs = readTextfile(t, path)
	if got, _ := value(mfs, metricFreed, map[string]string{"sweep": "purge"}); got != 12345 {
		t.Errorf("purge freed %v", got)
	}
	if got, _ := value(mfs, metricItems, map[string]string{"sweep": "purge", "outcome": "purged"}); got != 3 {
		t.Errorf("purged %v", got)
	}
	if got, ok := value(mfs, metricItems, map[string]string{"sweep": "hibernate", "outcome": "hibernated"}); !ok || got != 2 {
		t.Errorf("the hibernation sweep's series were not kept: %v %v", got, ok)
	}

	// A failed hibernation run: exit status 1, its counts replaced, its last success kept.
	t3 := t2.Add(time.Hour)
	must(t, writeTextfile(path, []sweepResult{hibernateResult(t3, "f1", "f2")}, log))
	mfs = readTextfile(t, path)
	if got, _ := value(mfs, metricExit, h); got != 1 {
		t.Errorf("exit status %v after a failed run", got)
	}
	if got, _ := value(mfs, metricItems, map[string]string{"sweep": "hibernate", "outcome": "failed"}); got != 2 {
		t.Errorf("failed %v", got)
	}
	if got, _ := value(mfs, metricLastRun, h); got != unix(t3) {
		t.Errorf("last run %v, want %v", got, unix(t3))
	}
	if got, ok := value(mfs, metricLastSuccess, h); !ok || got != unix(t1) {
		t.Errorf("last success %v (%v) after a failed run, want the earlier success %v", got, ok, unix(t1))
	}
	if got, _ := value(mfs, metricLastSuccess, map[string]string{"sweep": "purge"}); got != unix(t2) {
		t.Errorf("purge last success %v", got)
	}
	// A run that found the lock taken did nothing: no success, the lock shows.
	held := sweepResult{sweep: "hibernate", finished: t3.Add(time.Minute), rep: engine.SweepReport{Sweep: "hibernate", Lock: "held-by-another-sweep"}}
	must(t, writeTextfile(path, []sweepResult{held}, log))
	mfs = readTextfile(t, path)
	if got, _ := value(mfs, metricLockHeld, h); got != 1 {
		t.Errorf("lock held %v", got)
	}
	if got, _ := value(mfs, metricLastSuccess, h); got != unix(t1) {
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

// pushRecorder is a Pushgateway stand-in that keeps every request it got, decoded.
type pushRecorder struct {
	mu   sync.Mutex
	reqs []pushed
}

type pushed struct {
	method, path string
	families     map[string]*dto.MetricFamily
	err          error
}

func (p *pushRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := pushed{method: r.Method, path: r.URL.Path, families: map[string]*dto.MetricFamily{}}
	dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if !errors.Is(err, io.EOF) {
				rec.err = err
			}
			break
		}
		rec.families[mf.GetName()] = mf
	}
	p.mu.Lock()
	p.reqs = append(p.reqs, rec)
	p.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (p *pushRecorder) requests() []pushed {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]pushed(nil), p.reqs...)
}

// Each sweep is pushed to /metrics/job/sailtui_sweep/sweep/<kind> with POST (which replaces
// only the pushed metrics: a failed run does not erase the last success), and the body parses.
func TestMetricsPushgateway(t *testing.T) {
	rec := &pushRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	t1 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	m := metricsFlags{pushgateway: srv.URL}
	must(t, m.validate())
	results := []sweepResult{hibernateResult(t1, "broken"), {sweep: "purge", finished: t1, rep: engine.SweepReport{Sweep: "purge", Lock: "acquired", Purged: items("x"), FreedBytes: 7}}}
	must(t, m.report(t.Context(), results, slog.New(slog.DiscardHandler)))
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d pushes, want one per sweep", len(reqs))
	}
	for i, want := range []string{"hibernate", "purge"} {
		r := reqs[i]
		if r.method != http.MethodPost || r.path != "/metrics/job/sailtui_sweep/sweep/"+want || r.err != nil {
			t.Fatalf("push %d: %s %s (%v)", i, r.method, r.path, r.err)
		}
		for name, mf := range r.families {
			for _, s := range mf.GetMetric() {
				for _, lp := range s.GetLabel() {
					if lp.GetName() == "sweep" {
						t.Errorf("%s carries the grouping label sweep itself", name)
					}
				}
			}
		}
	}
	hib, purge := reqs[0].families, reqs[1].families
	if got, _ := value(hib, metricItems, map[string]string{"outcome": "failed"}); got != 1 {
		t.Errorf("hibernate failed = %v", got)
	}
	if got, _ := value(hib, metricExit, nil); got != 1 {
		t.Errorf("hibernate exit = %v", got)
	}
	if _, ok := hib[metricLastSuccess]; ok {
		t.Errorf("a failed run pushed a last-success timestamp")
	}
	if got, _ := value(purge, metricLastSuccess, nil); got != unix(t1) {
		t.Errorf("purge last success = %v", got)
	}
	if got, _ := value(purge, metricFreed, nil); got != 7 {
		t.Errorf("purge freed = %v", got)
	}

	// A Pushgateway that refuses is an error that names it; nothing panics or hangs.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusBadRequest) }))
	defer bad.Close()
	if err := (metricsFlags{pushgateway: bad.URL}).report(t.Context(), results[:1], slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--pushgateway") {
		t.Fatalf("push to a refusing gateway: %v", err)
	}
}

// Through the command line: a headless run writes the textfile and pushes each sweep; bad
// destinations are refused before anything is touched.
func TestHeadlessMetrics(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "metered")
	rec := &pushRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "sweeps.prom")

	for _, bad := range [][]string{
		{"--metrics-textfile", filepath.Join(dir, "missing", "x.prom")},
		{"--metrics-textfile", dir},
		{"--pushgateway", "ftp://example.com"},
		{"--pushgateway", "pushgateway:9091"},
	} {
		r := c.run(append([]string{"--headless", "--sweep=hibernate", "--idle", "1ns"}, bad...)...)
		if r.code != 2 || !strings.Contains(r.stderr, strings.TrimPrefix(bad[0], "--")) {
			t.Fatalf("%v: exit %d, %s", bad, r.code, r.stderr)
		}
	}
	if r := c.run("projects", "ls", "--pushgateway", srv.URL); r.code == 0 {
		t.Fatalf("--pushgateway without --headless was accepted")
	}
	if st := c.project("metered").Status; st != "active" {
		t.Fatalf("a refused run changed the project: %s", st)
	}
	if len(rec.requests()) != 0 {
		t.Fatalf("a refused run pushed metrics")
	}

	c.headless("--sweep=all", "--idle", "1ns", "--metrics-textfile", path, "--pushgateway", srv.URL)
	mfs := readTextfile(t, path)
	if got, _ := value(mfs, metricItems, map[string]string{"sweep": "hibernate", "outcome": "hibernated"}); got != 1 {
		t.Errorf("textfile: hibernated %v, want 1", got)
	}
	for _, s := range []string{"hibernate", "purge"} {
		if got, ok := value(mfs, metricLastSuccess, map[string]string{"sweep": s}); !ok || time.Since(time.Unix(int64(got), 0)) > time.Minute {
			t.Errorf("textfile: %s last success %v (%v)", s, got, ok)
		}
		if got, ok := value(mfs, metricExit, map[string]string{"sweep": s}); !ok || got != 0 {
			t.Errorf("textfile: %s exit %v (%v)", s, got, ok)
		}
	}
	reqs := rec.requests()
	if len(reqs) != 2 || reqs[0].path != "/metrics/job/sailtui_sweep/sweep/hibernate" || reqs[1].path != "/metrics/job/sailtui_sweep/sweep/purge" {
		t.Fatalf("pushes: %+v", reqs)
	}
	if got, _ := value(reqs[0].families, metricItems, map[string]string{"outcome": "selected"}); got != 1 {
		t.Errorf("pushed selected %v, want 1", got)
	}
}
