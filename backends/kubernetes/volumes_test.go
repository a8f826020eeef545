package kubernetes

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sailtui/sailtui/backends/dirstore"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/volumestest"
)

// nsExecutor runs the execs into every namespace's file manager on this machine, in the
// directory that plays the namespace's PVC (see hostExecutor): the control plane is real, the
// pods only exist as objects.
type nsExecutor struct{ roots sync.Map } // namespace → directory

func (x *nsExecutor) run(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	root, ok := x.roots.Load(ns)
	if !ok {
		return -1, fmt.Errorf("nsExecutor: no storage for namespace %s", ns)
	}
	// A hostExecutor per call: they record their calls, and calls run concurrently.
	return (&hostExecutor{root: root.(string)}).run(ctx, ns, pod, container, argv, stdin, stdout, stderr)
}

var contractSeq atomic.Int64

// contractRuntime is a Runtime on the package's control plane with x as its executor.
func contractRuntime(t *testing.T, c *k8stest.Cluster, x executor) *Runtime {
	t.Helper()
	rt, err := New(Config{
		REST:                 c.Config(),
		SnapshotClass:        k8stest.SnapshotClass,
		SnapshotReadyTimeout: 30 * time.Second,
		DeleteTimeout:        60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if x != nil {
		rt.exec = x
	}
	return rt
}

// contractProject creates a project of its own for one subtest, with kubelet played for its
// namespace, and removes it (and every VolumeSnapshotContent it left) when the subtest ends.
func contractProject(t *testing.T, c *k8stest.Cluster, rt *Runtime, kind string) engine.Project {
	t.Helper()
	n := contractSeq.Add(1)
	p := engine.Project{ID: fmt.Sprintf("vt-%s-%d", kind, n), Slug: fmt.Sprintf("vt-%s-%d", kind, n), Owner: "alice", Status: engine.StatusActive}
	ns := rt.Namespace(p)
	stopKubelet := c.StartKubelet(t, ns)
	t.Cleanup(func() {
		ctx := context.Background()
		if err := rt.DestroyProject(ctx, p, nil); err != nil {
			t.Errorf("clean up %s: %v", ns, err)
		}
		stopKubelet()
		// Contents are cluster-wide and kept (Retain): those of this project's snapshots go,
		// as do those the snapshotter stand-in made for them (it never deletes one).
		contents := rt.kube.SnapshotV1().VolumeSnapshotContents()
		list, err := contents.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("clean up contents: %v", err)
			return
		}
		for _, vc := range list.Items {
			if vc.Spec.VolumeSnapshotRef.Namespace == ns || vc.Labels[LabelProjectID] == labelValue(p.ID) {
				if err := contents.Delete(ctx, vc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("clean up content %s: %v", vc.Name, err)
				}
			}
		}
	})
	return p
}

// The Volumes contract for the archive volumes, against the real control plane: namespaces,
// PVCs and the file-manager Deployment are real objects, kubelet is played for the pods, and
// the file manager's execs run on this machine in a directory per namespace.
func TestArchiveVolumesContract(t *testing.T) {
	c := k8stest.Start(t)
	x := &nsExecutor{}
	rt := contractRuntime(t, c, x)
	volumestest.Run(t, volumestest.Harness{
		Store: func(t *testing.T) engine.ObjectStore {
			s, err := dirstore.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		New: func(t *testing.T, store engine.ObjectStore) *volumestest.Env {
			root := t.TempDir()
			p := contractProject(t, c, rt, "a")
			x.roots.Store(rt.Namespace(p), root)
			av := NewArchiveVolumes(rt, store, archive.SandwichOptions{})
			av.podTimeout = time.Minute
			if err := rt.EnsureProject(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			if err := av.waitFileManager(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			return &volumestest.Env{
				Volumes: av,
				Project: p,
				Dir:     root,
				// Hibernation deletes the namespace with its PVC; a new PVC starts empty.
				RemoveStorage: func(t *testing.T) {
					if err := rt.DestroyProject(t.Context(), p, nil); err != nil {
						t.Fatal(err)
					}
					volumestest.Writable(root)
					entries, err := os.ReadDir(root)
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range entries {
						if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
							t.Fatal(err)
						}
					}
				},
				// A restore into a hibernated project makes its namespace and PVC again.
				StorageExists: func(t *testing.T) bool {
					return pvcExists(t, rt, rt.Namespace(p))
				},
				// Restores work in sailtui's directories at the top of the mount.
				Leftovers: func(t *testing.T) []string {
					entries, err := os.ReadDir(root)
					if err != nil {
						t.Fatal(err)
					}
					var left []string
					for _, e := range entries {
						if reservedTopName(e.Name()) {
							left = append(left, e.Name())
						}
					}
					return left
				},
			}
		},
		Data:    true,
		Archive: true,
		// The pod's tar stream has no size ahead of it.
		ProgressTotal: false,
		// No namespace, no file-manager pod to archive through.
		MissingStorage: engine.ErrBadState,
		Parallel:       true,
	})
}

// The Volumes contract for CSI VolumeSnapshots, against the real control plane with the
// snapshotter stand-in marking snapshots ready. The stand-in copies no data, so the contract
// checks the snapshots' life cycle and that the PVC comes back, not the files.
func TestSnapshotsContract(t *testing.T) {
	c := k8stest.Start(t)
	rt := contractRuntime(t, c, nil)
	volumestest.Run(t, volumestest.Harness{
		New: func(t *testing.T, _ engine.ObjectStore) *volumestest.Env {
			p := contractProject(t, c, rt, "c")
			ns := rt.Namespace(p)
			c.StartSnapshotter(t, ns)
			if err := rt.EnsureProject(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			snaps := rt.kube.SnapshotV1()
			return &volumestest.Env{
				Volumes: NewSnapshots(rt),
				Project: p,
				// Hibernation deletes the namespace; a wake makes it again without its PVC,
				// which the restore creates from the snapshot.
				RemoveStorage: func(t *testing.T) {
					if err := rt.DestroyProject(t.Context(), p, nil); err != nil {
						t.Fatal(err)
					}
					q := p
					q.Status = engine.StatusRestoring
					if err := rt.EnsureProject(t.Context(), q); err != nil {
						t.Fatal(err)
					}
				},
				// What Delete removes: the VolumeSnapshots of the snapshot in the namespace and
				// the contents sailtui made or recorded for it.
				Exists: func(t *testing.T, s engine.Snapshot) bool {
					ctx := t.Context()
					// Contents are cluster-wide, and the parallel subtests use the same
					// snapshot ids: the project's label tells them apart.
					sel := labels.Set{LabelSnapshotID: labelValue(s.ID), LabelProjectID: labelValue(p.ID)}.String()
					vss, err := snaps.VolumeSnapshots(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
					if err != nil {
						t.Fatal(err)
					}
					vcs, err := snaps.VolumeSnapshotContents().List(ctx, metav1.ListOptions{LabelSelector: sel})
					if err != nil {
						t.Fatal(err)
					}
					recorded := false
					if loc, err := parseLocation(s); err == nil && loc.content != "" {
						_, err := snaps.VolumeSnapshotContents().Get(ctx, loc.content, metav1.GetOptions{})
						if err != nil && !apierrors.IsNotFound(err) {
							t.Fatal(err)
						}
						recorded = err == nil
					}
					return len(vss.Items) > 0 || len(vcs.Items) > 0 || recorded
				},
				StorageExists: func(t *testing.T) bool { return pvcExists(t, rt, ns) },
			}
		},
		// The PVC is read first: a snapshot of none could never become ready.
		MissingStorage: engine.ErrNotFound,
		Parallel:       true,
	})
}

// pvcExists reports whether the project PVC of namespace ns is there and not going away.
func pvcExists(t *testing.T, rt *Runtime, ns string) bool {
	t.Helper()
	pvc, err := rt.kube.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), PVCName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil && pvc.DeletionTimestamp == nil
}
