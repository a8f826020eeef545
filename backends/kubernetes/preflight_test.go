package kubernetes_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

// Preflight before anything stops (issue 20, item 11): a hibernation that can never take its
// snapshot — a class that does not exist, a class of another driver than the volume's, no
// right to create the VolumeSnapshot — is refused with the dev Deployments never touched (their
// generation is what it was: not scaled down and up again), no VolumeSnapshot made and the
// project active, instead of after stopping the containers and waiting the timeout out.
func TestHibernatePreflight(t *testing.T) {
	c := k8stest.Start(t)
	installSweeper(t, c)
	for _, tc := range []struct {
		name string
		// prepare changes the cluster for the project made by admin and returns the runtime
		// the hibernation runs with.
		prepare func(t *testing.T, admin *kubernetes.Runtime, p engine.Project) *kubernetes.Runtime
		want    []string
	}{
		{"absent class", func(t *testing.T, _ *kubernetes.Runtime, _ engine.Project) *kubernetes.Runtime {
			return newRuntime(t, c, func(cfg *kubernetes.Config) { cfg.SnapshotClass = "absent" })
		}, []string{`VolumeSnapshotClass "absent"`, "does not exist"}},
		{"driver mismatch", func(t *testing.T, admin *kubernetes.Runtime, p engine.Project) *kubernetes.Runtime {
			bindCSIVolume(t, c, admin.Namespace(p), "other.csi.sailtui.invalid")
			return admin
		}, []string{"driver " + k8stest.SnapshotDriver, "driver other.csi.sailtui.invalid"}},
		{"no right to snapshot", func(t *testing.T, admin *kubernetes.Runtime, p engine.Project) *kubernetes.Runtime {
			user := "sailtui-test-nosnap"
			grantAllBut(t, c, admin.Namespace(p), user, "volumesnapshots", "create")
			return newRuntime(t, c, func(cfg *kubernetes.Config) { cfg.REST.Impersonate.UserName = user })
		}, []string{"not allowed to create volumesnapshots"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admin := newRuntime(t, c)
			store := newStore(t)
			p := createTwo(t, c, newEngineOn(t, admin, store), "Preflight "+tc.name)
			ns := admin.Namespace(p)
			ctx := t.Context()
			t.Cleanup(func() { _ = admin.DestroyProject(context.Background(), p, nil) })
			gen := map[string]int64{}
			for _, d := range []string{"dev-web", "dev-api"} {
				dep, err := c.Client.AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				gen[d] = dep.Generation
			}
			eng := newEngineOn(t, tc.prepare(t, admin, p), store)

			got, err := eng.Hibernate(ctx, p.ID)
			if err == nil {
				t.Fatal("hibernate: no error, want the preflight's refusal")
			}
			for _, w := range append([]string{"nothing was stopped"}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("hibernate: %v\nwant it to say %q", err, w)
				}
			}
			if got.Status != engine.StatusActive || got.OpID != "" {
				t.Errorf("project after the refusal: %s (op %q), want active", got.Status, got.OpKind)
			}
			for d, g := range gen {
				dep, err := c.Client.AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{})
				if err != nil {
					t.Errorf("deployment %s after the refusal: %v", d, err)
				} else if dep.Generation != g || *dep.Spec.Replicas != 1 {
					t.Errorf("deployment %s after the refusal: generation %d (was %d), replicas %d: it was touched",
						d, dep.Generation, g, *dep.Spec.Replicas)
				}
			}
			if list, err := c.Snapshots.SnapshotV1().VolumeSnapshots(ns).List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
				t.Errorf("VolumeSnapshots after the refusal: %v, %d", err, len(list.Items))
			}
		})
	}
}

// bindCSIVolume binds the project's PVC in ns to a CSI volume of driver, as a provisioner of
// that driver would.
func bindCSIVolume(t *testing.T, c *k8stest.Cluster, ns, driver string) {
	t.Helper()
	ctx := t.Context()
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, kubernetes.PVCName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
			AccessModes: pvc.Spec.AccessModes,
			ClaimRef:    &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: "handle-" + ns}},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		},
	}
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pv: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	pvc.Spec.VolumeName = pv.Name
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("bind pvc to %s: %v", pv.Name, err)
	}
}

// grantAllBut gives user the sweeper's rights (the cluster-wide ones, and the project ones in
// ns) except verb on resource.
func grantAllBut(t *testing.T, c *k8stest.Cluster, ns, user, resource, verb string) {
	t.Helper()
	ctx := t.Context()
	var rules []rbacv1.PolicyRule
	for _, r := range kubernetes.SweeperProjectRules(false) {
		if slices.Contains(r.Resources, resource) {
			r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == verb })
		}
		rules = append(rules, r)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules}
	if _, err := c.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}, Subjects: subject}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubernetes.SweeperClusterRole}, Subjects: subject}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
}
