package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics"
	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics/metricstest"
)

// Through the command line: a headless run writes the textfile and pushes each sweep; bad
// destinations are refused before anything is touched.
func TestHeadlessMetrics(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "metered")
	rec := &metricstest.PushRecorder{}
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
	if len(rec.Requests()) != 0 {
		t.Fatalf("a refused run pushed metrics")
	}

	c.headless("--sweep=all", "--idle", "1ns", "--metrics-textfile", path, "--pushgateway", srv.URL)
	mfs := metricstest.ReadTextfile(t, path)
	if got, _ := metricstest.Value(mfs, metrics.Items, map[string]string{"sweep": "hibernate", "outcome": "hibernated"}); got != 1 {
		t.Errorf("textfile: hibernated %v, want 1", got)
	}
	for _, s := range []string{"hibernate", "purge"} {
		if got, ok := metricstest.Value(mfs, metrics.LastSuccess, map[string]string{"sweep": s}); !ok || time.Since(time.Unix(int64(got), 0)) > time.Minute {
			t.Errorf("textfile: %s last success %v (%v)", s, got, ok)
		}
		if got, ok := metricstest.Value(mfs, metrics.Exit, map[string]string{"sweep": s}); !ok || got != 0 {
			t.Errorf("textfile: %s exit %v (%v)", s, got, ok)
		}
	}
	reqs := rec.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/metrics/job/sailtui_sweep/sweep/hibernate" || reqs[1].Path != "/metrics/job/sailtui_sweep/sweep/purge" {
		t.Fatalf("pushes: %+v", reqs)
	}
	if got, _ := metricstest.Value(reqs[0].Families, metrics.Items, map[string]string{"outcome": "selected"}); got != 1 {
		t.Errorf("pushed selected %v, want 1", got)
	}
}
