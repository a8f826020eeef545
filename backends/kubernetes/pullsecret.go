package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/engine"
)

// ComponentPullSecret labels the copy of the image pull secret in a project namespace.
const ComponentPullSecret = "pull-secret"

// pullSecretKeys are what a registry credential holds, by its type: nothing else of the
// source is copied.
var pullSecretKeys = map[corev1.SecretType]string{
	corev1.SecretTypeDockerConfigJson: corev1.DockerConfigJsonKey,
	corev1.SecretTypeDockercfg:        corev1.DockerConfigKey,
}

// ensurePullSecret gives the project's namespace the image pull secret its pods name
// (K8S_IMAGE_PULL_SECRET): a pod can only use a secret of its own namespace, and a project
// namespace is made by sailtui, so the operator cannot have put it there. With
// Config.PullSecretFrom (K8S_COPY_PULL_SECRET_FROM) it is copied from there, afresh at every
// start and wake (a rotated credential reaches a project then), as the TLS secret is. Without
// it, or when the copy cannot be made, the result says what is wrong, for the caller to warn
// about: the pods then show the failed pull in their status.
func (r *Runtime) ensurePullSecret(ctx context.Context, p engine.Project) (warning string) {
	return r.copySecret(ctx, p, secretCopy{
		name: r.cfg.ImagePullSecret, from: r.cfg.PullSecretFrom, component: ComponentPullSecret,
		what: "image pull secret", settings: "K8S_IMAGE_PULL_SECRET, K8S_COPY_PULL_SECRET_FROM",
		failsFor: "pulls of %s from a private registry fail",
		fails:    "pulls from a private registry fail",
		data: func(src *corev1.Secret) (map[string][]byte, string) {
			key, ok := pullSecretKeys[src.Type]
			if !ok {
				return nil, fmt.Sprintf("image pull secret %s/%s is of type %s, not %s: not copied; make it with kubectl create secret docker-registry",
					r.cfg.PullSecretFrom, r.cfg.ImagePullSecret, src.Type, corev1.SecretTypeDockerConfigJson)
			}
			return map[string][]byte{key: src.Data[key]}, ""
		},
		missing: r.pullSecretWarning,
	})
}

// pullSecretWarning says when the pull secret the pods of ns name is not there ("" when it is,
// or when none is set or the caller may not look).
func (r *Runtime) pullSecretWarning(ctx context.Context, ns string) string {
	if r.cfg.ImagePullSecret == "" {
		return ""
	}
	if _, err := r.kube.CoreV1().Secrets(ns).Get(ctx, r.cfg.ImagePullSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return ""
	}
	return fmt.Sprintf("image pull secret %s (K8S_IMAGE_PULL_SECRET) is not in namespace %s, so pulls from a private registry fail: "+
		"set K8S_COPY_PULL_SECRET_FROM to the namespace that holds it", r.cfg.ImagePullSecret, ns)
}
