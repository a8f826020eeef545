package k8stest

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// PodMetricsResource is where the resource metrics API (metrics-server's metrics.k8s.io)
// serves pod metrics.
var PodMetricsResource = schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}

const podMetricsCRD = "pods.metrics.k8s.io"

// ServeMetrics makes the API server serve metrics.k8s.io/v1beta1 pods, as a cluster with
// metrics-server does, from a CRD of that group: the figures are the PodMetrics objects the
// test creates (PutPodMetrics), read back through the real API server, paths, label selectors
// and all. The control plane has no metrics-server, so without this the API is absent, as it
// is on a cluster without one. The CRD is removed when the test ends, and the API with it:
// tests that use it must not run beside tests that want it absent.
func (c *Cluster) ServeMetrics(t testing.TB) {
	t.Helper()
	ctx := t.Context()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name": podMetricsCRD,
			// A group under k8s.io needs this to be served at all.
			"annotations": map[string]any{"api-approved.kubernetes.io": "unapproved, test stand-in for metrics-server"},
		},
		"spec": map[string]any{
			"group": "metrics.k8s.io",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "pods", "singular": "podmetrics", "kind": "PodMetrics", "listKind": "PodMetricsList"},
			"versions": []any{map[string]any{
				"name": "v1beta1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := c.Dynamic.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("k8stest: create the metrics stand-in CRD: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.Dynamic.Resource(crdResource).Delete(ctx, podMetricsCRD, metav1.DeleteOptions{})
		// Gone from discovery before the next test looks.
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.Client.Discovery().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1").DoRaw(ctx)
			return err != nil, nil
		})
	})
	if err := c.waitEstablished(ctx, podMetricsCRD); err != nil {
		t.Fatal(err)
	}
}

// PutPodMetrics creates the metrics of a pod in namespace ns with labels: usage per container
// name, each a map of "cpu" and "memory" to quantities ("250m", "64Mi").
func (c *Cluster) PutPodMetrics(t testing.TB, ns, name string, labels map[string]string, usage map[string]map[string]string) {
	t.Helper()
	lbl := map[string]any{}
	for k, v := range labels {
		lbl[k] = v
	}
	var containers []any
	for cname, u := range usage {
		q := map[string]any{}
		for k, v := range u {
			q[k] = v
		}
		containers = append(containers, map[string]any{"name": cname, "usage": q})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metrics.k8s.io/v1beta1",
		"kind":       "PodMetrics",
		"metadata":   map[string]any{"name": name, "namespace": ns, "labels": lbl},
		"timestamp":  time.Now().UTC().Format(time.RFC3339),
		"window":     "15s",
		"containers": containers,
	}}
	// The first request of a new resource can meet a discovery cache not caught up yet.
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Dynamic.Resource(PodMetricsResource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("k8stest: create pod metrics %s/%s: %v", ns, name, err)
	}
}
