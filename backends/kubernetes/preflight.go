package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/engine"
)

var _ engine.Preflighter = (*Snapshots)(nil)

// defaultClassAnnotation marks the cluster's default VolumeSnapshotClass (per driver).
const defaultClassAnnotation = "snapshot.storage.kubernetes.io/is-default-class"

// Preflight implements engine.Preflighter: what a hibernation of p needs, checked before it
// stops anything, so a setting that can never work fails at once instead of after the
// containers were stopped and the whole snapshot timeout waited out. It checks the rights to
// create and watch the VolumeSnapshot, keep its content and delete the namespace; that the
// VolumeSnapshotClass exists (K8S_SNAPSHOT_CLASS, or a default class); and that its driver is
// the CSI driver of the PVC's volume, which is the only driver that can snapshot it. A check the
// caller has no right to read for is left to the snapshot itself.
func (s *Snapshots) Preflight(ctx context.Context, p engine.Project) error {
	rt := s.rt
	ns := rt.Namespace(p)
	var errs []error
	for _, need := range []authv1.ResourceAttributes{
		{Namespace: ns, Verb: "create", Group: snapshotGroup, Resource: "volumesnapshots"},
		{Namespace: ns, Verb: "watch", Group: snapshotGroup, Resource: "volumesnapshots"},
		{Verb: "patch", Group: snapshotGroup, Resource: "volumesnapshotcontents"},
		{Verb: "delete", Resource: "namespaces", Name: ns},
	} {
		if err := s.allowed(ctx, need); err != nil {
			errs = append(errs, err)
		}
	}
	driver, err := s.volumeDriver(ctx, ns)
	if err != nil {
		errs = append(errs, err)
	}
	if err := s.checkClass(ctx, driver); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("a snapshot of %s cannot be taken: %w", p.Slug, err)
	}
	return nil
}

// allowed asks the API server whether the caller may do what a names.
func (s *Snapshots) allowed(ctx context.Context, a authv1.ResourceAttributes) error {
	review, err := s.rt.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
	what := a.Verb + " " + a.Resource
	if a.Group != "" {
		what += "." + a.Group
	}
	if a.Name != "" {
		what += " " + a.Name
	} else if a.Namespace != "" {
		what += " in namespace " + a.Namespace
	}
	if err != nil {
		return fmt.Errorf("check the right to %s: %w", what, err)
	}
	if !review.Status.Allowed {
		return fmt.Errorf("not allowed to %s (see the rules of sailtui manifests)", what)
	}
	return nil
}

// volumeDriver is the CSI driver of the volume bound to the project's PVC, "" when that is not
// known (not bound yet, not a CSI volume, not readable by the caller).
func (s *Snapshots) volumeDriver(ctx context.Context, ns string) (string, error) {
	pvc, err := s.rt.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, PVCName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("pvc %s/%s is gone: %w", ns, PVCName, engine.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read pvc %s/%s: %w", ns, PVCName, err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", nil
	}
	pv, err := s.rt.kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the volume %s of pvc %s/%s: %w", pvc.Spec.VolumeName, ns, PVCName, err)
	}
	if pv.Spec.CSI == nil {
		return "", nil
	}
	return pv.Spec.CSI.Driver, nil
}

// checkClass checks that the snapshot class exists and, when the volume's driver is known,
// that the class is of that driver.
func (s *Snapshots) checkClass(ctx context.Context, driver string) error {
	classes := s.rt.kube.SnapshotV1().VolumeSnapshotClasses()
	name := s.rt.cfg.SnapshotClass
	if name != "" {
		class, err := classes.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("VolumeSnapshotClass %q (K8S_SNAPSHOT_CLASS) does not exist", name)
		case apierrors.IsForbidden(err):
			return nil
		case err != nil:
			return fmt.Errorf("read VolumeSnapshotClass %q: %w", name, err)
		}
		if driver != "" && class.Driver != driver {
			return fmt.Errorf("VolumeSnapshotClass %q (K8S_SNAPSHOT_CLASS) is of driver %s, but the project's volume is of driver %s: no snapshot of it can be taken with that class",
				name, class.Driver, driver)
		}
		return nil
	}
	// No class named: the snapshot controller takes the default class of the volume's driver.
	list, err := classes.List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list VolumeSnapshotClasses: %w", err)
	}
	var defaults []string
	for _, c := range list.Items {
		if c.Annotations[defaultClassAnnotation] != "true" {
			continue
		}
		if driver == "" || c.Driver == driver {
			return nil
		}
		defaults = append(defaults, classDesc(c))
	}
	if len(defaults) == 0 {
		return errors.New("no VolumeSnapshotClass is marked the default (" + defaultClassAnnotation + "): set K8S_SNAPSHOT_CLASS")
	}
	return fmt.Errorf("no default VolumeSnapshotClass is of the volume's driver %s (defaults: %s): set K8S_SNAPSHOT_CLASS",
		driver, strings.Join(defaults, ", "))
}

func classDesc(c snapv1.VolumeSnapshotClass) string { return c.Name + " of " + c.Driver }
