package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/engine"
)

// ingressClassCheck remembers for a while whether the cluster has the Ingress class sailtui
// names: a status listing asks once per container, and the answer changes only when an
// operator installs a controller.
type ingressClassCheck struct {
	mu      sync.Mutex
	checked time.Time
	problem string
}

const ingressClassTTL = 30 * time.Second

// routeProblem says why nothing serves the projects' URLs, when the cluster can tell: no
// IngressClass of K8S_INGRESS_CLASS exists, so no controller picks their Ingresses up and a
// URL beside a running pod (LIVE yes) would be a dead end. "" when the class is there, or
// when it cannot be read (no right to get ingressclasses: nothing is claimed then).
func (r *Runtime) routeProblem(ctx context.Context) string {
	c := &r.ingressClass
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.checked.IsZero() && time.Since(c.checked) < ingressClassTTL {
		return c.problem
	}
	_, err := r.kube.NetworkingV1().IngressClasses().Get(ctx, r.cfg.IngressClass, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.problem = fmt.Sprintf("the cluster has no IngressClass %q, so no ingress controller serves the projects' URLs: install one (e.g. ingress-nginx or Traefik) or set K8S_INGRESS_CLASS to the class the cluster's controller serves (kubectl get ingressclass)", r.cfg.IngressClass)
	case err != nil:
		// Unknown (forbidden, the API server away): say nothing rather than guess, and ask
		// again next time.
		return ""
	default:
		c.problem = ""
	}
	c.checked = time.Now()
	return c.problem
}

var _ engine.SetupChecker = (*Runtime)(nil)

// CheckSetup implements engine.SetupChecker: the doctor reports an Ingress class that does not
// exist.
func (r *Runtime) CheckSetup(ctx context.Context) []engine.Finding {
	if why := r.routeProblem(ctx); why != "" {
		return []engine.Finding{{Check: "ingress-class", Detail: why,
			Fix: fmt.Sprintf("install an ingress controller whose IngressClass is %q, or set K8S_INGRESS_CLASS", r.cfg.IngressClass)}}
	}
	return nil
}
