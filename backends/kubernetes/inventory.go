package kubernetes

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sailtui/sailtui/engine"
)

// Environments implements engine.Inventory: the project namespaces sailtui made (its labels
// and prefix), by project id. A namespace being deleted carries when that began and what its
// status says still holds it, so the doctor can name the finalizer that blocks a teardown.
func (r *Runtime) Environments(ctx context.Context) ([]engine.Environment, error) {
	sel := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy, LabelComponent: ComponentProject}).String()
	list, err := r.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list project namespaces: %w", err)
	}
	var out []engine.Environment
	for _, ns := range list.Items {
		if !strings.HasPrefix(ns.Name, r.cfg.NamespacePrefix) {
			continue
		}
		env := engine.Environment{ProjectID: ns.Labels[LabelProjectID], Kind: "namespace", Name: ns.Name,
			Remove: "kubectl delete namespace " + ns.Name}
		if ns.DeletionTimestamp != nil {
			env.TerminatingSince = ns.DeletionTimestamp.UTC()
			env.Blocked = namespaceBlockers(&ns)
		}
		out = append(out, env)
	}
	return out, nil
}

// namespaceBlockers says what keeps a terminating namespace: the namespace controller's own
// conditions (finalizers left on its content, content it could not delete), else its finalizers.
func namespaceBlockers(ns *corev1.Namespace) string {
	var why []string
	for _, c := range ns.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.NamespaceFinalizersRemaining, corev1.NamespaceContentRemaining,
			corev1.NamespaceDeletionContentFailure, corev1.NamespaceDeletionDiscoveryFailure, corev1.NamespaceDeletionGVParsingFailure:
			why = append(why, string(c.Type)+": "+c.Message)
		}
	}
	if len(why) == 0 {
		fs := make([]string, len(ns.Spec.Finalizers))
		for i, f := range ns.Spec.Finalizers {
			fs[i] = string(f)
		}
		return "namespace finalizers " + strings.Join(fs, ", ")
	}
	return strings.Join(why, "; ")
}
