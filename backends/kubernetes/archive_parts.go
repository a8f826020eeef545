package kubernetes

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// Service volumes in archives. A service's data PVC is mounted by no pod sailtui can exec
// into with its tools (the service's image is the user's choice, and a stopped service has
// no pod at all), so each archive of one goes through a volume pod of its own: the
// file-manager image, mounting only that PVC at volumeMountPath, on the project's node (the
// project's affinity: a ReadWriteOnce volume is shared by the pods of one node), removed when
// the snapshot or restore is done. Its archives keep numeric owners, as archive.Sandwich's
// service parts do, so that one snapshot restores in either.
//
// With K8S_ALLOW_ROOT_SERVICES a service may own its data as another user than the project's
// (postgres as 999, in a directory of mode 0700): the volume pod then runs as root, which that
// setting's namespaces (Pod Security baseline) admit, and reads and restores every owner.
// Without it every service runs as the project's user, and so does the volume pod.
//
// A manual snapshot is of a running project: a database writing while its files are read
// would be archived torn. Each running service is scaled to zero for the length of its own
// archive and back afterwards (hibernation and restores stop the project first anyway).

// ComponentVolume labels a volume pod.
const ComponentVolume = "volume"

// volumeMountPath is where a volume pod mounts its service's PVC.
const volumeMountPath = "/volume"

const volumeContainer = "volume"

func volumePodName(part string) string { return dnsLabel("vol-" + part) }

// volumePodObject is the volume pod of service part's data PVC.
func (r *Runtime) volumePodObject(p engine.Project, part string) *corev1.Pod {
	labels := projectLabels(p, ComponentVolume)
	labels[LabelContainerID] = labelValue(part)
	ctr := corev1.Container{
		Name:    volumeContainer,
		Image:   r.cfg.FileManagerImage,
		Command: []string{"sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
	tmpl := r.podTemplate(p, labels, ctr)
	spec := tmpl.Spec
	spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: svcPVCNamed(part)}}}}
	pc := &spec.Containers[0]
	pc.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: volumeMountPath}}
	pc.WorkingDir = volumeMountPath
	spec.RestartPolicy = corev1.RestartPolicyNever
	grace := int64(1)
	spec.TerminationGracePeriodSeconds = &grace
	if r.cfg.AllowRootServices {
		// Root, to read and give back every owner of a service's data; no privilege
		// escalation, the default capabilities only, a seccomp profile, no token.
		no, root := false, int64(0)
		spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &root, RunAsGroup: &root,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		pc.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no}
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: volumePodName(part), Namespace: r.Namespace(p), Labels: labels},
		Spec:       spec,
	}
}

// volumePod starts the volume pod of part (a running one left by an earlier run is used as it
// is) and returns its mount once it runs.
func (a *ArchiveVolumes) volumePod(ctx context.Context, p engine.Project, part string) (mount, error) {
	ns := a.rt.Namespace(p)
	pods := a.rt.kube.CoreV1().Pods(ns)
	obj := a.rt.volumePodObject(p, part)
	what := "the volume pod of " + part
	if old, err := pods.Get(ctx, obj.Name, metav1.GetOptions{}); err == nil {
		ended := old.Status.Phase != corev1.PodRunning && old.Status.Phase != corev1.PodPending
		if old.DeletionTimestamp != nil || ended {
			// Going (the last snapshot's, removed without waiting) or ended (its node
			// restarted, say): a pod never runs again; make a new one once it is gone.
			if old.DeletionTimestamp == nil {
				if err := pods.Delete(ctx, obj.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return mount{}, fmt.Errorf("remove the ended %s: %w", what, err)
				}
			}
			if err := waitFor(ctx, a.rt.kube.CoreV1().RESTClient(), "pods", ns, obj.Name, &corev1.Pod{}, a.rt.cfg.DeleteTimeout, gone); err != nil {
				return mount{}, fmt.Errorf("remove the old %s: %w", what, err)
			}
		}
	}
	if _, err := pods.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return mount{}, fmt.Errorf("create %s: %w", what, err)
	}
	pod, err := a.rt.runningPod(ctx, ns, map[string]string{LabelProjectID: labelValue(p.ID), LabelComponent: ComponentVolume,
		LabelContainerID: labelValue(part)}, "volume pod of "+part)
	if err != nil {
		return mount{}, err
	}
	return mount{pod: pod, container: volumeContainer, dir: volumeMountPath, owners: true, what: what}, nil
}

// removeVolumePods deletes the volume pods of parts, without waiting for them to go.
func (a *ArchiveVolumes) removeVolumePods(ctx context.Context, p engine.Project, parts []string) {
	pods := a.rt.kube.CoreV1().Pods(a.rt.Namespace(p))
	for _, part := range parts {
		_ = pods.Delete(ctx, volumePodName(part), metav1.DeleteOptions{})
	}
}

// partPVC reports whether service part has its data PVC: false when it was never started (or
// was removed), an error while the PVC is being deleted (its data is going: no snapshot).
func (a *ArchiveVolumes) partPVC(ctx context.Context, p engine.Project, part string) (bool, error) {
	pvc, err := a.rt.kube.CoreV1().PersistentVolumeClaims(a.rt.Namespace(p)).Get(ctx, svcPVCNamed(part), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("service volume %s: get pvc %s: %w", part, svcPVCNamed(part), err)
	}
	if pvc.DeletionTimestamp != nil {
		return false, fmt.Errorf("service volume %s: pvc %s is being deleted: %w", part, pvc.Name, engine.ErrBadState)
	}
	return true, nil
}

// captureParts stores each service volume of stored as an object of its own (stored.Part),
// recording a service without a PVC as absent.
func (a *ArchiveVolumes) captureParts(ctx context.Context, p engine.Project, stored engine.Snapshot, ex archive.Excluder) (engine.Snapshot, error) {
	var started []string
	defer func() { a.removeVolumePods(context.WithoutCancel(ctx), p, started) }()
	for i, part := range stored.Parts {
		ok, err := a.partPVC(ctx, p, part.Name)
		if err != nil {
			return stored, err
		}
		if !ok {
			// A service never started has no volume yet: nothing of it to lose, and a
			// snapshot that refused it would keep its project from ever hibernating.
			stored.Parts[i].Absent = true
			continue
		}
		started = append(started, part.Name)
		sub, err := a.captureQuiet(ctx, p, stored.Part(i), part.Name, ex)
		if err != nil {
			return stored, fmt.Errorf("service volume %s: %w", part.Name, err)
		}
		stored.SetPart(i, sub)
	}
	return stored, nil
}

// captureQuiet archives service part's volume with the service stopped, started again after
// when it ran.
func (a *ArchiveVolumes) captureQuiet(ctx context.Context, p engine.Project, snap engine.Snapshot, part string, ex archive.Excluder) (engine.Snapshot, error) {
	resume, err := a.stopService(ctx, p, part)
	if err != nil {
		return snap, err
	}
	defer resume()
	mt, err := a.volumePod(ctx, p, part)
	if err != nil {
		return snap, err
	}
	return a.capture(ctx, p, snap, mt, ex)
}

// stopService scales service part to zero when it runs, and returns what scales it back. A
// crash in between leaves it stopped, as a stop would: the next start brings it back.
func (a *ArchiveVolumes) stopService(ctx context.Context, p engine.Project, part string) (resume func(), err error) {
	ns := a.rt.Namespace(p)
	name := dnsLabel("svc-" + part)
	d, err := a.rt.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get deployment %s: %w", name, err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas == 0 {
		return func() {}, nil
	}
	replicas := *d.Spec.Replicas
	if report := engine.ProgressFrom(ctx); report != nil {
		report(engine.Progress{Phase: "stopping service " + part + " for its snapshot"})
	}
	if err := a.rt.scaleDown(ctx, ns, name); err != nil {
		return nil, fmt.Errorf("stop the service for its snapshot: %w", err)
	}
	return func() {
		// The service is back, ready, before the snapshot is reported taken (bounded: a
		// service that does not come back shows as such in its status, and the snapshot
		// stands).
		ctx := context.WithoutCancel(ctx)
		patch := []byte(`{"spec":{"replicas":` + strconv.Itoa(int(replicas)) + `}}`)
		d, err := a.rt.kube.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: fieldManager})
		if err != nil {
			return
		}
		_ = waitFrom(ctx, a.rt.kube.AppsV1().RESTClient(), "deployments", d, podWait, func(obj runtime.Object) (bool, error) {
			d, ok := obj.(*appsv1.Deployment)
			return ok && d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas >= replicas, nil
		})
	}, nil
}

// restoreMounts makes, for each service volume snap holds, its data PVC (when missing) and
// volume pod, and returns them as restore targets; release removes the pods.
func (a *ArchiveVolumes) restoreMounts(ctx context.Context, p engine.Project, snap engine.Snapshot) ([]*staged, func(), error) {
	var started []string
	release := func() { a.removeVolumePods(context.WithoutCancel(ctx), p, started) }
	var out []*staged
	for i, part := range snap.Parts {
		if part.Absent {
			continue
		}
		if err := a.rt.createSvcPVC(ctx, p, part.Name, ""); err != nil {
			return nil, release, fmt.Errorf("service volume %s: %w", part.Name, err)
		}
		started = append(started, part.Name)
		mt, err := a.volumePod(ctx, p, part.Name)
		if err != nil {
			return nil, release, fmt.Errorf("service volume %s: %w", part.Name, err)
		}
		out = append(out, &staged{mt: mt, snap: snap.Part(i), part: part.Name})
	}
	return out, release, nil
}
