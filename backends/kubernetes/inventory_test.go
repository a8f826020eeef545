package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

// The doctor's view of the cluster: project namespaces by project id, and for one stuck
// Terminating, the finalizer that blocks it, as the real namespace controller reports it.
func TestEnvironmentsNameBlockingFinalizer(t *testing.T) {
	c := k8stest.Start(t)
	rt := newRuntime(t, c)
	ctx := t.Context()
	p := engine.Project{ID: "inventory-1", Slug: "inv", Owner: "bob", Status: engine.StatusActive}
	if err := rt.EnsureProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	ns := rt.Namespace(p)
	find := func() *engine.Environment {
		envs, err := rt.Environments(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range envs {
			if e.Name == ns {
				return &e
			}
		}
		return nil
	}
	env := find()
	if env == nil || env.ProjectID != p.ID || !env.TerminatingSince.IsZero() || !strings.Contains(env.Remove, "kubectl delete namespace "+ns) {
		t.Fatalf("environment of a live project: %+v", env)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns, Finalizers: []string{"sailtui.test/hold"}}}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.Client.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		env = find()
		if env != nil && strings.Contains(env.Blocked, "sailtui.test/hold") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminating namespace never named its blocking finalizer: %+v", env)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if env.TerminatingSince.IsZero() {
		t.Errorf("terminating namespace without its deletion time: %+v", env)
	}
	t.Logf("blocked: %s", env.Blocked)
}
