package kubernetes_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

// A private registry's credential reaches every project namespace: with
// K8S_COPY_PULL_SECRET_FROM the Secret K8S_IMAGE_PULL_SECRET names is copied there (its type
// and credential key only), afresh at the next start so a rotated credential arrives, and every
// pod names it; a Secret of another type is not copied, and without the copy a namespace lacking
// it is reported, with the way out.
func TestPullSecretCopied(t *testing.T) {
	c := k8stest.Start(t)
	ctx := t.Context()
	const src, secret = "registry-source", "regcred"
	cred := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: src}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"r.example":{"auth":"dTE6cDE="}}}`), "note": []byte("not copied")}}
	sourceSecrets(t, c, cred)
	var warnings []string
	wctx := engine.WithProgress(ctx, func(p engine.Progress) {
		if strings.HasPrefix(p.Phase, "warning: ") && strings.Contains(p.Phase, "pull secret") {
			warnings = append(warnings, p.Phase)
		}
	})

	rt := newRuntime(t, c, func(cfg *kubernetes.Config) { cfg.ImagePullSecret, cfg.PullSecretFrom = secret, src })
	p := engine.Project{ID: "pull-copy", Slug: "pull-copy", Owner: "alice", Status: engine.StatusActive}
	ns := rt.Namespace(p)
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if err := rt.EnsureProject(wctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := c.Client.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pull secret in the project namespace: %v", err)
	}
	if got.Type != corev1.SecretTypeDockerConfigJson || string(got.Data[corev1.DockerConfigJsonKey]) != string(cred.Data[corev1.DockerConfigJsonKey]) || len(got.Data) != 1 {
		t.Fatalf("copied secret: type %s, data %q", got.Type, got.Data)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings of a working copy: %q", warnings)
	}
	// The file manager (every pod) pulls with it.
	fm, err := c.Client.AppsV1().Deployments(ns).Get(ctx, kubernetes.FileManagerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ps := fm.Spec.Template.Spec.ImagePullSecrets; len(ps) != 1 || ps[0].Name != secret {
		t.Errorf("file manager imagePullSecrets: %+v", ps)
	}
	// Rotated at the source: the next start brings the new credential.
	cred.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"r.example":{"auth":"dTE6cDI="}}}`)
	if _, err := c.Client.CoreV1().Secrets(src).Update(ctx, cred, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rt.EnsureProject(wctx, p); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Client.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{}); err != nil || !strings.Contains(string(got.Data[corev1.DockerConfigJsonKey]), "dTE6cDI=") {
		t.Fatalf("after the rotation: %v %q", err, got.Data)
	}

	// A Secret of another type is no registry credential: not copied, and said so.
	sourceSecrets(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "opaque", Namespace: src}, Data: map[string][]byte{"x": []byte("y")}})
	odd := newRuntime(t, c, func(cfg *kubernetes.Config) { cfg.ImagePullSecret, cfg.PullSecretFrom = "opaque", src })
	q := engine.Project{ID: "pull-odd", Slug: "pull-odd", Owner: "alice", Status: engine.StatusActive}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), odd.Namespace(q), metav1.DeleteOptions{})
	})
	warnings = nil
	if err := odd.EnsureProject(wctx, q); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "docker-registry") {
		t.Errorf("warnings for an Opaque pull secret: %q", warnings)
	}
	if _, err := c.Client.CoreV1().Secrets(odd.Namespace(q)).Get(ctx, "opaque", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an Opaque secret was copied: %v", err)
	}

	// Without the copy: a warning at start and in describe, naming the setting.
	plain := newRuntime(t, c, func(cfg *kubernetes.Config) { cfg.ImagePullSecret = secret })
	r := engine.Project{ID: "pull-none", Slug: "pull-none", Owner: "alice", Status: engine.StatusActive}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), plain.Namespace(r), metav1.DeleteOptions{})
	})
	warnings = nil
	if err := plain.EnsureProject(wctx, r); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "K8S_COPY_PULL_SECRET_FROM") {
		t.Errorf("warnings without the copy: %q", warnings)
	}
	desc, err := plain.Describe(ctx, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(desc, "image pull secret "+secret) || !strings.Contains(desc, "K8S_COPY_PULL_SECRET_FROM") ||
		!strings.Contains(desc, "logs: each pod's own") {
		t.Errorf("describe of a namespace without the pull secret:\n%s", desc)
	}
}
