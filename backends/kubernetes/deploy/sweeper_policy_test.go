package deploy_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"

	sailkube "github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/deploy"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/backends/sqlite"
	"github.com/sailtui/sailtui/engine"
)

// Least privilege for real (issue 20, item 15): RBAC lets the sweeper delete any namespace and
// change any VolumeSnapshotContent; with the manifests applied, the admission policy among them
// refuses the sweeper a server-side dry-run delete of a namespace that is not sailtui's (the API
// server keeps kube-system itself) and a dry-run delete or patch
// of a content that is not sailtui's, while the sweeper still hibernates a project (patching
// its snapshot's content, deleting its namespace) and purges its snapshot (deleting contents).
func TestSweeperPolicyOnAPIServer(t *testing.T) {
	c := k8stest.Start(t)
	ctx := t.Context()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sailkube.SweeperNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	y, err := deploy.YAML(deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := kubectl(t, c, y, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, out, stderr)
	}
	t.Cleanup(func() {
		// Cluster-wide objects the other tests of the package expect absent until they apply.
		_, _, _ = kubectl(t, c, y, "delete", "--ignore-not-found", "-f", "-")
	})
	asSweeper := c.Config()
	asSweeper.Impersonate.UserName = "system:serviceaccount:" + sailkube.SweeperNamespace + ":" + sailkube.SweeperServiceAccount
	sweeper := kubernetes.NewForConfigOrDie(asSweeper)
	sweeperSnaps := snapclient.NewForConfigOrDie(asSweeper)
	dry := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}

	// kube-system is kept by the API server itself (NamespaceLifecycle); any other namespace
	// that is not sailtui's, the platform's here, only by the policy, which takes a moment to
	// be in force: RBAC alone admits the dry run.
	if err := sweeper.CoreV1().Namespaces().Delete(ctx, "kube-system", dry); !apierrors.IsForbidden(err) {
		t.Errorf("the sweeper's dry-run delete of kube-system: %v, want it refused", err)
	}
	platform := "tesslate"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: platform}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := sweeper.CoreV1().Namespaces().Delete(ctx, platform, dry)
		if err != nil && strings.Contains(err.Error(), "sailtui sweeper deletes only") {
			if !apierrors.IsForbidden(err) {
				t.Errorf("refusal of deleting namespace %s: %v, want Forbidden", platform, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper's dry-run delete of namespace %s: %v, want it refused by the admission policy", platform, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A content that is not sailtui's: no labels, of a VolumeSnapshot in another namespace.
	handle := "foreign-handle"
	foreign := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign-content"},
		Spec: snapv1.VolumeSnapshotContentSpec{
			DeletionPolicy: snapv1.VolumeSnapshotContentDelete, Driver: k8stest.SnapshotDriver,
			Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: &handle},
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: "default", Name: "theirs"},
		},
	}
	if _, err := c.Snapshots.SnapshotV1().VolumeSnapshotContents().Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Snapshots.SnapshotV1().VolumeSnapshotContents().Delete(context.Background(), foreign.Name, metav1.DeleteOptions{})
	})
	contents := sweeperSnaps.SnapshotV1().VolumeSnapshotContents()
	if err := contents.Delete(ctx, foreign.Name, dry); err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("the sweeper's dry-run delete of a foreign content: %v, want it refused", err)
	}
	_, err = contents.Patch(ctx, foreign.Name, types.MergePatchType, []byte(`{"spec":{"deletionPolicy":"Retain"}}`),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("the sweeper's dry-run patch of a foreign content: %v, want it refused", err)
	}
	// Others are not judged: the admin may still.
	if err := c.Snapshots.SnapshotV1().VolumeSnapshotContents().Delete(ctx, foreign.Name, dry); err != nil {
		t.Errorf("the admin's dry-run delete of the content: %v", err)
	}

	// The sweeper's own work goes through: a hibernation sweep, then a purge.
	newEngine := func(cfg *rest.Config, store engine.Store) (*engine.Engine, *sailkube.Runtime) {
		rt, err := sailkube.New(sailkube.Config{REST: cfg, SnapshotClass: k8stest.SnapshotClass,
			SnapshotReadyTimeout: 30 * time.Second, DeleteTimeout: time.Minute,
			Sweeper: sailkube.SweeperNamespace + "/" + sailkube.SweeperServiceAccount})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(engine.Config{Store: store, Runtime: rt, Volumes: sailkube.NewSnapshots(rt)})
		if err != nil {
			t.Fatal(err)
		}
		return eng, rt
	}
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	admin, rt := newEngine(c.Config(), store)
	p, err := admin.CreateProject(ctx, engine.CreateRequest{Name: "Own Objects", Owner: "alice", Containers: []engine.ContainerSpec{
		{Name: "web", Directory: "web", Port: 8080, Command: "serve"}}})
	if err != nil {
		t.Fatal(err)
	}
	ns := rt.Namespace(p)
	t.Cleanup(func() { _ = rt.DestroyProject(context.Background(), p, nil) })
	defer c.StartKubelet(t, ns)()
	defer c.StartSnapshotter(t, ns)()
	if _, err := admin.StartProject(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	sweeping, _ := newEngine(asSweeper, store)
	rep, err := sweeping.SweepHibernate(ctx, engine.SweepOptions{Idle: time.Minute, AsOf: time.Now().Add(time.Hour)})
	if err != nil || len(rep.Hibernated) != 1 || len(rep.Failed) != 0 {
		t.Fatalf("hibernate sweep as the sweeper under the policy: %v %+v", err, rep)
	}
	if err := c.NamespaceGoing(ctx, ns); err != nil {
		t.Fatalf("namespace after the sweep: %v", err)
	}
	if _, err := admin.Wake(ctx, p.ID); err != nil {
		t.Fatalf("wake: %v", err)
	}
	snaps, err := admin.Snapshots(ctx, p.ID, false)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots after wake: %v %+v", err, snaps)
	}
	if err := admin.DeleteSnapshot(ctx, p.ID, snaps[0].ID); err != nil {
		t.Fatal(err)
	}
	prep, err := sweeping.SweepPurge(ctx, engine.SweepOptions{AsOf: time.Now().Add(31 * 24 * time.Hour)})
	if err != nil || len(prep.Purged) != 1 || len(prep.Failed) != 0 {
		t.Fatalf("purge sweep as the sweeper under the policy: %v %+v", err, prep)
	}
}
