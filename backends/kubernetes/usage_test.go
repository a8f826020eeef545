package kubernetes_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

// TestUsageMetricsAPI (issue 17, item 15): on a cluster without a metrics API (the test
// control plane has no metrics-server) resource use reads as not available, once for the
// project, with what to do, and listing the containers is not disturbed; once the API is
// served, each container gets the sum of its pod's containers and nothing else of the
// namespace (the file manager) counts.
func TestUsageMetricsAPI(t *testing.T) {
	c := k8stest.Start(t)
	rt := newRuntime(t, c)
	eng := newEngine(t, rt)
	p := createTwo(t, c, eng, "Usage Read")
	t.Cleanup(func() { _ = rt.DestroyProject(context.Background(), p, nil) })
	ctx := t.Context()

	u, err := eng.Usage(ctx, p.ID)
	if !errors.Is(err, engine.ErrNotAvailable) || !strings.HasPrefix(err.Error(), "CPU and memory not available: the cluster serves no metrics API") || !strings.Contains(err.Error(), "metrics-server") {
		t.Fatalf("usage without a metrics API: %v, %v; want not available, saying to install metrics-server", u, err)
	}
	if _, views, err := eng.Containers(ctx, p.ID); err != nil || len(views) != 2 {
		t.Fatalf("containers beside an absent metrics API: %v, %v", views, err)
	}

	c.ServeMetrics(t)
	ns := rt.Namespace(p)
	dev := func(container string) map[string]string {
		return map[string]string{kubernetes.LabelProjectID: p.ID, kubernetes.LabelComponent: "dev", kubernetes.LabelContainerID: container}
	}
	c.PutPodMetrics(t, ns, "dev-web-1", dev("web"), map[string]map[string]string{
		"web": {"cpu": "250m", "memory": "64Mi"}, "helper": {"cpu": "50m", "memory": "16Mi"},
	})
	c.PutPodMetrics(t, ns, "file-manager-1", map[string]string{kubernetes.LabelProjectID: p.ID, kubernetes.LabelComponent: "file-manager"},
		map[string]map[string]string{"fm": {"cpu": "2", "memory": "1Gi"}})
	u, err = eng.Usage(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	web, ok := u["web"]
	if !ok || math.Abs(web.CPU-0.3) > 1e-9 || web.Memory != 80<<20 {
		t.Errorf("web: %+v (found %v), want 0.3 cores and 80 MiB (its pod's two containers)", web, ok)
	}
	if a, ok := u["api"]; ok {
		t.Errorf("api, with no pod metrics, has usage %+v", a)
	}
	if len(u) != 1 {
		t.Errorf("usage %+v: want web only", u)
	}
}
