package k8stest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// ReadySnapshots plays the CSI snapshotter (snapshot-controller and csi-snapshotter sidecar)
// once, for every VolumeSnapshot in namespace ("" for all) that is not ready yet:
//
//   - a snapshot of a PVC gets a VolumeSnapshotContent named snapcontent-<snapshot UID> as
//     the real controller names it (unless its class is of a driver other than SnapshotDriver:
//     then it stays pending, as no snapshotter serves it), with the driver and deletion policy of its class
//     (SnapshotClass when it names none), a made-up snapshot handle and the PVC's requested
//     size as restore size;
//   - a snapshot of a pre-provisioned content (spec.source.volumeSnapshotContentName, the
//     restore path) is bound to that content once it exists and points back at the snapshot,
//     and is left pending while it does not;
//
// then both get readyToUse=true. It returns how many snapshots it made ready. Unlike the real
// controller it adds no finalizers and never deletes a content when its snapshot goes, so a
// test sees exactly the contents the code under test leaves behind.
func (c *Cluster) ReadySnapshots(ctx context.Context, namespace string) (int, error) {
	list, err := c.Snapshots.SnapshotV1().VolumeSnapshots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("k8stest: list VolumeSnapshots in %q: %w", namespace, err)
	}
	n := 0
	for i := range list.Items {
		ready, err := c.readySnapshot(ctx, &list.Items[i])
		if err != nil {
			return n, err
		}
		if ready {
			n++
		}
	}
	return n, nil
}

// StartSnapshotter plays the CSI snapshotter until stop is called or tb ends: it watches the
// VolumeSnapshots of namespace ("" for all), and the contents, and makes each snapshot ready
// as ReadySnapshots does. A test of what happens when snapshots never become ready simply
// does not start it. Failures are reported on tb.
func (c *Cluster) StartSnapshotter(tb testing.TB, namespace string) (stop func()) {
	api := c.Snapshots.SnapshotV1()
	// The two informers' handlers run concurrently and may handle the same snapshot; one at a
	// time, the second finds it ready.
	var mu sync.Mutex
	snaps := cache.NewListWatchFromClient(api.RESTClient(), "volumesnapshots", namespace, fields.Everything())
	stopSnaps := c.runInformer(tb, "snapshotter", snaps, &snapv1.VolumeSnapshot{}, func(ctx context.Context, obj runtime.Object) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := c.readySnapshot(ctx, obj.(*snapv1.VolumeSnapshot))
		return err
	})
	// A pre-provisioned content may be created after the snapshot that names it: its arrival
	// is what makes that snapshot ready.
	contents := cache.NewListWatchFromClient(api.RESTClient(), "volumesnapshotcontents", "", fields.Everything())
	stopContents := c.runInformer(tb, "snapshotter", contents, &snapv1.VolumeSnapshotContent{}, func(ctx context.Context, obj runtime.Object) error {
		ref := obj.(*snapv1.VolumeSnapshotContent).Spec.VolumeSnapshotRef
		if ref.Name == "" || (namespace != "" && ref.Namespace != namespace) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		vs, err := api.VolumeSnapshots(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = c.readySnapshot(ctx, vs)
		return err
	})
	return func() { stopSnaps(); stopContents() }
}

// dynamicHandle is the snapshot handle of the content cut for the snapshot with uid.
func dynamicHandle(uid types.UID) string { return "k8stest-snapshot-" + string(uid) }

func contentReady(c *snapv1.VolumeSnapshotContent) bool {
	return c.Status != nil && c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
}

func snapshotReady(vs *snapv1.VolumeSnapshot) bool {
	return vs.Status != nil && vs.Status.ReadyToUse != nil && *vs.Status.ReadyToUse
}

// readySnapshot makes vs ready, reporting false when it already was, is going away, or waits
// for its pre-provisioned content.
func (c *Cluster) readySnapshot(ctx context.Context, vs *snapv1.VolumeSnapshot) (bool, error) {
	if vs.DeletionTimestamp != nil || snapshotReady(vs) {
		return false, nil
	}
	var (
		content *snapv1.VolumeSnapshotContent
		size    *resource.Quantity
		err     error
	)
	switch src := vs.Spec.Source; {
	case src.PersistentVolumeClaimName != nil:
		content, size, err = c.dynamicContent(ctx, vs, *src.PersistentVolumeClaimName)
		if err == nil && content != nil && c.snapshotData != nil && !contentReady(content) {
			// The real node keeps real data: the copy exists before the snapshot is ready.
			err = c.snapshotData(ctx, vs.Namespace, *src.PersistentVolumeClaimName, dynamicHandle(vs.UID))
		}
	case src.VolumeSnapshotContentName != nil:
		content, err = c.preProvisionedContent(ctx, vs, *src.VolumeSnapshotContentName)
	default:
		err = errors.New("neither persistentVolumeClaimName nor volumeSnapshotContentName in spec.source")
	}
	if err != nil || content == nil {
		if err != nil {
			err = fmt.Errorf("k8stest: snapshot %s/%s: %w", vs.Namespace, vs.Name, err)
		}
		return false, err
	}
	if err := c.readyContent(ctx, content, size); err != nil {
		return false, fmt.Errorf("k8stest: snapshot %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	snaps := c.Snapshots.SnapshotV1().VolumeSnapshots(vs.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := snaps.Get(ctx, vs.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != vs.UID {
			return apierrors.NewNotFound(snapv1.Resource("volumesnapshots"), vs.Name) // replaced meanwhile
		}
		now := metav1.Now()
		ready := true
		if cur.Status == nil {
			cur.Status = &snapv1.VolumeSnapshotStatus{}
		}
		cur.Status.BoundVolumeSnapshotContentName = &content.Name
		cur.Status.ReadyToUse = &ready
		cur.Status.Error = nil
		if cur.Status.CreationTime == nil {
			cur.Status.CreationTime = &now
		}
		if size != nil {
			cur.Status.RestoreSize = size
		} else if content.Status != nil && content.Status.RestoreSize != nil {
			cur.Status.RestoreSize = resource.NewQuantity(*content.Status.RestoreSize, resource.BinarySI)
		}
		_, err = snaps.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return false, nil // deleted meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("k8stest: ready snapshot %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	return true, nil
}

// dynamicContent creates (or finds) the content the snapshot controller would make for a
// snapshot of PVC pvcName, and returns it with the PVC's requested size.
func (c *Cluster) dynamicContent(ctx context.Context, vs *snapv1.VolumeSnapshot, pvcName string) (*snapv1.VolumeSnapshotContent, *resource.Quantity, error) {
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(vs.Namespace).Get(ctx, pvcName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("source PVC: %w", err)
	}
	className := SnapshotClass
	if vs.Spec.VolumeSnapshotClassName != nil {
		className = *vs.Spec.VolumeSnapshotClassName
	}
	class, err := c.Snapshots.SnapshotV1().VolumeSnapshotClasses().Get(ctx, className, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("VolumeSnapshotClass: %w", err)
	}
	if class.Driver != SnapshotDriver {
		// A CSI snapshotter serves only its own driver: a snapshot of a class of another
		// driver stays pending, which is how a test holds readiness back.
		return nil, nil, nil
	}
	size := pvc.Spec.Resources.Requests.Storage()
	volumeHandle := "k8stest-volume-" + string(pvc.UID)
	mode := corev1.PersistentVolumeFilesystem
	if pvc.Spec.VolumeMode != nil {
		mode = *pvc.Spec.VolumeMode
	}
	content := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-" + string(vs.UID)},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{
				Kind:       "VolumeSnapshot",
				APIVersion: snapv1.SchemeGroupVersion.String(),
				Namespace:  vs.Namespace,
				Name:       vs.Name,
				UID:        vs.UID,
			},
			DeletionPolicy:          class.DeletionPolicy,
			Driver:                  class.Driver,
			VolumeSnapshotClassName: &className,
			Source:                  snapv1.VolumeSnapshotContentSource{VolumeHandle: &volumeHandle},
			SourceVolumeMode:        &mode,
		},
	}
	contents := c.Snapshots.SnapshotV1().VolumeSnapshotContents()
	created, err := contents.Create(ctx, content, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = contents.Get(ctx, content.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("VolumeSnapshotContent: %w", err)
	}
	return created, size, nil
}

// preProvisionedContent is the content named by a restore's snapshot, or nil while it does not
// exist; it must point back at the snapshot, as the real controller requires. Like the real
// controller it fills in the snapshot's UID on the content's reference.
func (c *Cluster) preProvisionedContent(ctx context.Context, vs *snapv1.VolumeSnapshot, name string) (*snapv1.VolumeSnapshotContent, error) {
	contents := c.Snapshots.SnapshotV1().VolumeSnapshotContents()
	var content *snapv1.VolumeSnapshotContent
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if content, err = contents.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		ref := content.Spec.VolumeSnapshotRef
		if ref.Namespace != vs.Namespace || ref.Name != vs.Name || (ref.UID != "" && ref.UID != vs.UID) {
			return fmt.Errorf("VolumeSnapshotContent %s is bound to %s/%s (uid %q), not to this snapshot", name, ref.Namespace, ref.Name, ref.UID)
		}
		if content.Spec.Source.SnapshotHandle == nil {
			return fmt.Errorf("pre-provisioned VolumeSnapshotContent %s has no spec.source.snapshotHandle", name)
		}
		if ref.UID == "" {
			content.Spec.VolumeSnapshotRef.UID = vs.UID
			content, err = contents.Update(ctx, content, metav1.UpdateOptions{})
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pre-provisioned content: %w", err)
	}
	return content, nil
}

// readyContent sets content's status to a cut snapshot: its handle (the pre-provisioned one,
// or one made up from the snapshot's UID), creation time, restore size and readyToUse.
func (c *Cluster) readyContent(ctx context.Context, content *snapv1.VolumeSnapshotContent, size *resource.Quantity) error {
	contents := c.Snapshots.SnapshotV1().VolumeSnapshotContents()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := contents.Get(ctx, content.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.Status != nil && cur.Status.ReadyToUse != nil && *cur.Status.ReadyToUse {
			return nil
		}
		if cur.Status == nil {
			cur.Status = &snapv1.VolumeSnapshotContentStatus{}
		}
		st := cur.Status
		handle := dynamicHandle(cur.Spec.VolumeSnapshotRef.UID)
		if cur.Spec.Source.SnapshotHandle != nil {
			handle = *cur.Spec.Source.SnapshotHandle
		}
		st.SnapshotHandle = &handle
		if st.CreationTime == nil {
			now := time.Now().UnixNano()
			st.CreationTime = &now
		}
		if size != nil {
			bytes := size.Value()
			st.RestoreSize = &bytes
		}
		ready := true
		st.ReadyToUse = &ready
		st.Error = nil
		_, err = contents.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("ready VolumeSnapshotContent %s: %w", content.Name, err)
	}
	return nil
}
