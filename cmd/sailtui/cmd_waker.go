package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/backends/docker"
	"github.com/sailtui/sailtui/cmd/sailtui/internal/waker"
	"github.com/sailtui/sailtui/engine"
)

// wakerCmd is `sailtui waker`: wake on request (issue 35, item 4).
func wakerCmd(a *app) *cobra.Command {
	var (
		listen   string
		metrics  string
		domain   string
		cooldown time.Duration
		maxWakes int
	)
	cmd := &cobra.Command{
		Use:   "waker",
		Short: "Serve a project's hosts while it sleeps: a request wakes it and gets a page that reloads until it answers",
		Long: `The HTTP service a router sends a project's hosts to when nothing else serves them (Traefik: a
catch-all router of the lowest priority; kubernetes: the ingress controller's default backend).
A request for <slug>-<container>.<APP_DOMAIN> of a hibernated or stopped project starts its
wake (once, however many requests come) and gets 503 with Retry-After and a page that reloads
itself; a host of no project, or of a removed one, gets the same neutral 404. After a failed
wake a project's requests get that failure for --cooldown; at most --max-wakes wakes run at once.
On the embedded default there is no router to hand the request to: once the project runs the
page links the container's local URL.`,
		Example: "  sailtui waker --listen 127.0.0.1:8099\n  curl -H 'Host: shop-web.localhost' http://127.0.0.1:8099/",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.cfg.ReadOnly {
				return fmt.Errorf("the waker wakes projects; it cannot run --readonly: %w", engine.ErrBadInput)
			}
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			if domain == "" {
				domain = orDefault(a.cfg.AppDomain, docker.DefaultAppDomain)
				if a.cfg.Mode == "kubernetes" {
					domain = orDefault(a.cfg.AppDomain, "localhost")
				}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("waker: listen on %s: %w", listen, err)
			}
			ctx := cmd.Context()
			w := waker.New(ctx, eng, waker.Options{Domain: domain, Cooldown: cooldown, MaxWakes: maxWakes,
				Local: a.cfg.Mode == "local", Logger: a.log})
			srv := &http.Server{Handler: w, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
				WriteTimeout: 15 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10}
			done := make(chan error, 2)
			if metrics != "" {
				// An address of its own: the router sends every path of unknown hosts here.
				mln, err := net.Listen("tcp", metrics)
				if err != nil {
					ln.Close()
					return fmt.Errorf("waker: listen on %s for metrics: %w", metrics, err)
				}
				mux := http.NewServeMux()
				mux.Handle("/metrics", w.Metrics())
				msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
				defer msrv.Close()
				fmt.Fprintf(cmd.ErrOrStderr(), "waker: metrics at http://%s/metrics\n", mln.Addr())
				go func() { done <- msrv.Serve(mln) }()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "waker: serving <slug>-<container>.%s on http://%s\n", domain, ln.Addr())
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return fmt.Errorf("waker: %w", err)
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("waker: stop: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8099", "address to serve on")
	cmd.Flags().StringVar(&metrics, "metrics-listen", "", "address to serve Prometheus metrics on (sailtui_wake_seconds; off when empty)")
	cmd.Flags().StringVar(&domain, "domain", "", "the routes' domain (default APP_DOMAIN)")
	cmd.Flags().DurationVar(&cooldown, "cooldown", time.Minute, "after a failed wake, how long a project's requests only get the failure")
	cmd.Flags().IntVar(&maxWakes, "max-wakes", 4, "wakes in flight at once")
	return cmd
}
