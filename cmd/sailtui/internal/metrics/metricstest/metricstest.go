// Package metricstest reads back what package metrics wrote: a textfile parsed with the
// Prometheus parser, and a Pushgateway stand-in that keeps every push. The unit tests of metrics
// and the tests that run the binary check the same output through it.
package metricstest

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sailtui/sailtui/cmd/sailtui/internal/metrics"
)

// ReadTextfile parses a node-exporter textfile back.
func ReadTextfile(t testing.TB, path string) map[string]*dto.MetricFamily {
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

// Value finds the sample of family name whose labels include want.
func Value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
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
		return metrics.GaugeValue(m), true
	}
	return 0, false
}

// PushRecorder is a Pushgateway stand-in that keeps every request it got, decoded.
type PushRecorder struct {
	mu   sync.Mutex
	reqs []Pushed
}

// Pushed is one request a PushRecorder got.
type Pushed struct {
	Method, Path string
	Families     map[string]*dto.MetricFamily
	Err          error
}

func (p *PushRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Pushed{Method: r.Method, Path: r.URL.Path, Families: map[string]*dto.MetricFamily{}}
	dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if !errors.Is(err, io.EOF) {
				rec.Err = err
			}
			break
		}
		rec.Families[mf.GetName()] = mf
	}
	p.mu.Lock()
	p.reqs = append(p.reqs, rec)
	p.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// Requests are the pushes so far, in order.
func (p *PushRecorder) Requests() []Pushed {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Pushed(nil), p.reqs...)
}
