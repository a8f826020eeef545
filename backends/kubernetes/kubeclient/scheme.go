// Package kubeclient is the kubernetes runtime's API client: typed clients, made as client-go's
// generated ones are, for the few API groups the runtime uses, over a scheme that holds only
// those groups.
//
// It exists because client-go's full Clientset (k8s.io/client-go/kubernetes) is paid for by
// every sailtui process at start, whatever runtime it drives: its scheme registers about 57
// k8s.io/api group-versions, each with heavy init work. Measured: a bare program importing
// the Clientset starts at 19 MB RSS, one importing only core, apps and networking v1 with
// client-go/rest at 10 MB, an empty one at 2 MB; about 40 ms of sailtui's 90 ms of package
// init was the Kubernetes packages'. The cmd/sailtui tests fail when the Clientset creeps
// back into the binary.
package kubeclient

import (
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme knows the types of the groups the runtime uses, and nothing else: what client-go's
// kubernetes/scheme is for the Clientset. Nothing adds to it after init.
var Scheme = runtime.NewScheme()

// Codecs encodes and decodes Scheme's types (JSON, YAML, protobuf).
var Codecs = serializer.NewCodecFactory(Scheme)

// ParameterCodec turns option structs (ListOptions, PodLogOptions, PodExecOptions) into a
// request's query parameters.
var ParameterCodec = runtime.NewParameterCodec(Scheme)

func init() {
	// As client-go's kubernetes/scheme does: the unversioned meta types (Status, the option
	// structs) under "v1", then every group.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	groups := runtime.SchemeBuilder{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		networkingv1.AddToScheme,
		rbacv1.AddToScheme,
		authorizationv1.AddToScheme,
		snapv1.AddToScheme,
	}
	utilruntime.Must(groups.AddToScheme(Scheme))
}
