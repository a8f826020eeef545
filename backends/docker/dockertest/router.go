package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/internal/testproc"
)

// The router of docker mode (issue 34): Traefik, built from the module proxy by the tool module
// backends/docker/traefik/tools into .tools/bin/traefik-<version>, run as a container of a
// FROM scratch image on the docker provider with the reference platform's settings. sailtui
// connects it to every project network (SAILTUI_TRAEFIK_CONTAINER); it routes the containers
// that carry com.tesslate.routable=true by their traefik.* labels.

// TraefikVersion is the Traefik the Makefile builds (TRAEFIK_VERSION).
const TraefikVersion = "v3.6.12"

// RouterRepo is the router image's repository; its tag is the hash of what is in it.
const RouterRepo = "sailtui-traefik"

// TraefikBinary is the Traefik `make tools` builds into the repository's .tools/bin.
func TraefikBinary() (string, error) {
	root, err := testproc.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("find Traefik: %w", err)
	}
	bin := filepath.Join(root, ".tools", "bin", "traefik-"+TraefikVersion)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("the router needs Traefik %s, which is not built (%w): run `make tools` (about 16 min the first time)", TraefikVersion, err)
	}
	return bin, nil
}

// RouterArgs are Traefik's arguments: the docker provider with the reference platform's
// settings (nothing routed unless it says so, and only what carries com.tesslate.routable),
// one HTTP entry point on :80, and /ping on it for a readiness check.
func RouterArgs() []string {
	return []string{
		"--providers.docker=true",
		"--providers.docker.exposedbydefault=false",
		"--providers.docker.constraints=Label(`com.tesslate.routable`,`true`)",
		"--entrypoints.web.address=:80",
		// Request counters per service on an entry point of their own (a /metrics on :80
		// would shadow every app's): SAILTUI_ROUTER_METRICS_URL, traffic as activity.
		"--entrypoints.metrics.address=:8082",
		"--metrics.prometheus=true",
		"--metrics.prometheus.entrypoint=metrics",
		"--ping=true",
		"--ping.entrypoint=web",
		"--log.level=INFO",
		"--log.nocolor=true",
	}
}

// RouterImage builds (unless an image of the same content exists) the router image: FROM
// scratch, the Traefik binary bin as /traefik with, when it is linked dynamically (a build with
// cgo), the shared libraries it links, and returns its reference.
func RouterImage(ctx context.Context, cli *client.Client, bin string) (string, error) {
	traefik, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("router image: %w", err)
	}
	host := hostFiles{dirs: map[string]bool{"rootfs/": true}, files: map[string]bool{}}
	dynamic, err := isDynamic(bin)
	if err != nil {
		return "", err
	}
	if dynamic {
		if err := host.addLibraries(bin); err != nil {
			return "", fmt.Errorf("router image: %w", err)
		}
	}
	dockerfile := "FROM scratch\nCOPY rootfs/ /\nEXPOSE 80\nENTRYPOINT [\"/traefik\"]\n"
	entries := []contextEntry{
		{tar.Header{Name: "Dockerfile", Typeflag: tar.TypeReg, Mode: 0o644}, []byte(dockerfile)},
		{tar.Header{Name: "rootfs/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "rootfs/traefik", Typeflag: tar.TypeReg, Mode: 0o755}, traefik},
		{tar.Header{Name: "rootfs/tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
	}
	entries = append(entries, host.entries...)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := sha256.New()
	for _, e := range entries {
		e.h.ModTime = time.Unix(0, 0)
		e.h.Size = int64(len(e.body))
		if err := tw.WriteHeader(&e.h); err != nil {
			return "", fmt.Errorf("router image: %w", err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return "", fmt.Errorf("router image: %w", err)
		}
		fmt.Fprintf(h, "%s %o %d\n", e.h.Name, e.h.Mode, len(e.body))
		h.Write(e.body)
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("router image: %w", err)
	}
	ref := RouterRepo + ":" + hex.EncodeToString(h.Sum(nil))[:16]
	if ok, err := imageExists(ctx, cli, ref); err != nil || ok {
		return ref, err
	}
	if err := buildImage(ctx, cli, &buf, []string{ref, RouterRepo + ":" + TraefikVersion},
		map[string]string{"org.opencontainers.image.title": "sailtui router (Traefik " + TraefikVersion + ")"}); err != nil {
		return "", err
	}
	return ref, nil
}

// isDynamic says whether the ELF file bin asks for a program interpreter (the dynamic loader).
func isDynamic(bin string) (bool, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return false, fmt.Errorf("router image: %s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true, nil
		}
	}
	return false, nil
}

// RouterSpec places a router container.
type RouterSpec struct {
	Name  string
	Image string
	// Host and Port are where its port 80 is published: Host defaults to 127.0.0.1, Port 0
	// lets the engine pick.
	Host string
	Port int
	// Labels are put on the container (a test's Label, for its cleanup).
	Labels map[string]string
	// Restart brings it back after a daemon restart (make router), as sailtui's containers.
	Restart bool
	// Waker, when set, is where the router sends every host nothing else serves (a
	// catch-all of the lowest priority): `sailtui waker`, as the router's container reaches it
	// (host.docker.internal is the host). ConfigDir is the host directory its file-provider
	// configuration is written to and mounted from.
	Waker, ConfigDir string
}

// routerArgs are RouterArgs with, for a waker, the file provider of its catch-all.
func routerArgs(spec RouterSpec) []string {
	args := RouterArgs()
	if spec.Waker != "" {
		args = append(args, "--providers.file.directory=/etc/sailtui-router", "--providers.file.watch=false")
	}
	return args
}

// wakerConfig is the catch-all: every host, priority 1, so any route of a running container
// (a longer rule, a higher priority) wins over it.
func wakerConfig(url string) string {
	return fmt.Sprintf(`http:
  routers:
    sailtui-waker:
      rule: "HostRegexp(%[2]s.+%[2]s)"
      priority: 1
      entryPoints: [web]
      service: sailtui-waker
  services:
    sailtui-waker:
      loadBalancer:
        passHostHeader: true
        servers: [{url: %[1]q}]
`, url, "`")
}

// RouterLabel marks a router container with the image it runs, so a second `make router`
// leaves a running one of the same image alone and replaces one of another.
const RouterLabel = "sailtui.router.image"

// StartRouter makes sure a router runs as spec says and returns the host port its :80 is
// published on. One of that name that runs spec.Image with RouterArgs is left as it is (started
// if stopped); one of another image or other arguments is replaced.
func StartRouter(ctx context.Context, cli *client.Client, spec RouterSpec) (int, error) {
	if spec.Host == "" {
		spec.Host = "127.0.0.1"
	}
	hostIP, err := netip.ParseAddr(spec.Host)
	if err != nil {
		return 0, fmt.Errorf("router address %q: %w", spec.Host, err)
	}
	ins, err := cli.ContainerInspect(ctx, spec.Name, client.ContainerInspectOptions{})
	switch {
	case err == nil && ins.Container.Config != nil && ins.Container.Config.Labels[RouterLabel] == spec.Image &&
		slices.Equal(ins.Container.Config.Cmd, routerArgs(spec)):
		if ins.Container.State == nil || !ins.Container.State.Running {
			if _, err := cli.ContainerStart(ctx, spec.Name, client.ContainerStartOptions{}); err != nil {
				return 0, fmt.Errorf("start the router %s: %w", spec.Name, err)
			}
		}
		return routerPort(ctx, cli, spec.Name)
	case err == nil:
		if _, err := cli.ContainerRemove(ctx, spec.Name, client.ContainerRemoveOptions{Force: true}); err != nil {
			return 0, fmt.Errorf("replace the router %s: %w", spec.Name, err)
		}
	case !cerrdefs.IsNotFound(err):
		return 0, fmt.Errorf("inspect the router %s: %w", spec.Name, err)
	}
	labels := map[string]string{RouterLabel: spec.Image}
	maps.Copy(labels, spec.Labels)
	port, _ := network.ParsePort("80/tcp")
	metrics, _ := network.ParsePort("8082/tcp")
	hostPort := ""
	if spec.Port > 0 {
		hostPort = strconv.Itoa(spec.Port)
	}
	mounts := []mount.Mount{{Type: mount.TypeBind, Source: "/var/run/docker.sock", Target: "/var/run/docker.sock", ReadOnly: true}}
	var extraHosts []string
	if spec.Waker != "" {
		if spec.ConfigDir == "" {
			return 0, fmt.Errorf("router %s: a waker needs a ConfigDir for its configuration", spec.Name)
		}
		if err := os.MkdirAll(spec.ConfigDir, 0o755); err != nil {
			return 0, fmt.Errorf("router %s: %w", spec.Name, err)
		}
		if err := os.WriteFile(filepath.Join(spec.ConfigDir, "waker.yml"), []byte(wakerConfig(spec.Waker)), 0o644); err != nil {
			return 0, fmt.Errorf("router %s: %w", spec.Name, err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: spec.ConfigDir, Target: "/etc/sailtui-router", ReadOnly: true})
		extraHosts = []string{"host.docker.internal:host-gateway"}
	}
	restart := container.RestartPolicy{}
	if spec.Restart {
		restart.Name = container.RestartPolicyUnlessStopped
	}
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: spec.Name,
		Config: &container.Config{
			Image:        spec.Image,
			Cmd:          routerArgs(spec),
			ExposedPorts: network.PortSet{port: {}, metrics: {}},
			Labels:       labels,
		},
		HostConfig: &container.HostConfig{
			// The docker provider reads the engine's containers and events; read-only is
			// all it needs of the socket's file (the API itself is not made read-only).
			Mounts:        mounts,
			ExtraHosts:    extraHosts,
			PortBindings:  network.PortMap{port: {{HostIP: hostIP, HostPort: hostPort}}, metrics: {{HostIP: hostIP}}},
			RestartPolicy: restart,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("create the router %s: %w", spec.Name, err)
	}
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		_, _ = cli.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true})
		return 0, fmt.Errorf("start the router %s: %w", spec.Name, err)
	}
	return routerPort(ctx, cli, spec.Name)
}

// routerPort is the host port the router's :80 is published on.
func routerPort(ctx context.Context, cli *client.Client, name string) (int, error) {
	return publishedPort(ctx, cli, name, 80)
}

// RouterMetricsPort is the host port the router's metrics entry point (:8082) is published on.
func RouterMetricsPort(ctx context.Context, cli *client.Client, name string) (int, error) {
	return publishedPort(ctx, cli, name, 8082)
}

func publishedPort(ctx context.Context, cli *client.Client, name string, want uint16) (int, error) {
	ins, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("inspect the router %s: %w", name, err)
	}
	if ns := ins.Container.NetworkSettings; ns != nil {
		for p, bs := range ns.Ports {
			if p.Num() != want {
				continue
			}
			for _, b := range bs {
				if n, err := strconv.Atoi(b.HostPort); err == nil && n > 0 {
					return n, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("the router %s has no published port for :%d", name, want)
}
