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
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// Each resource's client is what client-go's generated one is built on (gentype, with lists):
// Get, List, Watch, Create, Update, Patch, Delete, DeleteCollection. Only the resources the
// runtime uses are here; another is one line.

// object is what gentype's clients take: a pointer to an API type.
type object[E any] interface {
	*E
	runtime.Object
	metav1.Object
}

// list is a pointer to an API list type.
type list[E any] interface {
	*E
	runtime.Object
}

// resource is the client of one resource of group g: cluster-scoped when namespace is "".
func resource[E, LE any, T object[E], L list[LE]](g group, name, namespace string) *gentype.ClientWithList[T, L] {
	var opts []gentype.Option[T]
	if g.protobuf {
		opts = append(opts, gentype.PrefersProtobuf[T]())
	}
	return gentype.NewClientWithList[T, L](name, g.client, ParameterCodec, namespace,
		func() T { return new(E) }, func() L { return new(LE) }, opts...)
}

// CoreV1 is the core group (/api/v1).
type CoreV1 struct{ group }

// Namespaces is the client of namespaces.
func (g CoreV1) Namespaces() *gentype.ClientWithList[*corev1.Namespace, *corev1.NamespaceList] {
	return resource[corev1.Namespace, corev1.NamespaceList](g.group, "namespaces", "")
}

// PersistentVolumeClaims is the client of namespace's PVCs.
func (g CoreV1) PersistentVolumeClaims(namespace string) *gentype.ClientWithList[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return resource[corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList](g.group, "persistentvolumeclaims", namespace)
}

// PersistentVolumes is the client of persistent volumes.
func (g CoreV1) PersistentVolumes() *gentype.ClientWithList[*corev1.PersistentVolume, *corev1.PersistentVolumeList] {
	return resource[corev1.PersistentVolume, corev1.PersistentVolumeList](g.group, "persistentvolumes", "")
}

// Secrets is the client of namespace's secrets.
func (g CoreV1) Secrets(namespace string) *gentype.ClientWithList[*corev1.Secret, *corev1.SecretList] {
	return resource[corev1.Secret, corev1.SecretList](g.group, "secrets", namespace)
}

// Services is the client of namespace's services.
func (g CoreV1) Services(namespace string) *gentype.ClientWithList[*corev1.Service, *corev1.ServiceList] {
	return resource[corev1.Service, corev1.ServiceList](g.group, "services", namespace)
}

// Pods is the client of namespace's pods.
func (g CoreV1) Pods(namespace string) Pods {
	return Pods{resource[corev1.Pod, corev1.PodList](g.group, "pods", namespace)}
}

// Pods is the pods' client with the log request gentype has no method for.
type Pods struct {
	*gentype.ClientWithList[*corev1.Pod, *corev1.PodList]
}

// GetLogs is the request for pod name's log, as client-go's: the caller streams or reads it.
func (p Pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.GetClient().Get().Namespace(p.GetNamespace()).Name(name).Resource("pods").SubResource("log").
		VersionedParams(opts, ParameterCodec)
}

// AppsV1 is the apps/v1 group.
type AppsV1 struct{ group }

// Deployments is the client of namespace's deployments.
func (g AppsV1) Deployments(namespace string) *gentype.ClientWithList[*appsv1.Deployment, *appsv1.DeploymentList] {
	return resource[appsv1.Deployment, appsv1.DeploymentList](g.group, "deployments", namespace)
}

// NetworkingV1 is the networking.k8s.io/v1 group.
type NetworkingV1 struct{ group }

// Ingresses is the client of namespace's ingresses.
func (g NetworkingV1) Ingresses(namespace string) *gentype.ClientWithList[*networkingv1.Ingress, *networkingv1.IngressList] {
	return resource[networkingv1.Ingress, networkingv1.IngressList](g.group, "ingresses", namespace)
}

// NetworkPolicies is the client of namespace's network policies.
func (g NetworkingV1) NetworkPolicies(namespace string) *gentype.ClientWithList[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return resource[networkingv1.NetworkPolicy, networkingv1.NetworkPolicyList](g.group, "networkpolicies", namespace)
}

// RbacV1 is the rbac.authorization.k8s.io/v1 group.
type RbacV1 struct{ group }

// RoleBindings is the client of namespace's role bindings.
func (g RbacV1) RoleBindings(namespace string) *gentype.ClientWithList[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return resource[rbacv1.RoleBinding, rbacv1.RoleBindingList](g.group, "rolebindings", namespace)
}

// AuthorizationV1 is the authorization.k8s.io/v1 group.
type AuthorizationV1 struct{ group }

// SelfSubjectAccessReviews is the client of access reviews: a review is only ever created.
func (g AuthorizationV1) SelfSubjectAccessReviews() *gentype.Client[*authorizationv1.SelfSubjectAccessReview] {
	var opts []gentype.Option[*authorizationv1.SelfSubjectAccessReview]
	if g.protobuf {
		opts = append(opts, gentype.PrefersProtobuf[*authorizationv1.SelfSubjectAccessReview]())
	}
	return gentype.NewClient("selfsubjectaccessreviews", g.client, ParameterCodec, "",
		func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} }, opts...)
}

// SnapshotV1 is the CSI snapshot group (snapshot.storage.k8s.io/v1).
type SnapshotV1 struct{ group }

// VolumeSnapshots is the client of namespace's volume snapshots.
func (g SnapshotV1) VolumeSnapshots(namespace string) *gentype.ClientWithList[*snapv1.VolumeSnapshot, *snapv1.VolumeSnapshotList] {
	return resource[snapv1.VolumeSnapshot, snapv1.VolumeSnapshotList](g.group, "volumesnapshots", namespace)
}

// VolumeSnapshotContents is the client of volume snapshot contents.
func (g SnapshotV1) VolumeSnapshotContents() *gentype.ClientWithList[*snapv1.VolumeSnapshotContent, *snapv1.VolumeSnapshotContentList] {
	return resource[snapv1.VolumeSnapshotContent, snapv1.VolumeSnapshotContentList](g.group, "volumesnapshotcontents", "")
}

// VolumeSnapshotClasses is the client of volume snapshot classes.
func (g SnapshotV1) VolumeSnapshotClasses() *gentype.ClientWithList[*snapv1.VolumeSnapshotClass, *snapv1.VolumeSnapshotClassList] {
	return resource[snapv1.VolumeSnapshotClass, snapv1.VolumeSnapshotClassList](g.group, "volumesnapshotclasses", "")
}
