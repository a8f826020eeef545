package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sailtui/sailtui/engine"
)

// SnapshotsBackend is what Snapshots stores in Snapshot.Backend.
const SnapshotsBackend = "csi"

// Snapshots is the engine.Volumes of CSI VolumeSnapshots. A snapshot lives as a VolumeSnapshot
// in the project's namespace and its VolumeSnapshotContent, which is switched to
// deletionPolicy Retain once ready, so the namespace can be deleted (hibernation) without
// taking the data with it. Restoring into a namespace that no longer has the VolumeSnapshot
// binds a new, pre-provisioned content (same snapshot handle, also Retain) to a new
// VolumeSnapshot there, and the PVC is created from it. Delete removes the VolumeSnapshot and
// every content of the snapshot, the original last and with deletionPolicy Delete, so the
// storage system frees the data.
//
// Snapshot.Location is "<namespace>/<volumesnapshot>" and, once ready, "/<content>".
type Snapshots struct {
	rt *Runtime
}

var (
	_ engine.Volumes        = (*Snapshots)(nil)
	_ engine.ServiceVolumes = (*Snapshots)(nil)
)

// CapturesServiceVolumes implements engine.ServiceVolumes: a service's data PVC is a part of
// every snapshot, a VolumeSnapshot of its own.
func (s *Snapshots) CapturesServiceVolumes() bool { return true }

// NewSnapshots returns the VolumeSnapshot Volumes of rt's cluster.
func NewSnapshots(rt *Runtime) *Snapshots { return &Snapshots{rt: rt} }

// Name implements engine.Volumes.
func (s *Snapshots) Name() string { return SnapshotsBackend }

type location struct{ ns, name, content string }

func parseLocation(s engine.Snapshot) (location, error) {
	parts := strings.Split(s.Location, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return location{}, fmt.Errorf("snapshot %s: location %q is not namespace/volumesnapshot[/content]: %w", s.ID, s.Location, engine.ErrBadInput)
	}
	l := location{ns: parts[0], name: parts[1]}
	if len(parts) == 3 {
		l.content = parts[2]
	}
	return l, nil
}

func (l location) String() string {
	if l.content == "" {
		return l.ns + "/" + l.name
	}
	return l.ns + "/" + l.name + "/" + l.content
}

// snapshotName is the VolumeSnapshot of engine snapshot id: ids are made of [a-z0-9-].
func snapshotName(id string) string { return dnsLabel("snap-" + id) }

func (s *Snapshots) snapshotLabels(p engine.Project, id string) map[string]string {
	l := projectLabels(p, ComponentSnapshot)
	l[LabelSnapshotID] = labelValue(id)
	return l
}

// Create makes the VolumeSnapshot of the project's PVC and one of each service's data PVC
// (snap.Parts; each part's is labelled with the part's id, "<snapshot>.<service>"), idempotent:
// a retry finds the ones it made. It does not wait: WaitReady does. A missing PVC is
// ErrNotFound (invariant 1: no storage is no snapshot), not a VolumeSnapshot that could never
// become ready; every PVC is checked before any VolumeSnapshot is made.
func (s *Snapshots) Create(ctx context.Context, p engine.Project, snap engine.Snapshot) (engine.Snapshot, error) {
	ctx = bindProgress(ctx, p.ID, snap.Type.TakenBy())
	pvcs := []string{PVCName}
	for _, pt := range snap.Parts {
		pvcs = append(pvcs, svcPVCNamed(pt.Name))
	}
	stored := snap
	stored.Parts = slices.Clone(snap.Parts)
	for i, pvc := range pvcs {
		err := s.checkPVC(ctx, p, snap, pvc)
		if i > 0 && errors.Is(err, engine.ErrNotFound) { // the project PVC (i == 0) is there: so is the namespace
			// A service never started has no PVC yet: nothing of it to lose, and a snapshot
			// that refused it would keep its project from ever hibernating.
			stored.Parts[i-1].Absent = true
			continue
		}
		if err != nil {
			return snap, err
		}
	}
	if progress := engine.ProgressFrom(ctx); progress != nil {
		progress(engine.Progress{ProjectID: p.ID, Op: snap.Type.TakenBy(), Phase: "snapshot"})
	}
	stored.Backend = SnapshotsBackend
	loc, err := s.createOne(ctx, p, snap.ID, PVCName)
	if err != nil {
		return snap, err
	}
	stored.Location = loc
	for i := range stored.Parts {
		if stored.Parts[i].Absent {
			continue
		}
		sub := stored.Part(i)
		if sub.Location, err = s.createOne(ctx, p, sub.ID, pvcs[i+1]); err != nil {
			return snap, fmt.Errorf("service volume %s: %w", stored.Parts[i].Name, err)
		}
		stored.SetPart(i, sub)
	}
	return stored, nil
}

// checkPVC fails unless the PVC named pvc of p is there and not being deleted.
func (s *Snapshots) checkPVC(ctx context.Context, p engine.Project, snap engine.Snapshot, pvc string) error {
	rt := s.rt
	ns := rt.Namespace(p)
	cur, err := rt.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pvc, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || (err != nil && rt.namespaceGone(ctx, ns, err)) || (err == nil && cur.DeletionTimestamp != nil):
		return fmt.Errorf("snapshot %s of %s: pvc %s/%s is gone: %w", snap.ID, p.Slug, ns, pvc, engine.ErrNotFound)
	case err != nil:
		return fmt.Errorf("snapshot %s of %s: read pvc %s/%s: %w", snap.ID, p.Slug, ns, pvc, err)
	}
	return nil
}

// createOne makes the VolumeSnapshot of one PVC for the snapshot (or part) id and returns its
// location.
func (s *Snapshots) createOne(ctx context.Context, p engine.Project, id, pvc string) (string, error) {
	rt := s.rt
	ns := rt.Namespace(p)
	vs := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: snapshotName(id), Namespace: ns, Labels: s.snapshotLabels(p, id)},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &pvc}},
	}
	if rt.cfg.SnapshotClass != "" {
		vs.Spec.VolumeSnapshotClassName = &rt.cfg.SnapshotClass
	}
	_, err := rt.kube.SnapshotV1().VolumeSnapshots(ns).Create(ctx, vs, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create VolumeSnapshot %s/%s: %w", ns, vs.Name, err)
	}
	return location{ns: ns, name: vs.Name}.String(), nil
}

// WaitReady waits (up to the configured timeout) for the VolumeSnapshot to be readyToUse, then
// switches its content to deletionPolicy Retain and records the content's name and size; the
// snapshot comes back SnapshotReady. A snapshot already recorded with its content is checked
// by reading the content. Every part is waited for the same way: the snapshot is ready only
// once all of its VolumeSnapshots are.
func (s *Snapshots) WaitReady(ctx context.Context, snap engine.Snapshot) (engine.Snapshot, error) {
	parts := snap.Parts
	ready, err := s.waitOne(ctx, snap)
	if err != nil {
		return snap, err
	}
	ready.Parts = slices.Clone(parts)
	for i := range ready.Parts {
		if ready.Parts[i].Absent {
			continue
		}
		sub, err := s.waitOne(ctx, ready.Part(i))
		if err != nil {
			return snap, fmt.Errorf("service volume %s: %w", ready.Parts[i].Name, err)
		}
		ready.SetPart(i, sub)
	}
	return ready, nil
}

// waitOne is WaitReady of one VolumeSnapshot (snap's own, or a part's).
func (s *Snapshots) waitOne(ctx context.Context, snap engine.Snapshot) (engine.Snapshot, error) {
	rt := s.rt
	loc, err := parseLocation(snap)
	if err != nil {
		return snap, err
	}
	contents := rt.kube.SnapshotV1().VolumeSnapshotContents()
	if loc.content == "" {
		var ready *snapv1.VolumeSnapshot
		var lastErr string
		err := waitFor(ctx, rt.kube.SnapshotV1().RESTClient(), "volumesnapshots", loc.ns, loc.name, &snapv1.VolumeSnapshot{},
			rt.cfg.SnapshotReadyTimeout, func(obj runtime.Object) (bool, error) {
				if obj == nil {
					return false, fmt.Errorf("VolumeSnapshot %s/%s is gone: %w", loc.ns, loc.name, engine.ErrNotFound)
				}
				vs := obj.(*snapv1.VolumeSnapshot)
				st := vs.Status
				if st == nil {
					return false, nil
				}
				if st.Error != nil && st.Error.Message != nil {
					lastErr = *st.Error.Message // the snapshotter retries; reported if the wait runs out
				}
				if st.ReadyToUse != nil && *st.ReadyToUse && st.BoundVolumeSnapshotContentName != nil {
					ready = vs
					return true, nil
				}
				return false, nil
			})
		if err != nil {
			if errors.Is(err, errWaitTimeout) {
				if lastErr != "" {
					err = fmt.Errorf("%w (snapshotter: %s)", err, lastErr)
				}
				return snap, fmt.Errorf("VolumeSnapshot %s/%s not ready within %s (K8S_SNAPSHOT_READY_TIMEOUT_SECONDS); nothing was deleted: %w",
					loc.ns, loc.name, rt.cfg.SnapshotReadyTimeout, err)
			}
			return snap, err
		}
		loc.content = *ready.Status.BoundVolumeSnapshotContentName
		if ready.Status.RestoreSize != nil {
			snap.CapacityBytes = ready.Status.RestoreSize.Value()
		}
	}
	content, err := contents.Get(ctx, loc.content, metav1.GetOptions{})
	if err != nil {
		return snap, fmt.Errorf("read VolumeSnapshotContent %s: %w", loc.content, err)
	}
	if content.Status == nil || content.Status.ReadyToUse == nil || !*content.Status.ReadyToUse || content.Status.SnapshotHandle == nil {
		return snap, fmt.Errorf("VolumeSnapshotContent %s is not ready: %w", loc.content, engine.ErrBadState)
	}
	if content.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentRetain {
		if err := s.setDeletionPolicy(ctx, loc.content, snapv1.VolumeSnapshotContentRetain); err != nil {
			return snap, err
		}
	}
	// restoreSize is the size of the volume a restore needs (drivers report the source PVC's
	// capacity), not the data the snapshot holds: capacity, never shown as data.
	if snap.CapacityBytes == 0 && content.Status.RestoreSize != nil {
		snap.CapacityBytes = *content.Status.RestoreSize
	}
	snap.Location = loc.String()
	// Ready as engine.Volumes promises (the engine stamps ReadyAt with its clock).
	snap.Status = engine.SnapshotReady
	return snap, nil
}

func (s *Snapshots) setDeletionPolicy(ctx context.Context, content string, policy snapv1.DeletionPolicy) error {
	patch := fmt.Sprintf(`{"spec":{"deletionPolicy":%q}}`, policy)
	_, err := s.rt.kube.SnapshotV1().VolumeSnapshotContents().Patch(ctx, content, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("set deletionPolicy %s on VolumeSnapshotContent %s: %w", policy, content, err)
	}
	return nil
}

// Restore gives the project a PVC made from the snapshot, and each service a data PVC made
// from its part: from the VolumeSnapshot itself when it is still in the project's namespace,
// else from a new one bound to a pre-provisioned content. Every source is ready before any PVC
// is touched (a snapshot is restored whole or not at all); an old PVC (and the pods that mount
// it) is removed only then.
func (s *Snapshots) Restore(ctx context.Context, p engine.Project, snap engine.Snapshot) error {
	ctx = bindProgress(ctx, p.ID, engine.OpRestore)
	type target struct {
		snap   engine.Snapshot
		loc    location
		pvc    string // the PVC's name
		holder string // the Deployment whose pods mount it
		source string
		create func(from string) error
	}
	targets := []*target{{snap: snap, pvc: PVCName, holder: FileManagerName,
		create: func(from string) error { return s.rt.createPVC(ctx, p, from) }}}
	for i, pt := range snap.Parts {
		if pt.Absent {
			continue
		}
		name := pt.Name
		targets = append(targets, &target{snap: snap.Part(i), pvc: svcPVCNamed(name),
			holder: svcDeploymentName(engine.Container{Name: name}),
			create: func(from string) error { return s.rt.createSvcPVC(ctx, p, name, from) }})
	}
	for _, t := range targets {
		loc, err := parseLocation(t.snap)
		if err != nil {
			return err
		}
		if loc.content == "" {
			return fmt.Errorf("restore %s: snapshot %s was never ready (no content recorded): %w", p.Slug, t.snap.ID, engine.ErrBadState)
		}
		t.loc = loc
	}
	if progress := engine.ProgressFrom(ctx); progress != nil {
		progress(engine.Progress{ProjectID: p.ID, Op: engine.OpRestore, Phase: "restore"})
	}
	for _, t := range targets {
		source, err := s.sourceIn(ctx, p, t.snap, t.loc)
		if err != nil {
			return fmt.Errorf("restore %s from %s: %w", p.Slug, t.snap.ID, err)
		}
		t.source = source
	}
	pvcs := s.rt.kube.CoreV1().PersistentVolumeClaims(s.rt.Namespace(p))
	// The sources may have taken long enough for the operation to be taken over (a paused
	// process): volumes are replaced only while it still holds the project.
	if err := engine.CheckHold(ctx, "replace the volumes"); err != nil {
		return fmt.Errorf("restore %s: %w", p.Slug, err)
	}
	for _, t := range targets {
		cur, err := pvcs.Get(ctx, t.pvc, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("restore %s: read pvc %s: %w", p.Slug, t.pvc, err)
		case cur.Spec.DataSource != nil && cur.Spec.DataSource.Name == t.source && cur.DeletionTimestamp == nil:
			continue // a resumed restore that got this far already
		default:
			if err := s.removePVC(ctx, p, cur, t.holder); err != nil {
				return fmt.Errorf("restore %s: %w", p.Slug, err)
			}
		}
		if err := t.create(t.source); err != nil {
			return fmt.Errorf("restore %s: %w", p.Slug, err)
		}
	}
	if err := s.rt.ensureFileManager(ctx, p); err != nil {
		return fmt.Errorf("restore %s: %w", p.Slug, err)
	}
	return nil
}

// sourceIn returns the name of a ready VolumeSnapshot of snap in p's namespace, making one from
// a pre-provisioned content when the original is not there.
func (s *Snapshots) sourceIn(ctx context.Context, p engine.Project, snap engine.Snapshot, loc location) (string, error) {
	rt := s.rt
	ns := rt.Namespace(p)
	api := rt.kube.SnapshotV1()
	if loc.ns == ns {
		vs, err := api.VolumeSnapshots(ns).Get(ctx, loc.name, metav1.GetOptions{})
		if err == nil && vs.DeletionTimestamp == nil && vs.Status != nil && vs.Status.ReadyToUse != nil && *vs.Status.ReadyToUse {
			return loc.name, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("read VolumeSnapshot %s/%s: %w", ns, loc.name, err)
		}
	}
	orig, err := api.VolumeSnapshotContents().Get(ctx, loc.content, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read VolumeSnapshotContent %s: %w", loc.content, err)
	}
	if orig.Status == nil || orig.Status.SnapshotHandle == nil {
		return "", fmt.Errorf("VolumeSnapshotContent %s has no snapshot handle: %w", loc.content, engine.ErrBadState)
	}
	name := dnsLabel("restore-" + snap.ID)
	contentName := dnsLabel("sailtui-" + ns + "-" + name)
	handle := *orig.Status.SnapshotHandle
	content := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: contentName, Labels: s.snapshotLabels(p, snap.ID)},
		Spec: snapv1.VolumeSnapshotContentSpec{
			// Retain: this content shares its handle with the original; deleting it must never
			// delete the data the original still names.
			DeletionPolicy:          snapv1.VolumeSnapshotContentRetain,
			Driver:                  orig.Spec.Driver,
			Source:                  snapv1.VolumeSnapshotContentSource{SnapshotHandle: &handle},
			VolumeSnapshotClassName: orig.Spec.VolumeSnapshotClassName,
			VolumeSnapshotRef:       corev1.ObjectReference{Namespace: ns, Name: name, Kind: "VolumeSnapshot", APIVersion: snapv1.SchemeGroupVersion.String()},
		},
	}
	if _, err := api.VolumeSnapshotContents().Create(ctx, content, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create VolumeSnapshotContent %s: %w", contentName, err)
	}
	vs := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: s.snapshotLabels(p, snap.ID)},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: &contentName}},
	}
	if _, err := api.VolumeSnapshots(ns).Create(ctx, vs, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create VolumeSnapshot %s/%s: %w", ns, name, err)
	}
	if _, err := s.WaitReady(ctx, engine.Snapshot{ID: snap.ID, Location: location{ns: ns, name: name}.String()}); err != nil {
		return "", err
	}
	return name, nil
}

// removePVC deletes a PVC of the project and the pods of holder, the Deployment mounting it
// (the file manager's, a service's; the engine stopped the dev Deployments, and services too,
// but a service is scaled down here again in case), and waits until it is gone.
func (s *Snapshots) removePVC(ctx context.Context, p engine.Project, pvc *corev1.PersistentVolumeClaim, holder string) error {
	rt := s.rt
	ns := rt.Namespace(p)
	if err := rt.scaleDown(ctx, ns, holder); err != nil {
		return fmt.Errorf("stop %s: %w", holder, err)
	}
	if pvc.DeletionTimestamp == nil {
		uid := pvc.UID
		err := rt.kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, pvc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pvc %s: %w", pvc.Name, err)
		}
	}
	err := waitFrom(ctx, rt.kube.CoreV1().RESTClient(), "persistentvolumeclaims", pvc, rt.cfg.DeleteTimeout,
		func(obj runtime.Object) (bool, error) {
			return obj == nil || obj.(*corev1.PersistentVolumeClaim).UID != pvc.UID, nil
		})
	if err != nil {
		return fmt.Errorf("pvc %s still in use (%s): %w", pvc.Name, rt.claimBlockers(context.WithoutCancel(ctx), ns, pvc.Name), err)
	}
	return nil
}

// claimBlockers says what keeps a PVC of the project from going: its finalizers and the pods
// that still mount it.
func (r *Runtime) claimBlockers(ctx context.Context, ns, name string) string {
	var why []string
	if pvc, err := r.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); err == nil && len(pvc.Finalizers) > 0 {
		why = append(why, "finalizers "+strings.Join(pvc.Finalizers, ", "))
	}
	if pods, err := r.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
					why = append(why, fmt.Sprintf("mounted by pod %s (%s)", p.Name, p.Status.Phase))
				}
			}
		}
	}
	if len(why) == 0 {
		return "nothing visible holds it"
	}
	return strings.Join(why, "; ")
}

// Delete removes the snapshot: its VolumeSnapshots (when their namespace still exists), the
// pre-provisioned contents of restores, and the original content with deletionPolicy Delete
// so the storage system frees the data; the same for every part. Idempotent.
func (s *Snapshots) Delete(ctx context.Context, snap engine.Snapshot) error {
	for i := range snap.Parts {
		if snap.Parts[i].Absent {
			continue
		}
		if err := s.deleteOne(ctx, snap.Part(i)); err != nil {
			return fmt.Errorf("service volume %s: %w", snap.Parts[i].Name, err)
		}
	}
	return s.deleteOne(ctx, snap)
}

// deleteOne is Delete of one VolumeSnapshot (snap's own, or a part's).
func (s *Snapshots) deleteOne(ctx context.Context, snap engine.Snapshot) error {
	rt := s.rt
	if snap.Location == "" {
		return nil // never created
	}
	loc, err := parseLocation(snap)
	if err != nil {
		return err
	}
	api := rt.kube.SnapshotV1()
	if err := api.VolumeSnapshots(loc.ns).Delete(ctx, loc.name, metav1.DeleteOptions{}); err != nil &&
		!apierrors.IsNotFound(err) && !rt.namespaceGone(ctx, loc.ns, err) {
		return fmt.Errorf("delete snapshot %s: VolumeSnapshot %s/%s: %w", snap.ID, loc.ns, loc.name, err)
	}
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelSnapshotID: labelValue(snap.ID)}.String()
	list, err := api.VolumeSnapshotContents().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("delete snapshot %s: list contents: %w", snap.ID, err)
	}
	for _, c := range list.Items {
		if c.Name == loc.content {
			continue
		}
		if err := api.VolumeSnapshotContents().Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete snapshot %s: content %s: %w", snap.ID, c.Name, err)
		}
	}
	content := loc.content
	if content == "" {
		// Deleted before it was ready: its content, if the snapshotter made one, is still Delete
		// and goes with the VolumeSnapshot.
		return nil
	}
	if err := s.setDeletionPolicy(ctx, content, snapv1.VolumeSnapshotContentDelete); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("delete snapshot %s: %w", snap.ID, err)
	}
	if err := api.VolumeSnapshotContents().Delete(ctx, content, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete snapshot %s: content %s: %w", snap.ID, content, err)
	}
	return nil
}

// ensureFileManager (re)applies the file-manager Deployment with one replica.
func (r *Runtime) ensureFileManager(ctx context.Context, p engine.Project) error {
	if _, err := apply(ctx, r.kube.AppsV1().Deployments(r.Namespace(p)), r.fileManagerObject(p)); err != nil {
		return fmt.Errorf("file manager: %w", err)
	}
	return nil
}
