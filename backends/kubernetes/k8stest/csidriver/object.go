package csidriver

import (
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is the CSIDriver the cluster needs for driver name: no attach step (a volume is a
// directory on its node, there is nothing to attach, so no external-attacher either), and
// the kubelet applies a pod's fsGroup to the volume's files (File: a directory has no mount
// option for it, and the volume is made root-owned).
func Object(name string) *storagev1.CSIDriver {
	attach, podInfo, capacity, republish := false, false, false, false
	policy := storagev1.FileFSGroupPolicy
	return &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       &attach,
			PodInfoOnMount:       &podInfo,
			StorageCapacity:      &capacity,
			RequiresRepublish:    &republish,
			FSGroupPolicy:        &policy,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}
}
