package k8stest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/sailtui/sailtui/backends/internal/testproc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// snapshotterModule ships the VolumeSnapshot CRDs in config/crd, in the version the main
// module's go.mod requires, so the CRDs match the client the backend is built with.
const snapshotterModule = "github.com/kubernetes-csi/external-snapshotter/client/v8"

// snapshotCRDs are the CRDs of snapshot.storage.k8s.io; the module's group-snapshot CRDs are
// left out, as the backend does not use them.
var snapshotCRDs = []string{
	"snapshot.storage.k8s.io_volumesnapshotclasses.yaml",
	"snapshot.storage.k8s.io_volumesnapshotcontents.yaml",
	"snapshot.storage.k8s.io_volumesnapshots.yaml",
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installSnapshotCRDs creates the VolumeSnapshot CRDs from the module cache, waits until the
// API server serves them, and creates SnapshotClass.
func (c *Cluster) installSnapshotCRDs(ctx context.Context) error {
	dir, err := moduleDir(ctx, snapshotterModule)
	if err != nil {
		return err
	}
	var names []string
	for _, f := range snapshotCRDs {
		crd, err := readObject(filepath.Join(dir, "config", "crd", f))
		if err != nil {
			return err
		}
		if _, err := c.Dynamic.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("k8stest: create CRD %s: %w", crd.GetName(), err)
		}
		names = append(names, crd.GetName())
	}
	for _, name := range names {
		if err := c.waitEstablished(ctx, name); err != nil {
			return err
		}
	}
	class := &snapv1.VolumeSnapshotClass{
		ObjectMeta: metav1.ObjectMeta{
			Name: SnapshotClass,
			// The default class, as a cluster with one CSI driver usually has.
			Annotations: map[string]string{"snapshot.storage.kubernetes.io/is-default-class": "true"},
		},
		Driver:         SnapshotDriver,
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
	}
	// Established is the API server's word; the first request of a new resource can still
	// meet a discovery cache that has not caught up, so retry briefly.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Snapshots.SnapshotV1().VolumeSnapshotClasses().Create(ctx, class, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("k8stest: create VolumeSnapshotClass %s: %w", SnapshotClass, err)
	}
	return nil
}

// waitEstablished waits until the CRD's Established condition is True: the API server serves
// its resource from then on.
func (c *Cluster) waitEstablished(ctx context.Context, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, startTimeout, true, func(ctx context.Context) (bool, error) {
		crd, err := c.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		last = fmt.Sprintf("conditions %v", conds)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("k8stest: CRD %s not established: %w (%s)", name, err, last)
	}
	return nil
}

// moduleDir is where the module, as required by the main module, is in the module cache. The
// test binary was built with it, so it has been downloaded.
func moduleDir(ctx context.Context, module string) (string, error) {
	root, err := testproc.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("k8stest: find %s: %w", module, err)
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("k8stest: find %s in the module cache (go list -m in %s): %w\n%s", module, root, err, stderr.String())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("k8stest: %s is not in the module cache; run `go mod download %s` in %s", module, module, root)
	}
	return dir, nil
}

// readObject reads the one object in the YAML file; the files start with a "---" line, so
// empty documents are skipped.
func readObject(file string) (*unstructured.Unstructured, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("k8stest: %w", err)
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("no object in the file")
			}
			return nil, fmt.Errorf("k8stest: read %s: %w", file, err)
		}
		if len(obj.Object) > 0 {
			return obj, nil
		}
	}
}
