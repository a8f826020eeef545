package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/engine"
)

// SecretSourceRules are what copying a secret into project namespaces (the wildcard TLS secret
// from Config.TLSSecretFrom, the image pull secret from Config.PullSecretFrom) takes in the
// namespace it is copied from: reading that one secret, by resourceNames, nothing else there.
func SecretSourceRules(secret string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secret}, Verbs: []string{"get"}}}
}

// ensureTLSSecret gives the project's namespace the TLS secret its Ingresses name: an Ingress
// can only use a secret of its own namespace, and ingress-nginx serves its fake certificate for
// one that is missing while sailtui shows https URLs. With Config.TLSSecretFrom (opt-in) the
// secret is copied from there, afresh at every start and wake (a renewed certificate reaches a
// project then). Without it, or when the copy cannot be made, the result says what is wrong,
// for the caller to warn about; it never fails the project, which works without TLS.
func (r *Runtime) ensureTLSSecret(ctx context.Context, p engine.Project) (warning string) {
	return r.copySecret(ctx, p, secretCopy{
		name: r.cfg.TLSSecret, from: r.cfg.TLSSecretFrom, component: ComponentTLS,
		what: "TLS secret", settings: "K8S_WILDCARD_TLS_SECRET, K8S_COPY_TLS_SECRET_FROM",
		failsFor: "the Ingresses of %s serve the controller's default certificate",
		fails:    "the Ingresses serve the controller's default certificate",
		data: func(src *corev1.Secret) (map[string][]byte, string) {
			// Only the certificate and its key: nothing else the source may hold.
			return map[string][]byte{corev1.TLSCertKey: src.Data[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: src.Data[corev1.TLSPrivateKeyKey]}, ""
		},
		missing: r.tlsSecretWarning,
	})
}

// tlsSecretWarning says when the TLS secret the Ingresses of ns name is not there ("" when it
// is, or when the caller may not look).
func (r *Runtime) tlsSecretWarning(ctx context.Context, ns string) string {
	_, err := r.kube.CoreV1().Secrets(ns).Get(ctx, r.cfg.TLSSecret, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return ""
	}
	return fmt.Sprintf("TLS secret %s (K8S_WILDCARD_TLS_SECRET) is not in namespace %s, so the Ingresses serve the controller's default certificate: "+
		"set K8S_COPY_TLS_SECRET_FROM to the namespace that holds it, or give ingress-nginx --default-ssl-certificate", r.cfg.TLSSecret, ns)
}
