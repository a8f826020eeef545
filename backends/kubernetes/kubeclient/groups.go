package kubeclient

import (
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
)

// Only the resources the runtime uses are here; another is one method.

// CoreV1 is the core group (/api/v1).
type CoreV1 struct{ group }

// Namespaces is the client of namespaces.
func (g CoreV1) Namespaces() *ListedResource[*corev1.Namespace, *corev1.NamespaceList] {
	return resource[corev1.Namespace, corev1.NamespaceList](g.group, "namespaces", "")
}

// PersistentVolumeClaims is the client of namespace's PVCs.
func (g CoreV1) PersistentVolumeClaims(namespace string) *ListedResource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return resource[corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList](g.group, "persistentvolumeclaims", namespace)
}

// PersistentVolumes is the client of persistent volumes.
func (g CoreV1) PersistentVolumes() *ListedResource[*corev1.PersistentVolume, *corev1.PersistentVolumeList] {
	return resource[corev1.PersistentVolume, corev1.PersistentVolumeList](g.group, "persistentvolumes", "")
}

// Secrets is the client of namespace's secrets.
func (g CoreV1) Secrets(namespace string) *ListedResource[*corev1.Secret, *corev1.SecretList] {
	return resource[corev1.Secret, corev1.SecretList](g.group, "secrets", namespace)
}

// Services is the client of namespace's services.
func (g CoreV1) Services(namespace string) *ListedResource[*corev1.Service, *corev1.ServiceList] {
	return resource[corev1.Service, corev1.ServiceList](g.group, "services", namespace)
}

// Pods is the client of namespace's pods.
func (g CoreV1) Pods(namespace string) Pods {
	return Pods{resource[corev1.Pod, corev1.PodList](g.group, "pods", namespace)}
}

// Pods is the pods' client with their log request.
type Pods struct {
	*ListedResource[*corev1.Pod, *corev1.PodList]
}

// GetLogs is the request for pod name's log, as client-go's: the caller streams or reads it.
func (p Pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.client.Get().Namespace(p.namespace).Name(name).Resource("pods").SubResource("log").
		VersionedParams(opts, ParameterCodec)
}

// AppsV1 is the apps/v1 group.
type AppsV1 struct{ group }

// Deployments is the client of namespace's deployments.
func (g AppsV1) Deployments(namespace string) *ListedResource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return resource[appsv1.Deployment, appsv1.DeploymentList](g.group, "deployments", namespace)
}

// NetworkingV1 is the networking.k8s.io/v1 group.
type NetworkingV1 struct{ group }

// Ingresses is the client of namespace's ingresses.
func (g NetworkingV1) Ingresses(namespace string) *ListedResource[*networkingv1.Ingress, *networkingv1.IngressList] {
	return resource[networkingv1.Ingress, networkingv1.IngressList](g.group, "ingresses", namespace)
}

// IngressClasses is the client of the cluster's ingress classes.
func (g NetworkingV1) IngressClasses() *ListedResource[*networkingv1.IngressClass, *networkingv1.IngressClassList] {
	return resource[networkingv1.IngressClass, networkingv1.IngressClassList](g.group, "ingressclasses", "")
}

// NetworkPolicies is the client of namespace's network policies.
func (g NetworkingV1) NetworkPolicies(namespace string) *ListedResource[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return resource[networkingv1.NetworkPolicy, networkingv1.NetworkPolicyList](g.group, "networkpolicies", namespace)
}

// RbacV1 is the rbac.authorization.k8s.io/v1 group.
type RbacV1 struct{ group }

// RoleBindings is the client of namespace's role bindings.
func (g RbacV1) RoleBindings(namespace string) *ListedResource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return resource[rbacv1.RoleBinding, rbacv1.RoleBindingList](g.group, "rolebindings", namespace)
}

// AuthorizationV1 is the authorization.k8s.io/v1 group.
type AuthorizationV1 struct{ group }

// SelfSubjectAccessReviews is the client of access reviews: a review is only ever created.
func (g AuthorizationV1) SelfSubjectAccessReviews() *Resource[*authorizationv1.SelfSubjectAccessReview] {
	return &Resource[*authorizationv1.SelfSubjectAccessReview]{client: g.client, resource: "selfsubjectaccessreviews", protobuf: g.protobuf,
		newObject: func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} }}
}

// SnapshotV1 is the CSI snapshot group (snapshot.storage.k8s.io/v1).
type SnapshotV1 struct{ group }

// VolumeSnapshots is the client of namespace's volume snapshots.
func (g SnapshotV1) VolumeSnapshots(namespace string) *ListedResource[*snapv1.VolumeSnapshot, *snapv1.VolumeSnapshotList] {
	return resource[snapv1.VolumeSnapshot, snapv1.VolumeSnapshotList](g.group, "volumesnapshots", namespace)
}

// VolumeSnapshotContents is the client of volume snapshot contents.
func (g SnapshotV1) VolumeSnapshotContents() *ListedResource[*snapv1.VolumeSnapshotContent, *snapv1.VolumeSnapshotContentList] {
	return resource[snapv1.VolumeSnapshotContent, snapv1.VolumeSnapshotContentList](g.group, "volumesnapshotcontents", "")
}

// VolumeSnapshotClasses is the client of volume snapshot classes.
func (g SnapshotV1) VolumeSnapshotClasses() *ListedResource[*snapv1.VolumeSnapshotClass, *snapv1.VolumeSnapshotClassList] {
	return resource[snapv1.VolumeSnapshotClass, snapv1.VolumeSnapshotClassList](g.group, "volumesnapshotclasses", "")
}
