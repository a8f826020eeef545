package kubernetes_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

// installSweeper creates the sweepers' service account, its two roles and the cluster-wide
// binding, from the rules in rbac.go.
func installSweeper(t *testing.T, c *k8stest.Cluster) {
	t.Helper()
	ctx := t.Context()
	create := func(what string, err error) {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperNamespace}}, metav1.CreateOptions{})
	create("namespace", err)
	_, err = c.Client.CoreV1().ServiceAccounts(kubernetes.SweeperNamespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperServiceAccount}}, metav1.CreateOptions{})
	create("service account", err)
	_, err = c.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperClusterRole},
		Rules: kubernetes.SweeperClusterRules()}, metav1.CreateOptions{})
	create("cluster role", err)
	_, err = c.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperProjectRole},
		Rules: kubernetes.SweeperProjectRules(false)}, metav1.CreateOptions{})
	create("project role", err)
	_, err = c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubernetes.SweeperClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: kubernetes.SweeperNamespace, Name: kubernetes.SweeperServiceAccount}},
	}, metav1.CreateOptions{})
	create("cluster role binding", err)
}

// The sweep policy leaves to the next wake exactly what the sweeper's rules cannot finish: an
// interrupted wake or restore creates the namespace and the PVC, which neither role grants.
func TestSweepOptionsLeaveWhatTheSweeperCannotFinish(t *testing.T) {
	in := engine.SweepOptions{DryRun: true, Concurrency: 3}
	got := kubernetes.Config{}.SweepOptions(in)
	if !got.DryRun || got.Concurrency != 3 || !slices.Equal(got.LeaveInterrupted, []engine.OpKind{engine.OpWake, engine.OpRestore}) {
		t.Fatalf("SweepOptions(%+v) = %+v, want the same with wake and restore left", in, got)
	}
	for _, s3 := range []bool{false, true} {
		for _, r := range append(kubernetes.SweeperClusterRules(), kubernetes.SweeperProjectRules(s3)...) {
			for _, res := range r.Resources {
				if (res == "namespaces" || res == "persistentvolumeclaims") && slices.Contains(r.Verbs, "create") {
					t.Errorf("the sweeper may create %s: an interrupted wake or restore need not be left", res)
				}
			}
		}
	}
}

// The rules in rbac.go are enough for what the sweeps do: a hibernation sweep and a purge sweep
// run as the sweeper's service account (impersonated) succeed on a project an operator made.
func TestSweepsRunAsSweeper(t *testing.T) {
	c := k8stest.Start(t)
	installSweeper(t, c)
	admin := newRuntime(t, c)
	store := newStore(t)
	eng := newEngineOn(t, admin, store)
	p := createTwo(t, c, eng, "Least Privilege")
	ns := admin.Namespace(p)
	ctx := t.Context()
	t.Cleanup(func() { _ = admin.DestroyProject(context.Background(), p, nil) })
	defer c.StartKubelet(t, ns)()
	defer c.StartSnapshotter(t, ns)()

	sweeperCfg := func(cfg *kubernetes.Config) {
		cfg.REST.Impersonate.UserName = "system:serviceaccount:" + kubernetes.SweeperNamespace + ":" + kubernetes.SweeperServiceAccount
	}
	sweeper := newEngineOn(t, newRuntime(t, c, sweeperCfg), store)
	rep, err := sweeper.SweepHibernate(ctx, engine.SweepOptions{Idle: time.Minute, AsOf: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatalf("hibernate sweep as the sweeper: %v", err)
	}
	if len(rep.Hibernated) != 1 || len(rep.Failed) != 0 {
		t.Fatalf("hibernate sweep as the sweeper: %+v", rep)
	}
	if err := c.NamespaceGoing(ctx, ns); err != nil {
		t.Fatalf("namespace after the sweep: %v", err)
	}
	// The operator wakes it and removes the hibernation snapshot; the purge, as the sweeper,
	// deletes its content.
	woke, err := eng.Wake(ctx, p.ID)
	if err != nil {
		t.Fatalf("wake: %v", err)
	}
	snaps, err := eng.Snapshots(ctx, p.ID, false)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots after wake: %v %+v", err, snaps)
	}
	if err := eng.DeleteSnapshot(ctx, woke.ID, snaps[0].ID); err != nil {
		t.Fatalf("delete snapshot: %v", err)
	}
	prep, err := sweeper.SweepPurge(ctx, engine.SweepOptions{AsOf: time.Now().Add(31 * 24 * time.Hour)})
	if err != nil || len(prep.Purged) != 1 || len(prep.Failed) != 0 {
		t.Fatalf("purge sweep as the sweeper: %v %+v", err, prep)
	}
	list, err := c.Snapshots.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range list.Items {
		if ct.Spec.VolumeSnapshotRef.Namespace == ns {
			t.Errorf("content %s of project %s left after the purge", ct.Name, ns)
		}
	}
}
