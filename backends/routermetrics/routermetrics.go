// Package routermetrics reads a router's per-route request counters from its Prometheus
// endpoint, so that traffic through a project's URL counts as its activity: Traefik's
// traefik_service_requests_total (docker and kubernetes providers alike) and ingress-nginx's
// nginx_ingress_controller_requests. It parses with the Prometheus project's own text parser.
package routermetrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The families read, and the prefixes of the route names they give: Traefik names a route by
// its service ("shop-web@docker", "proj-<id>-dev-web-http@kubernetes"), ingress-nginx by the
// Ingress's namespace and name.
const (
	traefikRequests = "traefik_service_requests_total"
	nginxRequests   = "nginx_ingress_controller_requests"
	TraefikPrefix   = "traefik:"
	NginxPrefix     = "nginx:"
)

// maxBody bounds what is read of one answer: a router's metrics for thousands of routes are a
// few MiB; anything much larger is not what was asked for.
const maxBody = 64 << 20

// Reader reads one router's counters.
type Reader struct {
	url    string
	client *http.Client
}

// New checks rawURL (SAILTUI_ROUTER_METRICS_URL) and returns its reader.
func New(rawURL string) (*Reader, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("SAILTUI_ROUTER_METRICS_URL=%q: want the router's Prometheus endpoint, such as http://traefik:8082/metrics", rawURL)
	}
	return &Reader{url: rawURL, client: &http.Client{Timeout: 15 * time.Second}}, nil
}

// Describe names the router by its endpoint (the counters are kept under this name).
func (r *Reader) Describe() string { return "router " + r.url }

// ReadCounters returns each route's requests so far (all codes and methods summed). A router
// that has served nothing yet has no counters; an endpoint that is not a router's is an error.
func (r *Reader) ReadCounters(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", r.url, err)
	}
	// The text format: both routers serve it, and the parser reads it.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", r.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", r.url, resp.Status)
	}
	return Parse(io.LimitReader(resp.Body, maxBody))
}

// Parse reads the counters from a metrics text.
func Parse(in io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(in)
	if err != nil {
		return nil, fmt.Errorf("parse the router's metrics: %w", err)
	}
	router := false
	for name := range families {
		if strings.HasPrefix(name, "traefik_") || strings.HasPrefix(name, "nginx_ingress_controller_") {
			router = true
			break
		}
	}
	if !router {
		return nil, fmt.Errorf("no Traefik or ingress-nginx metrics there (Traefik: --metrics.prometheus=true and its entry point; ingress-nginx: the controller's :10254/metrics)")
	}
	out := map[string]float64{}
	if f := families[traefikRequests]; f != nil {
		for _, m := range f.GetMetric() {
			if svc := label(m.GetLabel(), "service"); svc != "" {
				out[TraefikPrefix+svc] += m.GetCounter().GetValue()
			}
		}
	}
	if f := families[nginxRequests]; f != nil {
		for _, m := range f.GetMetric() {
			ns, ing := label(m.GetLabel(), "namespace"), label(m.GetLabel(), "ingress")
			if ns != "" && ing != "" {
				out[NginxPrefix+ns+"/"+ing] += m.GetCounter().GetValue()
			}
		}
	}
	return out, nil
}

func label[L interface {
	GetName() string
	GetValue() string
}](ls []L, name string) string {
	for _, l := range ls {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
