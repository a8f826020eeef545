package kubernetes

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/sailtui/sailtui/backends/kubernetes/kubeclient"
	"github.com/sailtui/sailtui/engine"
)

// Issue 31: a running container's URL is not served when the cluster has no Ingress class of
// K8S_INGRESS_CLASS; its status says so (LIVE yes beside a dead URL misled), and so does the
// doctor. With the class there, nothing is said.
func TestRouteProblemWithoutIngressClass(t *testing.T) {
	p := engine.Project{ID: "p1", Slug: "demo", Owner: "o"}
	c := engine.Container{ProjectID: p.ID, Name: "web", Directory: "app", Port: 8080}
	for _, tc := range []struct {
		name    string
		classes []kruntime.Object
		want    string
	}{
		{"no class", nil, `no IngressClass "nginx"`},
		{"another class", []kruntime.Object{&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "traefik"}}}, `no IngressClass "nginx"`},
		{"the class", []kruntime.Object{&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{REST: &rest.Config{}}
			if err := cfg.defaults(); err != nil {
				t.Fatal(err)
			}
			r := &Runtime{cfg: cfg}
			one := int32(1)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: deploymentName(c), Namespace: r.Namespace(p), Generation: 1},
				Spec:   appsv1.DeploymentSpec{Replicas: &one},
				Status: appsv1.DeploymentStatus{AvailableReplicas: 1, ObservedGeneration: 1}}
			r.cfg.REST = fakeAPI(t, append([]kruntime.Object{d}, tc.classes...)...)
			var err error
			if r.kube, err = kubeclient.New(r.cfg.REST); err != nil {
				t.Fatal(err)
			}
			st, err := r.ContainerStatus(t.Context(), p, c)
			if err != nil || st.State != engine.ContainerRunning || st.URL == "" {
				t.Fatalf("status: %+v, %v; want running with a URL", st, err)
			}
			findings := r.CheckSetup(t.Context())
			if tc.want == "" {
				if st.RouteProblem != "" || len(findings) > 0 {
					t.Errorf("with the class there: route problem %q, findings %+v; want none", st.RouteProblem, findings)
				}
				return
			}
			if !strings.Contains(st.RouteProblem, tc.want) || !strings.Contains(st.RouteProblem, "K8S_INGRESS_CLASS") {
				t.Errorf("route problem %q, want it to say %q and what to set", st.RouteProblem, tc.want)
			}
			if len(findings) != 1 || findings[0].Check != "ingress-class" {
				t.Errorf("doctor findings %+v, want one ingress-class finding", findings)
			}
		})
	}
}
