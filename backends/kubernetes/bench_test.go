package kubernetes_test

import (
	"context"

	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

// countingTransport counts the requests a client makes.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// The fewest requests the objects of a two-container project need, each object written once
// and each wait one watch:
//   - start: namespace, NetworkPolicy, RoleBinding, PVC, file-manager Deployment, and per
//     container a Service, an Ingress and a Deployment = 5 + 2×3 = 11;
//   - hibernate: scale the two Deployments to 0 and watch each go (4), create the VolumeSnapshot
//     and watch it ready (2), set its content to Retain (1), delete the Deployments and the
//     namespace (2; the deletion is not waited for) = 9;
//   - wake: namespace, NetworkPolicy, RoleBinding (3), pre-provisioned content, VolumeSnapshot and
//     a watch for ready (3), PVC and file manager (2), and per container Service, Ingress and
//     Deployment (6) = 14.
const (
	minStartRequests     = 11
	minHibernateRequests = 9
	minWakeRequests      = 14
)

// BenchmarkKubernetes measures API requests and wall time of start, hibernate and wake of a
// two-container project on the real API server, beside the minimum number of requests.
func BenchmarkKubernetes(b *testing.B) {
	c := k8stest.Start(b)
	var n atomic.Int64
	rt := newRuntime(b, c, func(cfg *kubernetes.Config) {
		cfg.REST.Wrap(func(next http.RoundTripper) http.RoundTripper { return countingTransport{next: next, n: &n} })
	})
	defer c.StartKubelet(b, "")()
	defer c.StartSnapshotter(b, "")()
	store := newStore(b)
	eng, err := engine.New(engine.Config{Store: store, Runtime: rt, Volumes: kubernetes.NewSnapshots(rt)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	type phase struct {
		name     string
		min      int
		requests int64
		wall     time.Duration
	}
	phases := []*phase{{name: "start", min: minStartRequests}, {name: "hibernate", min: minHibernateRequests}, {name: "wake", min: minWakeRequests}}
	measure := func(ph *phase, f func() error) {
		before := n.Load()
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatalf("%s: %v", ph.name, err)
		}
		ph.wall += time.Since(t0)
		ph.requests += n.Load() - before
	}
	rounds := 0
	for b.Loop() {
		rounds++
		var p engine.Project
		measure(phases[0], func() error {
			// Creating the environment and starting its containers is what "start" costs.
			var err error
			p, err = eng.CreateProject(ctx, engine.CreateRequest{Name: fmt.Sprintf("bench %d", rounds), Owner: "bench",
				Containers: []engine.ContainerSpec{{Name: "web", Directory: "web", Port: 5173, Command: "npm run dev"},
					{Name: "api", Directory: "api", Port: 8000, Command: "uvicorn main:app"}}})
			if err != nil {
				return err
			}
			_, err = eng.StartProject(ctx, p.ID)
			return err
		})
		measure(phases[1], func() error { _, err := eng.Hibernate(ctx, p.ID); return err })
		measure(phases[2], func() error { _, err := eng.Wake(ctx, p.ID); return err })
		if err := rt.DestroyProject(ctx, p, nil); err != nil {
			b.Fatal(err)
		}
	}
	for _, ph := range phases {
		req := float64(ph.requests) / float64(rounds)
		b.ReportMetric(req, ph.name+"-requests/op")
		b.ReportMetric(float64(ph.wall.Milliseconds())/float64(rounds), ph.name+"-ms/op")
		b.Logf("%-9s %5.1f requests (minimum %d, %.2fx), %6.0f ms", ph.name, req, ph.min, req/float64(ph.min), float64(ph.wall.Milliseconds())/float64(rounds))
	}
}

// BenchmarkKubernetesNode measures hibernate and wake of a two-container project holding a
// few hundred MB of files on the real node (real pods, real snapshot copies), beside the
// reference platform's promise: hibernate under 5 s, restore under 10 s. Wake is measured
// until it returns and until both containers run again (their pods ready), after the old
// namespace is gone (its time, from the start of the hibernation, printed beside). It prints the
// median of the rounds (-benchtime 5x).
func BenchmarkKubernetesNode(b *testing.B) {
	n := k8stest.StartNode(b)
	rt := newNodeRuntime(b, n)
	eng, err := engine.New(engine.Config{Store: newStore(b), Runtime: rt, Volumes: kubernetes.NewSnapshots(rt)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "bench node", Owner: "bench",
		Containers: []engine.ContainerSpec{{Name: "web", Directory: "web", Port: 8080, Command: serveCommand},
			{Name: "api", Directory: "api", Port: 8081, Command: serveCommand}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = eng.DeleteProject(context.Background(), p.ID) })
	if _, err := eng.StartProject(ctx, p.ID); err != nil {
		b.Fatal(err)
	}
	// 256 MB of random bytes in 64 files, and 2,000 small ones.
	fill := `set -e; mkdir -p /app/web/data /app/api/src
i=0; while [ $i -lt 64 ]; do head -c 4194304 /dev/urandom > /app/web/data/f$i; i=$((i+1)); done
i=0; while [ $i -lt 2000 ]; do echo "line $i" > /app/api/src/s$i.txt; i=$((i+1)); done`
	if res, err := eng.Exec(ctx, p.ID, "web", engine.ExecRequest{Argv: []string{"sh", "-c", fill}, Timeout: 5 * time.Minute}); err != nil || res.ExitCode != 0 {
		b.Fatalf("fill: %v %d %s", err, res.ExitCode, res.Stderr)
	}
	running := func() error {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			_, views, err := eng.Containers(ctx, p.ID)
			if err != nil {
				return err
			}
			up := 0
			for _, v := range views {
				if v.Status.State == engine.ContainerRunning {
					up++
				}
			}
			if up == len(views) {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("containers not running 3 minutes after the wake: %+v", views)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var hib, wake, wakeRunning, nsGone []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := eng.Hibernate(ctx, p.ID); err != nil {
			b.Fatalf("hibernate: %v", err)
		}
		hib = append(hib, time.Since(t0))
		// How long the old namespace takes to go, which a wake right after has to wait out.
		for {
			if _, err := n.Client.CoreV1().Namespaces().Get(ctx, rt.Namespace(p), metav1.GetOptions{}); apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		nsGone = append(nsGone, time.Since(t0))
		t0 = time.Now()
		if _, err := eng.Wake(ctx, p.ID); err != nil {
			b.Fatalf("wake: %v", err)
		}
		wake = append(wake, time.Since(t0))
		if err := running(); err != nil {
			b.Fatal(err)
		}
		wakeRunning = append(wakeRunning, time.Since(t0))
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for _, m := range []struct {
		name  string
		ds    []time.Duration
		limit time.Duration
	}{{"hibernate", hib, 5 * time.Second}, {"namespace-gone", nsGone, 0},
		{"wake", wake, 10 * time.Second}, {"wake-until-running", wakeRunning, 10 * time.Second}} {
		med := median(m.ds)
		b.ReportMetric(med.Seconds(), m.name+"-s/op")
		if m.limit == 0 {
			b.Logf("%-19s p50 %6.2f s over %d rounds", m.name, med.Seconds(), len(m.ds))
			continue
		}
		b.Logf("%-19s p50 %6.2f s over %d rounds (reference platform: under %v, %.2fx)", m.name, med.Seconds(), len(m.ds), m.limit, med.Seconds()/m.limit.Seconds())
	}
}
