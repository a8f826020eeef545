// Command mkrouter starts and removes the router of docker mode for a person (`make router`,
// `make router-down`; issue 34): Traefik (.tools/bin/traefik-<version>, which `make tools`
// builds) in a container of a FROM scratch image, on the docker provider with the reference
// platform's settings, its :80 published on the host. `up` is idempotent (a running router of
// the same image is left alone) and ends with the export lines sailtui needs and the address
// to open; `down` removes it (its connections to project networks go with it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

func main() {
	fs := flag.NewFlagSet("mkrouter", flag.ExitOnError)
	name := fs.String("name", "sailtui-router", "the router container's name (what SAILTUI_TRAEFIK_CONTAINER says)")
	host := fs.String("host", "127.0.0.1", "the host address its port is published on")
	port := fs.Int("port", 80, "the host port; sailtui shows URLs without one, so 80 makes them open as shown")
	domain := fs.String("domain", "localhost", "APP_DOMAIN: routes are <slug>-<container>.<domain>")
	traefik := fs.String("traefik", "", "the Traefik binary (default .tools/bin/traefik-"+dockertest.TraefikVersion+")")
	waker := fs.String("waker", "", "send every host nothing else serves to `sailtui waker` at this port on the host (it must listen where containers reach the host, e.g. --listen 0.0.0.0:8099)")
	if len(os.Args) < 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: mkrouter up|down [flags]")
		os.Exit(2)
	}
	_ = fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if os.Args[1] == "up" {
		err = up(ctx, *name, *host, *port, *domain, *traefik, *waker)
	} else {
		err = down(ctx, *name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkrouter:", err)
		os.Exit(1)
	}
}

func up(ctx context.Context, name, host string, port int, domain, bin, waker string) error {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if bin == "" {
		if bin, err = dockertest.TraefikBinary(); err != nil {
			return err
		}
	}
	img, err := dockertest.RouterImage(ctx, cli, bin)
	if err != nil {
		return err
	}
	spec := dockertest.RouterSpec{Name: name, Image: img, Host: host, Port: port, Restart: true}
	if waker != "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("the waker's router configuration: %w", err)
		}
		spec.Waker = "http://host.docker.internal:" + waker
		spec.ConfigDir = filepath.Join(cache, "sailtui", "router-"+name)
	}
	got, err := dockertest.StartRouter(ctx, cli, spec)
	if err != nil {
		return err
	}
	if got != port {
		return fmt.Errorf("the router %s runs on port %d, not %d: make router-down first to move it", name, got, port)
	}
	if err := waitPing(ctx, fmt.Sprintf("http://%s:%d/ping", host, got)); err != nil {
		return fmt.Errorf("the router %s does not answer (docker logs %s): %w", name, name, err)
	}
	addr := ""
	if port != 80 {
		addr = fmt.Sprintf(":%d", port)
	}
	fmt.Printf("router %s (Traefik %s, image %s) on %s:%d\n", name, dockertest.TraefikVersion, img, host, got)
	fmt.Println("export DEPLOYMENT_MODE=docker")
	fmt.Printf("export SAILTUI_TRAEFIK_CONTAINER=%s\n", name)
	fmt.Printf("export APP_DOMAIN=%s\n", domain)
	if mp, err := dockertest.RouterMetricsPort(ctx, cli, name); err == nil {
		// Requests through the router are activity: the sweep reads its counters here.
		fmt.Printf("export SAILTUI_ROUTER_METRICS_URL=http://%s:%d/metrics\n", host, mp)
	}
	fmt.Printf("open http://<slug>-<container>.%s%s/\n", domain, addr)
	return nil
}

// waitPing waits for Traefik's /ping to answer 200.
func waitPing(ctx context.Context, url string) error {
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("%s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if last == nil {
		last = errors.New("no answer")
	}
	return last
}

func down(ctx context.Context, name string) error {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	ins, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		fmt.Printf("no router %s\n", name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect %s: %w", name, err)
	}
	if ins.Container.Config == nil || ins.Container.Config.Labels[dockertest.RouterLabel] == "" {
		return fmt.Errorf("the container %s is not a router mkrouter started: left alone", name)
	}
	if _, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	fmt.Printf("router %s removed\n", name)
	return nil
}
