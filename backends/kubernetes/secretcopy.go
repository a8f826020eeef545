package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/engine"
)

// secretCopy is a secret that project namespaces get a copy of, because what in them names it
// (an Ingress, a pod) can only use a secret of its own namespace, and sailtui makes the
// namespace: the wildcard TLS secret (tls.go), the image pull secret (pullsecret.go).
type secretCopy struct {
	name string // the secret; none: nothing to do
	from string // the namespace it is copied from; none: not copied, and missing says so
	// component labels the copy.
	component string
	// what it is and the settings that name it and its source, for the warnings.
	what, settings string
	// failsFor is what fails without it in a project (%s: its slug); fails, in a namespace.
	failsFor, fails string
	// data is what of the source is copied, or why it is not (the refusal is the warning).
	data func(src *corev1.Secret) (data map[string][]byte, refused string)
	// missing says when the namespace ns lacks the secret ("" when it has it, or when the
	// caller may not look).
	missing func(ctx context.Context, ns string) string
}

// copySecret gives the project's namespace its copy of s, copied afresh at every start and
// wake (a renewed or rotated source reaches a project then). Without s.from, or when the copy
// cannot be made, the result says what is wrong, for the caller to warn about.
func (r *Runtime) copySecret(ctx context.Context, p engine.Project, s secretCopy) (warning string) {
	if s.name == "" {
		return ""
	}
	ns := r.Namespace(p)
	if s.from == "" {
		return s.missing(ctx, ns)
	}
	src, err := r.kube.CoreV1().Secrets(s.from).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("%s %s/%s (%s) could not be read: %v; "+s.failsFor, s.what, s.from, s.name, s.settings, err, p.Slug)
	}
	data, refused := s.data(src)
	if refused != "" {
		return refused
	}
	cp := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: ns, Labels: projectLabels(p, s.component)},
		Type:       src.Type,
		Data:       data,
	}
	if _, err := apply(ctx, r.kube.CoreV1().Secrets(ns), cp); err != nil {
		return fmt.Sprintf("copy %s %s/%s into %s: %v; %s", s.what, s.from, s.name, ns, err, s.fails)
	}
	return ""
}
