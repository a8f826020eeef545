package k8stest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// The node's storage: a provisioner stand-in and a CSI snapshotter stand-in that keep real
// data on the host disk, as a CSI driver would.
//
//   - Every claim of NodeStorageClass gets a hostPath volume of its own (<dir>/pv/<pv name>,
//     owned by the pods' uid, since hostPath ignores fsGroup), pre-bound to the claim: an
//     external provisioner, not a pool, so that a claim restoring a snapshot can never be
//     bound to an empty volume before its copy is in place.
//   - A claim with a VolumeSnapshot dataSource gets the snapshot's copy in its volume before
//     the volume exists; a snapshot not ready yet is waited for.
//   - A snapshot of a claim copies the claim's directory to <dir>/snapshots/<handle> before it
//     is made ready; a pre-provisioned content (sailtui's restore path) names such a handle.
//   - A released volume is deleted with its directory; a deleted snapshot deletes its content
//     when the content's policy is Delete, and a copy goes when no content names its handle.
const pvUID = 1000

func (n *node) setupStorage(ctx context.Context) error {
	c := n.cluster
	immediate := storagev1.VolumeBindingImmediate
	reclaim := corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: NodeStorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       nodeProvisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &immediate,
	}
	if _, err := c.Client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageClass %s: %w", NodeStorageClass, err)
	}
	n.env.StorageClass = NodeStorageClass
	n.env.SnapshotClass = SnapshotClass
	c.snapshotData = n.copyClaimToSnapshot

	logErr := func(role string) func(error) {
		return func(err error) { fmt.Fprintf(os.Stderr, "k8snode %s: %v\n", role, err) }
	}
	var mu sync.Mutex // one storage change at a time: handlers of the informers race otherwise
	locked := func(f func(context.Context, runtime.Object) error) func(context.Context, runtime.Object) error {
		return func(ctx context.Context, o runtime.Object) error {
			mu.Lock()
			defer mu.Unlock()
			return f(ctx, o)
		}
	}
	core := c.Client.CoreV1().RESTClient()
	snaps := c.Snapshots.SnapshotV1().RESTClient()
	for _, inf := range []struct {
		role     string
		lw       cache.ListerWatcher
		obj      runtime.Object
		on, gone func(context.Context, runtime.Object) error
	}{
		{"provisioner", cache.NewListWatchFromClient(core, "persistentvolumeclaims", "", fields.Everything()), &corev1.PersistentVolumeClaim{},
			n.provision, nil},
		{"provisioner", cache.NewListWatchFromClient(core, "persistentvolumes", "", fields.Everything()), &corev1.PersistentVolume{},
			n.reclaim, n.volumeGone},
		{"snapshotter", cache.NewListWatchFromClient(snaps, "volumesnapshots", "", fields.Everything()), &snapv1.VolumeSnapshot{},
			func(ctx context.Context, o runtime.Object) error {
				_, err := c.readySnapshot(ctx, o.(*snapv1.VolumeSnapshot))
				return err
			}, n.snapshotGone},
		{"snapshotter", cache.NewListWatchFromClient(snaps, "volumesnapshotcontents", "", fields.Everything()), &snapv1.VolumeSnapshotContent{},
			n.contentChanged, n.contentGone},
	} {
		var gone func(context.Context, runtime.Object) error
		if inf.gone != nil {
			gone = locked(inf.gone)
		}
		stop, err := runInformer(inf.lw, inf.obj, locked(inf.on), gone, logErr(inf.role))
		if err != nil {
			return err
		}
		n.stops = append(n.stops, stop)
	}
	return nil
}

// provision makes the volume of a pending claim of the node's class.
func (n *node) provision(ctx context.Context, o runtime.Object) error {
	pvc := o.(*corev1.PersistentVolumeClaim)
	if pvc.DeletionTimestamp != nil || pvc.Spec.VolumeName != "" || pvc.Status.Phase != corev1.ClaimPending {
		return nil
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if class != NodeStorageClass {
		return nil
	}
	name := "pvc-" + string(pvc.UID)
	pvs := n.cluster.Client.CoreV1().PersistentVolumes()
	if _, err := pvs.Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	}
	dir := n.path("pv", name)
	if ds := pvc.Spec.DataSource; ds != nil {
		if ds.Kind != "VolumeSnapshot" {
			return fmt.Errorf("claim %s/%s: dataSource %s is not supported by the node's provisioner", pvc.Namespace, pvc.Name, ds.Kind)
		}
		handle, err := n.snapshotHandle(ctx, pvc.Namespace, ds.Name)
		if err != nil {
			return fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
		if handle == "" {
			n.retry(pvc) // not ready yet
			return nil
		}
		if err := copyTree(ctx, n.path("snapshots", handle), dir); err != nil {
			return fmt.Errorf("claim %s/%s: restore snapshot %s: %w", pvc.Namespace, pvc.Name, ds.Name, err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chown(dir, pvUID, pvUID); err != nil {
		return err
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	dirType := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": nodeProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			StorageClassName:              NodeStorageClass,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}},
		},
	}
	if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create volume for claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

// retry handles the claim again shortly: its snapshot is not ready yet.
func (n *node) retry(pvc *corev1.PersistentVolumeClaim) {
	ns, name := pvc.Namespace, pvc.Name
	time.AfterFunc(500*time.Millisecond, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cur, err := n.cluster.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		if err := n.provision(ctx, cur); err != nil {
			fmt.Fprintf(os.Stderr, "k8snode provisioner: %v\n", err)
		}
	})
}

// snapshotHandle is the handle of the ready snapshot ns/name, or "" while it is not ready.
func (n *node) snapshotHandle(ctx context.Context, ns, name string) (string, error) {
	vs, err := n.cluster.Snapshots.SnapshotV1().VolumeSnapshots(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !snapshotReady(vs) || vs.Status.BoundVolumeSnapshotContentName == nil {
		return "", nil
	}
	content, err := n.cluster.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, *vs.Status.BoundVolumeSnapshotContentName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if content.Status == nil || content.Status.SnapshotHandle == nil {
		return "", nil
	}
	h := *content.Status.SnapshotHandle
	if _, err := os.Stat(n.path("snapshots", h)); err != nil {
		return "", fmt.Errorf("snapshot %s/%s: handle %s has no data on the node: %w", ns, name, h, err)
	}
	return h, nil
}

// reclaim deletes a released volume of the node's provisioner and its directory.
func (n *node) reclaim(ctx context.Context, o runtime.Object) error {
	pv := o.(*corev1.PersistentVolume)
	if pv.Annotations["pv.kubernetes.io/provisioned-by"] != nodeProvisioner || pv.Status.Phase != corev1.VolumeReleased {
		return nil
	}
	if err := n.cluster.Client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete released volume %s: %w", pv.Name, err)
	}
	return nil
}

func (n *node) volumeGone(ctx context.Context, o runtime.Object) error {
	pv := o.(*corev1.PersistentVolume)
	if pv.Annotations["pv.kubernetes.io/provisioned-by"] != nodeProvisioner {
		return nil
	}
	return os.RemoveAll(n.path("pv", pv.Name))
}

// copyClaimToSnapshot copies the volume of claim ns/pvc to the snapshot handle's directory.
func (n *node) copyClaimToSnapshot(ctx context.Context, ns, pvc, handle string) error {
	dst := n.path("snapshots", handle)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	claim, err := n.cluster.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pvc, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("source claim: %w", err)
	}
	if claim.Spec.VolumeName == "" {
		return fmt.Errorf("source claim %s/%s is not bound", ns, pvc)
	}
	pv, err := n.cluster.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("source volume: %w", err)
	}
	if pv.Spec.HostPath == nil {
		return fmt.Errorf("source volume %s is not one of the node's", pv.Name)
	}
	return copyTree(ctx, pv.Spec.HostPath.Path, dst)
}

// snapshotGone deletes the content of a deleted snapshot when its policy says Delete, as
// the snapshot controller does.
func (n *node) snapshotGone(ctx context.Context, o runtime.Object) error {
	vs := o.(*snapv1.VolumeSnapshot)
	if vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil {
		return nil
	}
	contents := n.cluster.Snapshots.SnapshotV1().VolumeSnapshotContents()
	content, err := contents.Get(ctx, *vs.Status.BoundVolumeSnapshotContentName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ref := content.Spec.VolumeSnapshotRef
	if content.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete || ref.Namespace != vs.Namespace || ref.Name != vs.Name || (ref.UID != "" && ref.UID != vs.UID) {
		return nil
	}
	if err := contents.Delete(ctx, content.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete content %s of deleted snapshot %s/%s: %w", content.Name, vs.Namespace, vs.Name, err)
	}
	return nil
}

// contentChanged makes the snapshot a pre-provisioned content names ready once the content
// exists (it may come after the snapshot).
func (n *node) contentChanged(ctx context.Context, o runtime.Object) error {
	ref := o.(*snapv1.VolumeSnapshotContent).Spec.VolumeSnapshotRef
	if ref.Name == "" {
		return nil
	}
	vs, err := n.cluster.Snapshots.SnapshotV1().VolumeSnapshots(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = n.cluster.readySnapshot(ctx, vs)
	return err
}

// contentGone drops the copy of a deleted content's handle when no other content names it.
func (n *node) contentGone(ctx context.Context, o runtime.Object) error {
	gone := o.(*snapv1.VolumeSnapshotContent)
	handle := ""
	if gone.Status != nil && gone.Status.SnapshotHandle != nil {
		handle = *gone.Status.SnapshotHandle
	} else if gone.Spec.Source.SnapshotHandle != nil {
		handle = *gone.Spec.Source.SnapshotHandle
	}
	if handle == "" || strings.ContainsAny(handle, "/\x00") || handle == "." || handle == ".." {
		return nil
	}
	list, err := n.cluster.Snapshots.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, c := range list.Items {
		if (c.Status != nil && c.Status.SnapshotHandle != nil && *c.Status.SnapshotHandle == handle) ||
			(c.Spec.Source.SnapshotHandle != nil && *c.Spec.Source.SnapshotHandle == handle) {
			return nil
		}
	}
	return os.RemoveAll(n.path("snapshots", handle))
}

// copyTree copies src to dst (which must not exist) with owners, modes, links and times,
// through a temporary name, so a half copy is never taken for a whole one.
func copyTree(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(src); err != nil {
		return err
	}
	tmp := dst + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", "--", src, tmp).CombinedOutput(); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("cp -a %s %s: %w: %s", src, tmp, err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
