package kubernetes_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

// TLS that works (issue 20, item 14): with K8S_COPY_TLS_SECRET_FROM the wildcard secret the
// Ingresses name is copied into the project namespace (certificate and key only), by an
// identity that may read only that one secret there (kubernetes.SecretSourceRules, by
// resourceNames), and again afresh at the next start, so a renewed certificate arrives;
// without it a namespace lacking the secret is reported by describe, with the way out.
func TestTLSSecretCopied(t *testing.T) {
	c := k8stest.Start(t)
	ctx := t.Context()
	const src, secret = "tls-source", "wild"
	wild := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: src}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("cert-1"), corev1.TLSPrivateKeyKey: []byte("key-1"), "other": []byte("not copied")}}
	sourceSecrets(t, c, wild, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: src}})

	// The identity that creates projects: what EnsureProject needs cluster-wide (server-side
	// apply that creates takes create and patch), secrets written but never read, and in the
	// source namespace only SecretSourceRules.
	const user = "sailtui-test-tls-copier"
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	creator := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create", "get", "patch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"create"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "patch"}},
	}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: src}, Rules: kubernetes.SecretSourceRules(secret)}
	for _, err := range []error{
		func() error {
			_, err := c.Client.RbacV1().ClusterRoles().Create(ctx, creator, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}, Subjects: subject}, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := c.Client.RbacV1().Roles(src).Create(ctx, role, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := c.Client.RbacV1().RoleBindings(src).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: src},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}, Subjects: subject}, metav1.CreateOptions{})
			return err
		}(),
	} {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		_ = c.Client.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	copier := newRuntime(t, c, func(cfg *kubernetes.Config) {
		cfg.REST.Impersonate.UserName = user
		cfg.TLSSecret, cfg.TLSSecretFrom, cfg.Sweeper = secret, src, ""
	})
	// The role reads that one secret only.
	asCopier := kubernetesClientAs(t, c, user)
	if _, err := asCopier.CoreV1().Secrets(src).Get(ctx, "unrelated", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the copier reads another secret of %s: %v, want forbidden", src, err)
	}

	p := engine.Project{ID: "tls-copy", Slug: "tls-copy", Owner: "alice", Status: engine.StatusActive}
	ns := copier.Namespace(p)
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if err := copier.EnsureProject(ctx, p); err != nil {
		t.Fatalf("EnsureProject as the copier: %v", err)
	}
	got, err := c.Client.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the TLS secret in the project namespace: %v", err)
	}
	if got.Type != corev1.SecretTypeTLS || string(got.Data[corev1.TLSCertKey]) != "cert-1" || string(got.Data[corev1.TLSPrivateKeyKey]) != "key-1" || len(got.Data) != 2 {
		t.Fatalf("copied secret: type %s, data %q", got.Type, got.Data)
	}
	// Renewed at the source: the next start (EnsureProject) brings the new certificate.
	wild.Data[corev1.TLSCertKey] = []byte("cert-2")
	if _, err := c.Client.CoreV1().Secrets(src).Update(ctx, wild, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := copier.EnsureProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Client.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{}); err != nil || string(got.Data[corev1.TLSCertKey]) != "cert-2" {
		t.Fatalf("after the renewal: %v %q", err, got.Data)
	}

	// Without the copy, describe says the secret is missing and what to do.
	plain := newRuntime(t, c, func(cfg *kubernetes.Config) { cfg.TLSSecret = secret })
	q := engine.Project{ID: "tls-none", Slug: "tls-none", Owner: "alice", Status: engine.StatusActive}
	t.Cleanup(func() { _ = plain.DestroyProject(context.Background(), q, nil) })
	if err := plain.EnsureProject(ctx, q); err != nil {
		t.Fatal(err)
	}
	desc, err := plain.Describe(ctx, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TLS secret " + secret, "K8S_COPY_TLS_SECRET_FROM", "--default-ssl-certificate"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe of a namespace without the TLS secret lacks %q:\n%s", want, desc)
		}
	}
}

// kubernetesClientAs is a client of c impersonating user.
func kubernetesClientAs(t *testing.T, c *k8stest.Cluster, user string) *clientset.Clientset {
	t.Helper()
	cfg := c.Config()
	cfg.Impersonate.UserName = user
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// sourceSecrets creates secrets in the namespace they name, the source of a copy, which is made
// when missing and deleted at the end of the test (a leftover of an earlier run too).
func sourceSecrets(t *testing.T, c *k8stest.Cluster, secrets ...*corev1.Secret) {
	t.Helper()
	ctx := t.Context()
	for _, s := range secrets {
		ns := s.Namespace
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
		if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}
