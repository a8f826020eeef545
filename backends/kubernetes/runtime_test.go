package kubernetes_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/backends/sqlite"
	"github.com/sailtui/sailtui/engine"
)

func TestMain(m *testing.M) { os.Exit(k8stest.Main(m)) }

func newRuntime(t testing.TB, c *k8stest.Cluster, tweak ...func(*kubernetes.Config)) *kubernetes.Runtime {
	t.Helper()
	cfg := kubernetes.Config{
		REST:                 c.Config(),
		AppDomain:            "sail.example.com",
		TLSSecret:            "wildcard-tls",
		PodAffinity:          true,
		SnapshotClass:        k8stest.SnapshotClass,
		SnapshotReadyTimeout: 30 * time.Second,
		DeleteTimeout:        60 * time.Second,
		Sweeper:              kubernetes.SweeperNamespace + "/" + kubernetes.SweeperServiceAccount,
	}
	return newRuntimeFrom(t, cfg, tweak)
}

// newRuntimeFrom is the runtime of cfg changed by each of tweak in turn.
func newRuntimeFrom(t testing.TB, cfg kubernetes.Config, tweak []func(*kubernetes.Config)) *kubernetes.Runtime {
	t.Helper()
	for _, f := range tweak {
		f(&cfg)
	}
	rt, err := kubernetes.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// newStore is a SQLite store of the test's own.
func newStore(t testing.TB) engine.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// newEngine is the engine over the runtime and its VolumeSnapshots, with a SQLite store.
func newEngine(t *testing.T, rt *kubernetes.Runtime) *engine.Engine {
	t.Helper()
	return newEngineOn(t, rt, newStore(t))
}

func newEngineOn(t *testing.T, rt *kubernetes.Runtime, store engine.Store) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{Store: store, Runtime: rt, Volumes: kubernetes.NewSnapshots(rt)})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// createTwo creates a project with two containers (each with its own command, so nothing
// reads TESSLATE.md through an exec) and starts it, with the kubelet stand-in marking its pods
// ready while it does: a start waits for them.
func createTwo(t *testing.T, c *k8stest.Cluster, eng *engine.Engine, name string) engine.Project {
	t.Helper()
	ctx := t.Context()
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: name, Owner: "alice@example.com", Containers: []engine.ContainerSpec{
		{Name: "web", Directory: "frontend", Port: 5173, Command: "npm run dev"},
		{Name: "api", Directory: "backend", Port: 8000, Command: "uvicorn main:app", Env: map[string]string{"DEBUG": "1"}},
	}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	stop := c.StartKubelet(t, "")
	defer stop()
	if _, err := eng.StartProject(ctx, p.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	return p
}

// A started two-container project is every object DESIGN.md names, accepted by the API server
// (validation, Pod Security "restricted" admission on the pods the ReplicaSets create).
func TestStartTwoContainerProject(t *testing.T) {
	c := k8stest.Start(t)
	rt := newRuntime(t, c)
	eng := newEngine(t, rt)
	p := createTwo(t, c, eng, "Objects Accepted")
	ns := rt.Namespace(p)
	stop := c.StartKubelet(t, ns)
	defer stop()
	ctx := t.Context()
	t.Cleanup(func() { _ = rt.DestroyProject(context.Background(), p, nil) })

	nsObj, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", kubernetes.LabelManagedBy: "sailtui",
		kubernetes.LabelProjectID: p.ID, kubernetes.LabelComponent: "project",
	} {
		if nsObj.Labels[k] != v {
			t.Errorf("namespace label %s = %q, want %q", k, nsObj.Labels[k], v)
		}
	}
	if !strings.HasPrefix(nsObj.Labels[kubernetes.LabelUserID], "alice-example.com-") {
		t.Errorf("user-id label %q: want the owner made label-safe", nsObj.Labels[kubernetes.LabelUserID])
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, kubernetes.PVCName, metav1.GetOptions{}); err != nil {
		t.Errorf("pvc: %v", err)
	}
	np, err := c.Client.NetworkingV1().NetworkPolicies(ns).Get(ctx, kubernetes.NetworkPolicy, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("network policy: %v", err)
	}
	if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Ingress) != 1 || len(np.Spec.Egress) != 3 {
		t.Errorf("network policy: %+v", np.Spec)
	}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Get(ctx, kubernetes.SweeperRoleBinding, metav1.GetOptions{}); err != nil {
		t.Errorf("sweeper role binding: %v", err)
	}
	for _, d := range []string{"file-manager", "dev-web", "dev-api"} {
		dep, err := c.Client.AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{})
		if err != nil {
			t.Errorf("deployment %s: %v", d, err)
			continue
		}
		spec := dep.Spec.Template.Spec
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s mounts a service account token", d)
		}
		if spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
			t.Errorf("%s may run as root", d)
		}
		aff := spec.Affinity
		if aff == nil || aff.PodAffinity == nil || len(aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
			aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[kubernetes.LabelProjectID] != p.ID {
			t.Errorf("%s: no required pod affinity on the project id: %+v", d, aff)
		}
		for _, e := range spec.Containers[0].Env {
			if strings.Contains(e.Name, "AWS") || strings.Contains(e.Name, "DATABASE") {
				t.Errorf("%s carries %s", d, e.Name)
			}
		}
	}
	web, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "dev-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := web.Labels; l[kubernetes.LabelContainerID] != "web" || l[kubernetes.LabelContainerDir] != "frontend" {
		t.Errorf("dev-web labels %v", l)
	}
	for _, svc := range []struct {
		name string
		port int32
	}{{"dev-web", 5173}, {"dev-api", 8000}} {
		s, err := c.Client.CoreV1().Services(ns).Get(ctx, svc.name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("service %s: %v", svc.name, err)
			continue
		}
		if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.Ports[0].Port != svc.port {
			t.Errorf("service %s: %+v", svc.name, s.Spec)
		}
		ing, err := c.Client.NetworkingV1().Ingresses(ns).Get(ctx, svc.name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("ingress %s: %v", svc.name, err)
			continue
		}
		if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "wildcard-tls" || !strings.HasSuffix(ing.Spec.Rules[0].Host, ".sail.example.com") {
			t.Errorf("ingress %s: %+v", svc.name, ing.Spec)
		}
	}
	// The ReplicaSets made pods (Pod Security admission let them in), and once "kubelet" says
	// they run, the engine sees both containers running.
	waitRunning(t, eng, p, 2)
}

// Hibernate snapshots the PVC and deletes the namespace only once the snapshot is ready; wake
// restores into a fresh namespace from a pre-provisioned content; purge removes snapshot and
// contents.
func TestHibernateWakePurge(t *testing.T) {
	c := k8stest.Start(t)
	rt := newRuntime(t, c)
	eng := newEngine(t, rt)
	p := createTwo(t, c, eng, "Sleepy Head")
	ns := rt.Namespace(p)
	ctx := t.Context()
	t.Cleanup(func() { _ = rt.DestroyProject(context.Background(), p, nil) })
	defer c.StartKubelet(t, ns)()
	defer c.StartSnapshotter(t, ns)()

	// When the PVC's deletion starts (the first thing that touches the data in a teardown),
	// the hibernation's VolumeSnapshot must already be ready and its content kept (Retain).
	// Listing the snapshots when the watch reports the deletion would come too late (the
	// teardown deletes them right after the PVC), so the order is read off the resource
	// versions instead: etcd's revisions, one counter for every object of the cluster.
	order := watchTeardownOrder(t, c, ns)

	hib, err := eng.Hibernate(ctx, p.ID)
	if err != nil {
		t.Fatalf("hibernate: %v", err)
	}
	if hib.Status != engine.StatusHibernated || hib.HibernationSnapshot == "" {
		t.Fatalf("after hibernate: %+v", hib)
	}
	if err := c.NamespaceGoing(ctx, ns); err != nil {
		t.Fatalf("namespace after hibernate: %v (want it gone or being deleted)", err)
	}
	order.check(t)
	var snap engine.Snapshot
	all, err := eng.Snapshots(ctx, p.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.ID == hib.HibernationSnapshot {
			snap = s
		}
	}
	parts := strings.Split(snap.Location, "/")
	if snap.Backend != "csi" || len(parts) != 3 {
		t.Fatalf("hibernation snapshot %+v: want backend csi and a content in its location", snap)
	}
	content, err := c.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, parts[2], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("content survives the namespace: %v", err)
	}
	if content.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentRetain {
		t.Errorf("content deletion policy %s", content.Spec.DeletionPolicy)
	}

	woke, err := eng.Wake(ctx, p.ID)
	if err != nil {
		t.Fatalf("wake: %v", err)
	}
	if woke.Status != engine.StatusActive {
		t.Fatalf("after wake: %+v", woke)
	}
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, kubernetes.PVCName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pvc after wake: %v", err)
	}
	if ds := pvc.Spec.DataSource; ds == nil || ds.Kind != "VolumeSnapshot" {
		t.Fatalf("pvc after wake has no snapshot source: %+v", pvc.Spec)
	}
	vs, err := c.Snapshots.SnapshotV1().VolumeSnapshots(ns).Get(ctx, pvc.Spec.DataSource.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("restore VolumeSnapshot: %v", err)
	}
	pre, err := c.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, *vs.Spec.Source.VolumeSnapshotContentName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pre-provisioned content: %v", err)
	}
	if *pre.Spec.Source.SnapshotHandle != *content.Status.SnapshotHandle || pre.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentRetain {
		t.Errorf("pre-provisioned content %+v: want the original's handle %q and Retain", pre.Spec, *content.Status.SnapshotHandle)
	}
	for _, d := range []string{"file-manager", "dev-web", "dev-api"} {
		dep, err := c.Client.AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{})
		if err != nil || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
			t.Errorf("deployment %s after wake: %v", d, err)
		}
	}

	// Purge: the snapshot's objects go, the original content and the restore's.
	if err := kubernetes.NewSnapshots(rt).Delete(ctx, snap); err != nil {
		t.Fatalf("delete snapshot: %v", err)
	}
	for _, name := range []string{content.Name, pre.Name} {
		if _, err := c.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("content %s after purge: %v (want NotFound)", name, err)
		}
	}
	if err := kubernetes.NewSnapshots(rt).Delete(ctx, snap); err != nil {
		t.Errorf("delete snapshot again: %v", err)
	}
}

// A snapshot that never becomes ready deletes nothing: the project stays active with its
// namespace, and the failed VolumeSnapshot is removed.
func TestHibernateSnapshotNeverReady(t *testing.T) {
	c := k8stest.Start(t)
	rt := newRuntime(t, c, func(cfg *kubernetes.Config) { cfg.SnapshotReadyTimeout = 2 * time.Second })
	eng := newEngine(t, rt)
	p := createTwo(t, c, eng, "Never Ready")
	ns := rt.Namespace(p)
	ctx := t.Context()
	t.Cleanup(func() { _ = rt.DestroyProject(context.Background(), p, nil) })

	got, err := eng.Hibernate(ctx, p.ID)
	if err == nil || !strings.Contains(err.Error(), "not ready within") {
		t.Fatalf("hibernate with a snapshot that never gets ready: %v, want a not-ready error", err)
	}
	if got.Status != engine.StatusActive {
		t.Errorf("project after the failed hibernation: %s, want active", got.Status)
	}
	nsObj, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || nsObj.DeletionTimestamp != nil {
		t.Fatalf("namespace after the failed hibernation: %v %+v", err, nsObj)
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, kubernetes.PVCName, metav1.GetOptions{}); err != nil {
		t.Errorf("pvc after the failed hibernation: %v", err)
	}
	list, err := c.Snapshots.SnapshotV1().VolumeSnapshots(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("VolumeSnapshots left after the failure: %v %d", err, len(list.Items))
	}
	// The dev containers were started again.
	for _, d := range []string{"dev-web", "dev-api"} {
		dep, err := c.Client.AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{})
		if err != nil || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
			t.Errorf("deployment %s after the failed hibernation: %v %v", d, err, dep.Spec.Replicas)
		}
	}
}

// A namespace of the right name that sailtui did not make is neither adopted nor deleted.
func TestForeignNamespace(t *testing.T) {
	c := k8stest.Start(t)
	rt := newRuntime(t, c)
	ctx := t.Context()
	p := engine.Project{ID: "foreign-1", Slug: "foreign", Owner: "bob", Status: engine.StatusActive}
	ns := rt.Namespace(p)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if err := rt.EnsureProject(ctx, p); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("EnsureProject over a foreign namespace: %v, want ErrConflict", err)
	}
	if err := rt.DestroyProject(ctx, p, nil); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("DestroyProject of a foreign namespace: %v, want ErrConflict", err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("foreign namespace: %v", err)
	}
}

// teardownOrder records, as resource versions, when each VolumeSnapshot of a namespace was
// first seen ready, when its content was first seen with deletionPolicy Retain, and when the
// PVC was first seen being deleted. A watch delivers every change of what it watches in order,
// so a version seen first is at most the version of the change itself: "ready before the
// deletion" read off them cannot pass when it was not so.
type teardownOrder struct {
	mu       sync.Mutex
	ready    map[string]uint64 // VolumeSnapshot name → version first seen ready
	retained map[string]uint64 // VolumeSnapshot name → version its content was first seen Retain
	pvcGone  uint64            // version the PVC was first seen with a deletion timestamp, or deleted
}

func watchTeardownOrder(t *testing.T, c *k8stest.Cluster, ns string) *teardownOrder {
	t.Helper()
	o := &teardownOrder{ready: map[string]uint64{}, retained: map[string]uint64{}}
	rv := func(obj metav1.Object) uint64 {
		v, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
		if err != nil {
			t.Errorf("resource version %q of %s: %v", obj.GetResourceVersion(), obj.GetName(), err)
		}
		return v
	}
	first := func(m map[string]uint64, key string, v uint64) {
		if _, ok := m[key]; !ok {
			m[key] = v
		}
	}
	onVS := func(obj any) {
		vs, ok := obj.(*snapv1.VolumeSnapshot)
		if !ok || vs.Status == nil || vs.Status.ReadyToUse == nil || !*vs.Status.ReadyToUse {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		first(o.ready, vs.Name, rv(vs))
	}
	onContent := func(obj any) {
		vc, ok := obj.(*snapv1.VolumeSnapshotContent)
		if !ok || vc.Spec.VolumeSnapshotRef.Namespace != ns || vc.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentRetain {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		first(o.retained, vc.Spec.VolumeSnapshotRef.Name, rv(vc))
	}
	onPVC := func(obj any, deleted bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok || (!deleted && pvc.DeletionTimestamp == nil) {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.pvcGone == 0 {
			o.pvcGone = rv(pvc)
		}
	}
	snaps := c.Snapshots.SnapshotV1()
	informers := []cache.InformerOptions{
		{
			ListerWatcher: &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
					return snaps.VolumeSnapshots(ns).List(ctx, opts)
				},
				WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
					return snaps.VolumeSnapshots(ns).Watch(ctx, opts)
				},
			},
			ObjectType: &snapv1.VolumeSnapshot{},
			Handler: cache.ResourceEventHandlerFuncs{
				AddFunc:    onVS,
				UpdateFunc: func(_, obj any) { onVS(obj) },
			},
		},
		{
			ListerWatcher: &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
					return snaps.VolumeSnapshotContents().List(ctx, opts)
				},
				WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
					return snaps.VolumeSnapshotContents().Watch(ctx, opts)
				},
			},
			ObjectType: &snapv1.VolumeSnapshotContent{},
			Handler: cache.ResourceEventHandlerFuncs{
				AddFunc:    onContent,
				UpdateFunc: func(_, obj any) { onContent(obj) },
			},
		},
		{
			ListerWatcher: cache.NewListWatchFromClient(c.Client.CoreV1().RESTClient(), "persistentvolumeclaims", ns, fields.OneTermEqualSelector("metadata.name", kubernetes.PVCName)),
			ObjectType:    &corev1.PersistentVolumeClaim{},
			Handler: cache.ResourceEventHandlerFuncs{
				UpdateFunc: func(_, obj any) { onPVC(obj, false) },
				DeleteFunc: func(obj any) { onPVC(obj, true) },
			},
		},
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	for _, opts := range informers {
		_, ctrl := cache.NewInformerWithOptions(opts)
		go ctrl.Run(stop)
		if !cache.WaitForCacheSync(t.Context().Done(), ctrl.HasSynced) {
			t.Fatal("teardown watches did not sync")
		}
	}
	return o
}

// check asserts that exactly one VolumeSnapshot was ready, with its content retained, before the
// PVC's deletion began. It waits briefly for the watches to catch up with a teardown that has
// already returned.
func (o *teardownOrder) check(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		o.mu.Lock()
		pvcGone, ready, retained := o.pvcGone, maps.Clone(o.ready), maps.Clone(o.retained)
		o.mu.Unlock()
		if pvcGone != 0 || time.Now().After(deadline) {
			if pvcGone == 0 {
				t.Fatal("the PVC's deletion was never seen")
			}
			var before []string
			for name, v := range ready {
				if v < pvcGone {
					before = append(before, name)
				}
			}
			if len(before) != 1 {
				t.Fatalf("VolumeSnapshots ready before the PVC deletion (version %d): %v, all ready: %v (want exactly one)", pvcGone, before, ready)
			}
			if r, ok := retained[before[0]]; !ok || r >= pvcGone {
				t.Fatalf("content of %s: retained at version %d (seen: %t), PVC deletion at %d: want Retain before the deletion", before[0], r, ok, pvcGone)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
