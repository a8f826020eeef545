package kubeclient

import (
	"errors"
	"fmt"
	"net/http"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clientset is a client per API group the runtime uses, sharing one HTTP client, plus one for
// requests by absolute path. Its groups' methods have the shape of client-go's Clientset, so
// code reads the same: c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}).
type Clientset struct {
	coreV1          CoreV1
	appsV1          AppsV1
	networkingV1    NetworkingV1
	rbacV1          RbacV1
	authorizationV1 AuthorizationV1
	snapshotV1      SnapshotV1
	raw             rest.Interface
}

// New makes the clients for cfg, as client-go's kubernetes.NewForConfig does: one HTTP client
// (one transport) for all, the caller's rate limit shared by all when it sets one (QPS > 0),
// else client-go's default limit per group. It makes no request.
func New(cfg *rest.Config) (*Clientset, error) {
	base := *cfg
	if base.UserAgent == "" {
		base.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&base)
	if err != nil {
		return nil, fmt.Errorf("kubernetes HTTP client: %w", err)
	}
	if base.RateLimiter == nil && base.QPS > 0 {
		if base.Burst <= 0 {
			return nil, errors.New("kubernetes client: Burst must be above 0 when QPS is")
		}
		base.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(base.QPS, base.Burst)
	}
	var c Clientset
	// client-go's generated clients ask for protobuf for the built-in types (when the config
	// names no content type); the snapshot types are custom resources, served as JSON only.
	if c.coreV1.group, err = newGroup(&base, httpClient, corev1.SchemeGroupVersion, true); err != nil {
		return nil, err
	}
	if c.appsV1.group, err = newGroup(&base, httpClient, appsv1.SchemeGroupVersion, true); err != nil {
		return nil, err
	}
	if c.networkingV1.group, err = newGroup(&base, httpClient, networkingv1.SchemeGroupVersion, true); err != nil {
		return nil, err
	}
	if c.rbacV1.group, err = newGroup(&base, httpClient, rbacv1.SchemeGroupVersion, true); err != nil {
		return nil, err
	}
	if c.authorizationV1.group, err = newGroup(&base, httpClient, authorizationv1.SchemeGroupVersion, true); err != nil {
		return nil, err
	}
	if c.snapshotV1.group, err = newGroup(&base, httpClient, snapv1.SchemeGroupVersion, false); err != nil {
		return nil, err
	}
	if c.raw, err = newRaw(&base, httpClient); err != nil {
		return nil, err
	}
	return &c, nil
}

// CoreV1 is the core group's client (/api/v1).
func (c *Clientset) CoreV1() CoreV1 { return c.coreV1 }

// AppsV1 is the apps/v1 client.
func (c *Clientset) AppsV1() AppsV1 { return c.appsV1 }

// NetworkingV1 is the networking.k8s.io/v1 client.
func (c *Clientset) NetworkingV1() NetworkingV1 { return c.networkingV1 }

// RbacV1 is the rbac.authorization.k8s.io/v1 client.
func (c *Clientset) RbacV1() RbacV1 { return c.rbacV1 }

// AuthorizationV1 is the authorization.k8s.io/v1 client.
func (c *Clientset) AuthorizationV1() AuthorizationV1 { return c.authorizationV1 }

// SnapshotV1 is the CSI snapshot client (snapshot.storage.k8s.io/v1).
func (c *Clientset) SnapshotV1() SnapshotV1 { return c.snapshotV1 }

// Raw is the client for requests by absolute path (/version, an aggregated API such as
// /apis/metrics.k8s.io/...), configured as client-go's discovery client, which served them
// before.
func (c *Clientset) Raw() rest.Interface { return c.raw }

// group is one API group-version's REST client.
type group struct {
	client rest.Interface
	// protobuf: the typed clients ask for protobuf first, as client-go's do for this group.
	protobuf bool
}

// newGroup is client-go's generated NewForConfigAndClient with its setConfigDefaults, over
// Scheme.
func newGroup(base *rest.Config, httpClient *http.Client, gv schema.GroupVersion, protobuf bool) (group, error) {
	cfg := *base
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = Codecs.WithoutConversion()
	client, err := rest.RESTClientForConfigAndClient(&cfg, httpClient)
	if err != nil {
		return group{}, fmt.Errorf("kubernetes client for %s: %w", gv, err)
	}
	return group{client: client, protobuf: protobuf}, nil
}

// newRaw is client-go's discovery client's REST client: no group, no API path, only decoding
// (an error's Status), and a burst of 300 unless the caller set one.
func newRaw(base *rest.Config, httpClient *http.Client) (rest.Interface, error) {
	cfg := *base
	cfg.APIPath = ""
	cfg.GroupVersion = nil
	if cfg.Burst == 0 {
		cfg.Burst = 300
	}
	codec := runtime.NoopEncoder{Decoder: Codecs.UniversalDecoder()}
	cfg.NegotiatedSerializer = serializer.NegotiatedSerializerWrapper(runtime.SerializerInfo{Serializer: codec})
	client, err := rest.UnversionedRESTClientForConfigAndClient(&cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for raw requests: %w", err)
	}
	return client, nil
}

// RESTClient is the group's REST client, for what the typed clients do not do (the runtime's
// watches, exec).
func (g group) RESTClient() rest.Interface { return g.client }
