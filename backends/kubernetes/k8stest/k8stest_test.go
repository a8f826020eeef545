package k8stest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// The control plane does what the backend relies on: the controller manager turns a
// Deployment into a ReplicaSet and pods, the kubelet helper makes them available, the
// snapshotter helper makes snapshots of a PVC and of a pre-provisioned content ready, and
// deleting the namespace deletes everything in it.
func TestControlPlane(t *testing.T) {
	c := Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	// The kubeconfig file is what code loading its configuration like kubectl sees.
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	if version.GitVersion != Version {
		t.Errorf("server version %s, want %s (binaries built without the Makefile's -ldflags?)", version.GitVersion, Version)
	}

	const ns = "k8stest-smoke"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Deployment → ReplicaSet → pods, through the controller manager; the restricted Pod
	// Security level is enforced by the API server's admission.
	dep := deployment("web", 2)
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, c, "a ReplicaSet and 2 pods", func(ctx context.Context) (bool, error) {
		rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(rss.Items) != 1 {
			return false, err
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 2, err
	})
	if n, err := c.MarkPodsReady(ctx, ns); err != nil || n != 2 {
		t.Fatalf("MarkPodsReady marked %d pods, %v; want 2", n, err)
	}
	waitAvailable(ctx, t, c, client, ns, "web", 2)

	// Scaled up with the kubelet running in the background: the new pod becomes ready alone.
	stopKubelet := c.StartKubelet(t, ns)
	scale, err := client.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 3
	if _, err := client.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(ctx, t, c, client, ns, "web", 3)
	stopKubelet()

	// A snapshot of a PVC, in the default class.
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	snaps := c.Snapshots.SnapshotV1()
	pvcName := pvc.Name
	if _, err := snaps.VolumeSnapshots(ns).Create(ctx, &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "data-snap"},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &pvcName}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ReadySnapshots(ctx, ns); err != nil || n != 1 {
		t.Fatalf("ReadySnapshots made %d snapshots ready, %v; want 1", n, err)
	}
	vs, err := snaps.VolumeSnapshots(ns).Get(ctx, "data-snap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !snapshotReady(vs) || vs.Status.BoundVolumeSnapshotContentName == nil || vs.Status.RestoreSize == nil || vs.Status.RestoreSize.String() != "1Gi" {
		t.Fatalf("snapshot status %+v, want ready, bound, restore size 1Gi", vs.Status)
	}
	content, err := snaps.VolumeSnapshotContents().Get(ctx, *vs.Status.BoundVolumeSnapshotContentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if content.Status == nil || content.Status.SnapshotHandle == nil || content.Spec.Driver != SnapshotDriver ||
		content.Spec.VolumeSnapshotRef.UID != vs.UID {
		t.Fatalf("content %s: spec %+v status %+v", content.Name, content.Spec, content.Status)
	}

	// The restore path: a pre-provisioned content for that snapshot handle, bound to a new
	// snapshot, made ready by the snapshotter running in the background.
	stopSnapshotter := c.StartSnapshotter(t, ns)
	restoreContent := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "restore-" + string(vs.UID)},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: ns, Name: "data-restore"},
			DeletionPolicy:    snapv1.VolumeSnapshotContentRetain,
			Driver:            SnapshotDriver,
			Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: content.Status.SnapshotHandle},
		},
	}
	if _, err := snaps.VolumeSnapshotContents().Create(ctx, restoreContent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.VolumeSnapshots(ns).Create(ctx, &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "data-restore"},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: &restoreContent.Name}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, c, "the restore snapshot ready", func(ctx context.Context) (bool, error) {
		vs, err := snaps.VolumeSnapshots(ns).Get(ctx, "data-restore", metav1.GetOptions{})
		return err == nil && snapshotReady(vs), err
	})
	stopSnapshotter()

	// Deleting the namespace deletes what is in it (the namespace controller, the garbage
	// collector, and pvc-protection for the PVC's finalizer); contents are cluster-scoped and
	// stay.
	start := time.Now()
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, c, "the namespace gone", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	t.Logf("namespace deleted in %v", time.Since(start).Round(time.Millisecond))
	for _, name := range []string{content.Name, restoreContent.Name} {
		if _, err := snaps.VolumeSnapshotContents().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("content %s after the namespace went: %v", name, err)
		}
		if err := snaps.VolumeSnapshotContents().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
}

// deployment is a Deployment whose pods pass the restricted Pod Security level.
func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	no, yes := false, true
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: &no,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   &yes,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "main",
						Image: "registry.invalid/web:1",
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no,
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

func waitAvailable(ctx context.Context, t *testing.T, c *Cluster, client kubernetes.Interface, ns, name string, replicas int32) {
	t.Helper()
	waitFor(ctx, t, c, fmt.Sprintf("deployment %s with %d available replicas", name, replicas), func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == replicas && d.Status.UpdatedReplicas == replicas, err
	})
}

// waitFor polls cond until it holds; on timeout the test fails with the components' logs.
func waitFor(ctx context.Context, t *testing.T, c *Cluster, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	start := time.Now()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v after %v (last error: %v)\n%s", what, err, time.Since(start).Round(time.Millisecond), last, c.Logs())
	}
}
