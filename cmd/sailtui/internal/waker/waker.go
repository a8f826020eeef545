// Package waker is `sailtui waker`: the HTTP service a router sends a project's hosts to when
// nothing else serves them (Traefik: a catch-all router of the lowest priority; kubernetes: a
// default backend). A request for a hibernated or stopped project starts its wake, once, and
// gets a small page that refreshes itself until the project answers. Every request is hostile:
// an unknown host, a deleted project's and a malformed one get the same neutral 404, wakes are
// rate-limited per project and in number, and nothing of the request reaches a page unescaped.
package waker

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sailtui/sailtui/engine"
)

// Engine is what the waker asks of sailtui's engine.
type Engine interface {
	ProjectForHost(ctx context.Context, host, domain string) (engine.Project, engine.Container, error)
	Wake(ctx context.Context, ref string) (engine.Project, error)
	StartProject(ctx context.Context, ref string) (engine.Project, error)
	Containers(ctx context.Context, ref string) (engine.Project, []engine.ContainerView, error)
	Touch(ctx context.Context, ref, source string) (engine.Project, error)
	Snapshots(ctx context.Context, ref string, includeDeleted bool) ([]engine.Snapshot, error)
}

// Options configures a Waker.
type Options struct {
	// Domain is the routes' domain (APP_DOMAIN): hosts are <slug>-<container>.<Domain>.
	Domain string
	// Cooldown is how long after a failed wake a project's requests only get the failure.
	Cooldown time.Duration
	// MaxWakes caps the wakes in flight; a request past it is asked to come back.
	MaxWakes int
	// Local: no router hands the request on once the project answers (the embedded default),
	// so the page links the container's local URL instead.
	Local  bool
	Logger *slog.Logger
}

// Waker is the handler.
type Waker struct {
	eng  Engine
	opt  Options
	base context.Context

	mu       sync.Mutex
	inFlight map[string]bool      // project id → a wake is running
	failed   map[string]failure   // project id → the last wake's failure
	recent   []time.Duration      // the last wakes' durations, for the page's estimate
	wakes    int                  // wakes started, for tests and the log
	started  map[string]time.Time // project id → when the running wake began

	registry *prometheus.Registry
	took     *prometheus.HistogramVec
}

// WakeSeconds is the histogram of wakes by request, from the first request to the project's
// answer, by the path the project came back by: its hibernation snapshot's backend ("csi",
// "archive"), or "warm" when it only had to be started.
const WakeSeconds = "sailtui_wake_seconds"

type failure struct {
	at  time.Time
	err string
}

// New returns the handler; wakes run under base (they outlive the request that began them).
func New(base context.Context, eng Engine, opt Options) *Waker {
	if opt.Cooldown <= 0 {
		opt.Cooldown = time.Minute
	}
	if opt.MaxWakes <= 0 {
		opt.MaxWakes = 4
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Waker{eng: eng, opt: opt, base: base, inFlight: map[string]bool{}, failed: map[string]failure{}, started: map[string]time.Time{},
		registry: prometheus.NewRegistry(),
		took: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    WakeSeconds,
			Help:    "Wakes by request, from the first request to the project's answer, by the path it came back by.",
			Buckets: []float64{1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 300},
		}, []string{"path"}),
	}
	w.registry.MustRegister(w.took)
	return w
}

// Metrics serves the waker's Prometheus metrics. It belongs on an address of its own: the
// router sends every path of every unknown host to the waker's.
func (w *Waker) Metrics() http.Handler {
	return promhttp.HandlerFor(w.registry, promhttp.HandlerOpts{})
}

// path is how p will come back: its hibernation snapshot's backend, or warm.
func (w *Waker) path(ctx context.Context, p engine.Project, start bool) string {
	if start || p.HibernationSnapshot == "" {
		return "warm"
	}
	snaps, err := w.eng.Snapshots(ctx, p.ID, false)
	if err != nil {
		return "unknown"
	}
	for _, s := range snaps {
		if s.ID == p.HibernationSnapshot && s.Backend != "" {
			return s.Backend
		}
	}
	return "unknown"
}

// Wakes is how many wakes this waker began.
func (w *Waker) Wakes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wakes
}

const notFound = "no such environment\n"

func (w *Waker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Cache-Control", "no-store")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rw.Header().Set("Allow", "GET, HEAD")
		http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	p, c, err := w.eng.ProjectForHost(ctx, r.Host, w.opt.Domain)
	if err != nil {
		if !errors.Is(err, engine.ErrNotFound) {
			w.opt.Logger.Warn("waker: find the project of a host", "err", err)
		}
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(rw, notFound)
		return
	}
	switch p.Status {
	case engine.StatusHibernated:
		w.wake(p, false)
	case engine.StatusActive:
		if url, up := w.running(ctx, p, c); up {
			w.answering(rw, r, p, c, url)
			return
		}
		w.wake(p, true)
	case engine.StatusFailed:
		// Why is the operator's to read (sailtui doctor, project history), not the internet's.
		w.page(rw, r, http.StatusServiceUnavailable, 60, p, "needs its operator: it cannot be woken from here")
		return
	default:
		// Being hibernated, restored or deleted right now: come back in a moment.
	}
	w.mu.Lock()
	f, failedRecently := w.failed[p.ID]
	w.mu.Unlock()
	if failedRecently && time.Since(f.at) < w.opt.Cooldown {
		// The error names hosts, processes and paths: it is logged, the page only says when.
		w.page(rw, r, http.StatusServiceUnavailable, int(w.opt.Cooldown.Seconds()), p,
			fmt.Sprintf("could not be woken just now; it is tried again after %s", f.at.Add(w.opt.Cooldown).UTC().Format("15:04:05 UTC")))
		return
	}
	w.page(rw, r, http.StatusServiceUnavailable, w.estimate(), p, "is waking up")
}

// running reports whether c runs and answers, with where it does.
func (w *Waker) running(ctx context.Context, p engine.Project, c engine.Container) (string, bool) {
	_, views, err := w.eng.Containers(ctx, p.ID)
	if err != nil {
		return "", false
	}
	for _, v := range views {
		if v.Container.Name == c.Name && v.Status.State == engine.ContainerRunning {
			return v.Status.LocalURL, true
		}
	}
	return "", false
}

// wake starts the project's wake (start, when it is active with its containers down) unless
// one runs, one failed within the cooldown, or too many run: concurrent requests share one.
func (w *Waker) wake(p engine.Project, start bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inFlight[p.ID] || len(w.inFlight) >= w.opt.MaxWakes {
		return
	}
	if f, ok := w.failed[p.ID]; ok && time.Since(f.at) < w.opt.Cooldown {
		return
	}
	w.inFlight[p.ID] = true
	w.started[p.ID] = time.Now()
	w.wakes++
	go func() {
		ctx := context.WithoutCancel(w.base)
		began := time.Now()
		path := w.path(ctx, p, start)
		var err error
		if start {
			_, err = w.eng.StartProject(ctx, p.ID)
		} else {
			_, err = w.eng.Wake(ctx, p.ID)
		}
		if err == nil {
			// A wake by request is the user's activity, through the door it came by.
			_, _ = w.eng.Touch(ctx, p.ID, engine.SourceHTTP)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.inFlight, p.ID)
		delete(w.started, p.ID)
		if err != nil {
			w.failed[p.ID] = failure{at: time.Now(), err: err.Error()}
			w.opt.Logger.Warn("waker: wake failed", "project", p.Slug, "err", err)
			return
		}
		delete(w.failed, p.ID)
		w.took.WithLabelValues(path).Observe(time.Since(began).Seconds())
		w.recent = append(w.recent, time.Since(began))
		if len(w.recent) > 9 {
			w.recent = w.recent[1:]
		}
		w.opt.Logger.Info("waker: woke", "project", p.Slug, "took", time.Since(began).Round(time.Millisecond))
	}()
}

// estimate is the median of the recent wakes in seconds (5 before any), the page's refresh.
func (w *Waker) estimate() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.recent) == 0 {
		return 5
	}
	ds := slices.Clone(w.recent)
	slices.Sort(ds)
	return max(1, int(ds[len(ds)/2].Round(time.Second).Seconds()))
}

// answering is a request for a project that runs: behind a router the route is not up yet
// (come back in a second); on the embedded default the page links the container itself.
func (w *Waker) answering(rw http.ResponseWriter, r *http.Request, p engine.Project, c engine.Container, url string) {
	if w.opt.Local && url != "" {
		w.page(rw, r, http.StatusOK, 0, p, "is up at "+url)
		return
	}
	w.page(rw, r, http.StatusServiceUnavailable, 1, p, "is up; its route is coming")
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8">{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}<title>{{.Slug}}</title>
<style>body{font:16px system-ui,sans-serif;margin:20vh auto;max-width:36em;color:#333}</style></head>
<body><h1>{{.Slug}} {{.What}}</h1>{{if .Link}}<p><a href="{{.Link}}">{{.Link}}</a></p>{{else if .Refresh}}<p>This page reloads in about {{.Refresh}} s.</p>{{end}}</body></html>
`))

// page answers a browser with a page that reloads itself, anything else with one line.
func (w *Waker) page(rw http.ResponseWriter, r *http.Request, status, retry int, p engine.Project, what string) {
	link := ""
	if u, ok := strings.CutPrefix(what, "is up at "); ok {
		what, link = "is up", u
	}
	if retry > 0 {
		rw.Header().Set("Retry-After", fmt.Sprint(retry))
	}
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.WriteHeader(status)
		if r.Method != http.MethodHead {
			_ = pageTmpl.Execute(rw, struct {
				Slug, What, Link string
				Refresh          int
			}{p.Slug, what, link, retry})
		}
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.WriteHeader(status)
	if r.Method != http.MethodHead {
		line := p.Slug + " " + what
		if link != "" {
			line += " " + link
		}
		if retry > 0 {
			line += fmt.Sprintf("; retry in %d s", retry)
		}
		fmt.Fprintln(rw, line)
	}
}
