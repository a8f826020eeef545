package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker"
	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/backends/sqlite"
	"github.com/sailtui/sailtui/engine"
)

// slowRuntime is a runtime whose projects exist once made and do nothing: the sweep benchmark
// measures the engine's scheduling, not a runtime. made holds the ids of projects whose storage
// is there (CreateProject refuses a name whose storage already exists).
type slowRuntime struct{ made *sync.Map }

func (slowRuntime) Mode() string { return "bench" }
func (r slowRuntime) EnsureProject(_ context.Context, p engine.Project) error {
	r.made.Store(p.ID, true)
	return nil
}
func (slowRuntime) StopContainer(context.Context, engine.Project, engine.Container) error {
	return nil
}
func (slowRuntime) StartContainer(context.Context, engine.Project, engine.Container, engine.StartSpec) (engine.ContainerStatus, error) {
	return engine.ContainerStatus{State: engine.ContainerRunning}, nil
}
func (slowRuntime) ContainerStatus(context.Context, engine.Project, engine.Container) (engine.ContainerStatus, error) {
	return engine.ContainerStatus{State: engine.ContainerStopped}, nil
}
func (slowRuntime) StopProject(context.Context, engine.Project, []engine.Container) error {
	return nil
}
func (r slowRuntime) DestroyProject(_ context.Context, p engine.Project, _ []engine.Container) error {
	r.made.Delete(p.ID)
	return nil
}
func (r slowRuntime) ProjectExists(_ context.Context, p engine.Project) (bool, error) {
	_, ok := r.made.Load(p.ID)
	return ok, nil
}
func (slowRuntime) ReadFile(context.Context, engine.Project, string, io.Writer) error {
	return engine.ErrNotFound
}
func (slowRuntime) WriteFile(context.Context, engine.Project, string, io.Reader) error { return nil }
func (slowRuntime) DeleteFile(context.Context, engine.Project, string) error           { return nil }
func (slowRuntime) ListFiles(context.Context, engine.Project, string) ([]engine.FileInfo, error) {
	return nil, nil
}
func (slowRuntime) Exec(context.Context, engine.Project, engine.Container, engine.ExecRequest) (engine.ExecResult, error) {
	return engine.ExecResult{}, nil
}
func (slowRuntime) Logs(context.Context, engine.Project, engine.Container, engine.LogOptions) (io.ReadCloser, error) {
	return io.NopCloser(nil), nil
}
func (slowRuntime) Describe(context.Context, engine.Project, []engine.Container) (string, error) {
	return "", nil
}

// slowVolumes takes `delay` to make each snapshot: the "runtime that takes 2 s per hibernate".
type slowVolumes struct{ delay time.Duration }

func (slowVolumes) Name() string { return "bench" }
func (v slowVolumes) Create(ctx context.Context, _ engine.Project, s engine.Snapshot) (engine.Snapshot, error) {
	select {
	case <-time.After(v.delay):
	case <-ctx.Done():
		return s, ctx.Err()
	}
	s.Location, s.SizeBytes = s.ID, 1
	return s, nil
}
func (slowVolumes) WaitReady(_ context.Context, s engine.Snapshot) (engine.Snapshot, error) {
	return s, nil
}
func (slowVolumes) Restore(context.Context, engine.Project, engine.Snapshot) error {
	return nil
}
func (slowVolumes) Delete(context.Context, engine.Snapshot) error { return nil }

// BenchmarkSweepWallTime: a sweep of 1,000 idle projects against a runtime that takes 2 s per
// hibernate, as a ratio to the ideal N × 2 s / concurrency (goal ≤ 1.15). SAILTUI_BENCH_PROJECTS
// and SAILTUI_BENCH_DELAY shrink it for a quick look.
func BenchmarkSweepWallTime(b *testing.B) {
	n, delay, conc := 1000, 2*time.Second, engine.DefaultSweepConcurrency
	if v := os.Getenv("SAILTUI_BENCH_PROJECTS"); v != "" {
		fmt.Sscan(v, &n)
	}
	if v := os.Getenv("SAILTUI_BENCH_DELAY"); v != "" {
		delay, _ = time.ParseDuration(v)
	}
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		eng, err := engine.New(engine.Config{Store: store, Runtime: slowRuntime{made: new(sync.Map)}, Volumes: slowVolumes{delay}, SweepConcurrency: conc})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if _, err := eng.CreateProject(ctx, engine.CreateRequest{Name: fmt.Sprintf("bench-%04d", i)}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		rep, err := eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: time.Now().Add(time.Hour)})
		wall := time.Since(start)
		b.StopTimer()
		if err != nil || len(rep.Hibernated) != n {
			b.Fatalf("sweep: %v, hibernated %d of %d, failed %v", err, len(rep.Hibernated), n, rep.Failed)
		}
		ideal := time.Duration(float64(n) * float64(delay) / float64(conc))
		ratio := wall.Seconds() / ideal.Seconds()
		b.ReportMetric(ratio, "x-ideal")
		b.ReportMetric(wall.Seconds(), "wall-s")
		fmt.Printf("sweep: %d projects, %s per hibernate, concurrency %d: wall %s vs ideal %s, ratio %.3fx (goal <= 1.15x)\n",
			n, delay, conc, wall.Round(time.Millisecond), ideal, ratio)
		store.Close()
	}
}

// BenchmarkDocker measures docker mode on the real Docker Engine against the same Engine API
// calls made bare with the docker client, so the ratios are the overhead of sailtui itself:
//   - start: StartProject of a created two-container project (whose network exists, as
//     CreateProject makes it) until both answer HTTP, beside bare create/start/inspect of the
//     two containers on an existing network and the same HTTP wait;
//   - hibernate: Hibernate (stop, archive, verify, teardown), beside bare stop+remove of the
//     two containers and removal of the network;
//   - wake: Wake (network, restore, start) until both answer HTTP, beside bare network
//     create + the bare start.
//
// Containers start one after the other on both sides, as the engine starts them in dependency
// order. Everything it creates is removed (by label) at the end of each iteration.
// `-benchtime 3x` averages three rounds.
func BenchmarkDocker(b *testing.B) {
	dcli := dockertest.Client(b)
	img := dockertest.Image(b, dcli)
	tok := dockertest.Token(b, dcli)
	state := b.TempDir()
	de := openDockerEngine(b, state, img, "sailtui-"+tok, nil)
	eng := de.eng
	ctx := context.Background()
	src := benchDockerSource(b)

	var start, hib, wake, bareNet, bareStart, bareStop time.Duration
	rounds := 0
	for b.Loop() {
		i := rounds
		rounds++
		b.StopTimer()
		slug := fmt.Sprintf("bench-%s-%d", tok, i)
		b.Cleanup(func() { dockertest.RemoveLabelled(b, dcli, "sailtui.project="+slug) })
		if _, err := eng.CreateProject(ctx, engine.CreateRequest{Name: slug, Owner: "tester", FromDir: src}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		t0 := time.Now()
		if _, err := eng.StartProject(ctx, slug); err != nil {
			b.Fatalf("start: %v", err)
		}
		benchWaitProject(b, eng, slug)
		start += time.Since(t0)

		t0 = time.Now()
		if _, err := eng.Hibernate(ctx, slug); err != nil {
			b.Fatalf("hibernate: %v", err)
		}
		hib += time.Since(t0)

		t0 = time.Now()
		if _, err := eng.Wake(ctx, slug); err != nil {
			b.Fatalf("wake: %v", err)
		}
		benchWaitProject(b, eng, slug)
		wake += time.Since(t0)

		b.StopTimer()
		dockertest.RemoveLabelled(b, dcli, "sailtui.project="+slug)
		nt, s, st := bareDockerRound(b, dcli, img, tok, src, i)
		bareNet += nt
		bareStart += s
		bareStop += st
		b.StartTimer()
	}
	n := float64(rounds)
	bareWake := bareNet + bareStart
	avg := func(d time.Duration) time.Duration { return time.Duration(float64(d) / n) }
	ratio := func(a, z time.Duration) float64 { return a.Seconds() / z.Seconds() }
	b.ReportMetric(avg(start).Seconds(), "start-s")
	b.ReportMetric(avg(hib).Seconds(), "hibernate-s")
	b.ReportMetric(avg(wake).Seconds(), "wake-s")
	b.ReportMetric(avg(bareStart).Seconds(), "bare-start-s")
	b.ReportMetric(avg(bareStop).Seconds(), "bare-stop-s")
	b.ReportMetric(avg(bareWake).Seconds(), "bare-wake-s")
	b.ReportMetric(ratio(start, bareStart), "start-x-bare")
	b.ReportMetric(ratio(hib, bareStop), "hibernate-x-bare")
	b.ReportMetric(ratio(wake, bareWake), "wake-x-bare")
	fmt.Printf("docker start-to-HTTP-ready, 2 containers (%d rounds): sailtui %s vs bare Engine API %s (create+start+inspect x2, HTTP wait): %.2fx\n",
		rounds, avg(start).Round(time.Millisecond), avg(bareStart).Round(time.Millisecond), ratio(start, bareStart))
	fmt.Printf("docker hibernate, 2 containers (%d rounds): sailtui %s (stop, archive, verify, teardown) vs bare Engine API %s (stop+remove x2, network remove): %.2fx\n",
		rounds, avg(hib).Round(time.Millisecond), avg(bareStop).Round(time.Millisecond), ratio(hib, bareStop))
	fmt.Printf("docker wake-to-HTTP-ready, 2 containers (%d rounds): sailtui %s (network, restore, start) vs bare Engine API %s (network create, create+start+inspect x2, HTTP wait): %.2fx\n",
		rounds, avg(wake).Round(time.Millisecond), avg(bareWake).Round(time.Millisecond), ratio(wake, bareWake))
}

// benchDockerSource is the two-container project of the docker tests: the root on port 8080
// and web (Vite, port 5173), both served by the image's devserver.
func benchDockerSource(tb testing.TB) string {
	tb.Helper()
	src := tb.TempDir()
	files := map[string]string{
		"TESSLATE.md":     "# App\n\n**Port**: 8080\n",
		"index.html":      "<h1>root app</h1>\n",
		"web/TESSLATE.md": "# Web\n\n## Development Server\n\n```bash\nexec sailtui devserver --dir . --port \"$PORT\"\n```\n\n## Framework Configuration\n\n**Frontend**: Vite + React\n",
		"web/index.html":  "<h1>web container</h1>\n",
		"web/src/main.js": "console.log('hi')\n",
	}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return src
}

// benchWaitProject waits until both containers of the project answer with their own page.
func benchWaitProject(tb testing.TB, eng *engine.Engine, slug string) {
	tb.Helper()
	_, views, err := eng.Containers(context.Background(), slug)
	if err != nil {
		tb.Fatal(err)
	}
	want := map[string]string{"app": "root app", "web": "web container"}
	for _, v := range views {
		if w, ok := want[v.Name]; ok {
			if v.Status.LocalURL == "" {
				tb.Fatalf("%s/%s has no local URL: %+v", slug, v.Name, v.Status)
			}
			benchWaitHTTP(tb, v.Status.LocalURL, w)
			delete(want, v.Name)
		}
	}
	if len(want) != 0 {
		tb.Fatalf("%s lacks containers %v", slug, want)
	}
}

// benchWaitHTTP polls url every 5 ms until it answers 200 with want in the body.
func benchWaitHTTP(tb testing.TB, url, want string) {
	tb.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := hc.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return
			}
			last = fmt.Sprintf("status %d body %q", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("%s never answered with %q: %s", url, want, last)
}

// bareDockerRound makes the Engine API calls of a two-container start and stop with the
// docker client and nothing else, the way the runtime makes them (same image, user, bind
// mount, published loopback port, init, stop timeout), and times them: the network's creation,
// the containers' start until both answer HTTP, and the stop and removal of all of it.
func bareDockerRound(tb testing.TB, dcli *client.Client, img, tok, src string, i int) (netCreate, start, stop time.Duration) {
	tb.Helper()
	ctx := context.Background()
	labels := map[string]string{dockertest.Label: tok}
	name := fmt.Sprintf("bare-%s-%d", tok, i)
	type svc struct{ name, dir, want string }
	svcs := []svc{{"app", ".", "root app"}, {"web", "web", "web container"}}
	ports := map[string]int{"app": 8080, "web": 5173}
	stopSecs := int(docker.DefaultStopTimeout / time.Second)
	initTrue := true

	t0 := time.Now()
	net, err := dcli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels})
	if err != nil {
		tb.Fatalf("bare: create network: %v", err)
	}
	netCreate = time.Since(t0)
	t0 = time.Now()
	ids := make([]string, len(svcs))
	urls := make([]string, len(svcs))
	for k, s := range svcs {
		port, err := network.ParsePort(fmt.Sprintf("%d/tcp", ports[s.name]))
		if err != nil {
			tb.Fatal(err)
		}
		res, err := dcli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name: name + "-" + s.name,
			Config: &container.Config{
				Image: img, User: fmt.Sprintf("%d:%d", dockertest.UID, dockertest.GID),
				Env:          []string{fmt.Sprintf("PORT=%d", ports[s.name])},
				WorkingDir:   path.Join(docker.DefaultMountPath, s.dir),
				Entrypoint:   []string{"sh", "-c", `exec sailtui devserver --dir . --port "$PORT"`},
				Cmd:          []string{},
				ExposedPorts: network.PortSet{port: {}},
				Labels:       labels,
				StopTimeout:  &stopSecs,
			},
			HostConfig: &container.HostConfig{
				Mounts:       []mount.Mount{{Type: mount.TypeBind, Source: src, Target: docker.DefaultMountPath}},
				NetworkMode:  container.NetworkMode(net.ID),
				PortBindings: network.PortMap{port: {{HostIP: netip.MustParseAddr(docker.DefaultPublishHost)}}},
				Init:         &initTrue,
			},
			NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
				net.ID: {Aliases: []string{s.name}},
			}},
		})
		if err != nil {
			tb.Fatalf("bare: create %s: %v", s.name, err)
		}
		ids[k] = res.ID
		if _, err := dcli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			tb.Fatalf("bare: start %s: %v", s.name, err)
		}
		ins, err := dcli.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
		if err != nil {
			tb.Fatalf("bare: inspect %s: %v", s.name, err)
		}
		for _, bs := range ins.Container.NetworkSettings.Ports {
			for _, bnd := range bs {
				if bnd.HostPort != "" {
					urls[k] = fmt.Sprintf("http://%s:%s/", docker.DefaultPublishHost, bnd.HostPort)
				}
			}
		}
		if urls[k] == "" {
			tb.Fatalf("bare: %s has no published port", s.name)
		}
	}
	for k, s := range svcs {
		benchWaitHTTP(tb, urls[k], s.want)
	}
	start = time.Since(t0)

	t0 = time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for k, id := range ids {
		wg.Go(func() {
			if _, err := dcli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &stopSecs}); err != nil {
				errs[k] = err
				return
			}
			_, errs[k] = dcli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("bare: stop: %v", err)
	}
	if _, err := dcli.NetworkRemove(ctx, net.ID, client.NetworkRemoveOptions{}); err != nil {
		tb.Fatalf("bare: remove network: %v", err)
	}
	stop = time.Since(t0)
	return netCreate, start, stop
}
