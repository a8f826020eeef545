package kubernetes_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

// webAndDB are an app with an image and resources of its own and a database service
// connected to it.
func webAndDB(image string) []engine.ContainerSpec {
	return []engine.ContainerSpec{
		{Name: "web", Directory: "frontend", Port: 5173, Command: "npm run dev", Image: "ghcr.io/acme/web:1",
			Resources: engine.Resources{MemoryRequest: "512Mi", MemoryLimit: "1Gi", CPURequest: "250m", CPULimit: "1"}},
		{Name: "db", Directory: ".", Kind: engine.KindService, Image: image, Port: 5432, DataPath: "/var/lib/postgresql/data",
			Env:     map[string]string{"POSTGRES_PASSWORD": "dev", "POSTGRES_DB": "app"},
			Exports: map[string]string{"DATABASE_URL": "postgres://postgres:${POSTGRES_PASSWORD}@${HOST}:${PORT}/${POSTGRES_DB}"}},
	}
}

// createWebAndDB creates and starts a project of webAndDB, web connected to db, with a kubelet
// playing in its namespace from before the start (which reads .tesslate/config.json through
// the file-manager pod) until the test ends.
func createWebAndDB(t *testing.T, c *k8stest.Cluster, rt *kubernetes.Runtime, eng *engine.Engine, name, image string) engine.Project {
	t.Helper()
	ctx := t.Context()
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: name, Owner: "alice@example.com", Containers: webAndDB(image)})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := eng.Connect(ctx, p.ID, "web", "db"); err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = rt.DestroyProject(context.Background(), p, nil) })
	t.Cleanup(c.StartKubelet(t, rt.Namespace(p)))
	if _, err := eng.StartProject(ctx, p.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	return p
}

func envOf(ctr corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range ctr.Env {
		m[e.Name] = e.Value
	}
	return m
}

// waitRunning waits until the engine sees every container of p running.
func waitRunning(t *testing.T, eng *engine.Engine, p engine.Project, n int) []engine.ContainerView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, sts, err := eng.Containers(t.Context(), p.ID)
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, st := range sts {
			if st.Status.State == engine.ContainerRunning {
				running++
			}
		}
		if running == n {
			return sts
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers not running: %+v", sts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A project with an app and a database service is, on the API server, a Deployment svc-db of
// the service's image with the data PVC svc-db-data at its data path, a ClusterIP Service db
// (the host name the app's injected DATABASE_URL names), beside the app's dev objects with
// their own image, resources, NODE_ENV and websocket-friendly Ingress; every pod has the pull
// secret and policy, the restricted security context and the project's affinity, and the pods
// were admitted (Pod Security "restricted").
func TestServiceContainerObjects(t *testing.T) {
	c := k8stest.Start(t)
	rt := newRuntime(t, c, func(cfg *kubernetes.Config) {
		cfg.ImagePullSecret = "regcred"
		cfg.ImagePullPolicy = "Always"
		cfg.IngressAnnotations = map[string]string{"example.com/team": "sail", "nginx.ingress.kubernetes.io/proxy-body-size": "64m"}
	})
	eng := newEngine(t, rt)
	p := createWebAndDB(t, c, rt, eng, "With Database", "bitnami/postgresql:16")
	ns := rt.Namespace(p)
	ctx := t.Context()

	deps := map[string]*appsv1.Deployment{}
	for _, name := range []string{"file-manager", "dev-web", "svc-db"} {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("deployment %s: %v", name, err)
		}
		deps[name] = d
		spec := d.Spec.Template.Spec
		if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
			t.Errorf("%s: image pull secrets %+v, want regcred", name, spec.ImagePullSecrets)
		}
		if pp := spec.Containers[0].ImagePullPolicy; pp != corev1.PullAlways {
			t.Errorf("%s: pull policy %s, want Always", name, pp)
		}
		sc := spec.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 1000 {
			t.Errorf("%s: pod security %+v, want non-root 1000", name, sc)
		}
		if aff := spec.Affinity; aff == nil || aff.PodAffinity == nil ||
			aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[kubernetes.LabelProjectID] != p.ID {
			t.Errorf("%s: no pod affinity on the project: %+v", name, aff)
		}
	}

	db := deps["svc-db"]
	if l := db.Labels; l[kubernetes.LabelContainerID] != "db" || l[kubernetes.LabelComponent] != "dev" || l["tesslate.io/container-kind"] != "service" {
		t.Errorf("svc-db labels %v", l)
	}
	dbPod := db.Spec.Template.Spec
	ctr := dbPod.Containers[0]
	if ctr.Image != "bitnami/postgresql:16" || len(ctr.Command) != 0 {
		t.Errorf("svc-db runs %s %v, want the service's image with its own command", ctr.Image, ctr.Command)
	}
	if len(dbPod.Volumes) != 1 || dbPod.Volumes[0].PersistentVolumeClaim == nil || dbPod.Volumes[0].PersistentVolumeClaim.ClaimName != "svc-db-data" ||
		len(ctr.VolumeMounts) != 1 || ctr.VolumeMounts[0].MountPath != "/var/lib/postgresql/data" {
		t.Errorf("svc-db volumes %+v mounts %+v: want only svc-db-data at the data path", dbPod.Volumes, ctr.VolumeMounts)
	}
	if env := envOf(ctr); env["POSTGRES_PASSWORD"] != "dev" || env["NODE_ENV"] != "" {
		t.Errorf("svc-db env %v", env)
	}
	if len(ctr.Ports) != 1 || ctr.Ports[0].ContainerPort != 5432 {
		t.Errorf("svc-db ports %+v", ctr.Ports)
	}
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "svc-db-data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pvc svc-db-data: %v", err)
	}
	if pvc.Labels[kubernetes.LabelProjectID] != p.ID || pvc.Labels[kubernetes.LabelContainerID] != "db" {
		t.Errorf("pvc svc-db-data labels %v", pvc.Labels)
	}
	svc, err := c.Client.CoreV1().Services(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("service db: %v", err)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 5432 ||
		!labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(db.Spec.Template.Labels)) {
		t.Errorf("service db %+v does not serve svc-db's pods (%v)", svc.Spec, db.Spec.Template.Labels)
	}
	// The app's host name resolves too (the ${HOST} of an app's exports), to its dev pods.
	alias, err := c.Client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("service web: %v", err)
	}
	if alias.Spec.Ports[0].Port != 5173 || !labels.SelectorFromSet(alias.Spec.Selector).Matches(labels.Set(deps["dev-web"].Spec.Template.Labels)) {
		t.Errorf("service web %+v does not serve dev-web's pods", alias.Spec)
	}
	if _, err := c.Client.NetworkingV1().Ingresses(ns).Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ingress of the service: %v, want none", err)
	}

	web := deps["dev-web"].Spec.Template.Spec.Containers[0]
	if web.Image != "ghcr.io/acme/web:1" {
		t.Errorf("dev-web image %s, want the app's", web.Image)
	}
	for _, q := range []struct {
		got  resource.Quantity
		want string
	}{
		{web.Resources.Requests[corev1.ResourceMemory], "512Mi"}, {web.Resources.Limits[corev1.ResourceMemory], "1Gi"},
		{web.Resources.Requests[corev1.ResourceCPU], "250m"}, {web.Resources.Limits[corev1.ResourceCPU], "1"},
	} {
		if q.got.Cmp(resource.MustParse(q.want)) != 0 {
			t.Errorf("dev-web resources %+v: want %s", web.Resources, q.want)
		}
	}
	env := envOf(web)
	if env["NODE_ENV"] != "development" || env["DATABASE_URL"] != "postgres://postgres:dev@db:5432/app" {
		t.Errorf("dev-web env NODE_ENV=%q DATABASE_URL=%q", env["NODE_ENV"], env["DATABASE_URL"])
	}
	ing, err := c.Client.NetworkingV1().Ingresses(ns).Get(ctx, "dev-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600", "nginx.ingress.kubernetes.io/proxy-send-timeout": "3600",
		"nginx.ingress.kubernetes.io/proxy-http-version": "1.1", "example.com/team": "sail",
		"nginx.ingress.kubernetes.io/proxy-body-size": "64m",
	} {
		if ing.Annotations[k] != v {
			t.Errorf("ingress annotation %s = %q, want %q", k, ing.Annotations[k], v)
		}
	}

	// The pods were admitted and run; the service's status names its volume and no URL.
	sts := waitRunning(t, eng, p, 2)
	for _, st := range sts {
		if st.Name != "db" {
			continue
		}
		if st.Status.Volume != "svc-db-data" || st.Status.URL != "" {
			t.Errorf("db status %+v: want volume svc-db-data and no URL", st.Status)
		}
	}
	desc, err := eng.Describe(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deployment svc-db: 1/1 ready", "pvc svc-db-data", "service db: ClusterIP", "image bitnami/postgresql:16"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}
}

// An official image that starts as root is refused, saying what to do, unless
// K8S_ALLOW_ROOT_SERVICES is set: then that service's pod (only) may run as root, the
// namespace enforces "baseline", and the pod is admitted. A bad resource quantity is refused
// at start, naming the container and the key.
func TestServiceRootImage(t *testing.T) {
	c := k8stest.Start(t)
	ctx := t.Context()

	strict := newRuntime(t, c)
	eng := newEngine(t, strict)
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "Root Refused", Owner: "alice", Containers: webAndDB("docker.io/library/postgres:16")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = strict.DestroyProject(context.Background(), p, nil) })
	t.Cleanup(c.StartKubelet(t, strict.Namespace(p))) // the start reads its config through the file manager
	_, err = eng.StartProject(ctx, p.ID)
	if !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "K8S_ALLOW_ROOT_SERVICES=true") || !strings.Contains(err.Error(), "db") {
		t.Fatalf("start with postgres:16: %v, want a refusal naming db and K8S_ALLOW_ROOT_SERVICES", err)
	}
	if _, err := c.Client.AppsV1().Deployments(strict.Namespace(p)).Get(ctx, "svc-db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("svc-db after the refusal: %v, want none", err)
	}

	bad := webAndDB("bitnami/postgresql:16")
	bad[0].Resources.MemoryLimit = "2GB"
	q, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "Bad Quantity", Owner: "alice", Containers: bad})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = strict.DestroyProject(context.Background(), q, nil) })
	t.Cleanup(c.StartKubelet(t, strict.Namespace(q)))
	if _, err := eng.StartProject(ctx, q.ID); !errors.Is(err, engine.ErrBadInput) || !strings.Contains(err.Error(), "container web: resources memory_limit \"2GB\"") {
		t.Errorf("start with memory_limit 2GB: %v, want a refusal naming web and memory_limit", err)
	}

	lax := newRuntime(t, c, func(cfg *kubernetes.Config) { cfg.AllowRootServices = true })
	eng2 := newEngine(t, lax)
	r := createWebAndDB(t, c, lax, eng2, "Root Allowed", "postgres:16")
	ns := lax.Namespace(r)
	nsObj, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := nsObj.Labels; l["pod-security.kubernetes.io/enforce"] != "baseline" || l["pod-security.kubernetes.io/warn"] != "restricted" {
		t.Errorf("namespace pod security labels %v: want enforce baseline, warn restricted", l)
	}
	db, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "svc-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := db.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot != nil || sc.RunAsUser != nil {
		t.Errorf("svc-db pod security %+v: want root allowed", sc)
	}
	if sc := db.Spec.Template.Spec.Containers[0].SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("svc-db container security %+v: want no privilege escalation", sc)
	}
	web, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "dev-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := web.Spec.Template.Spec.SecurityContext; sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("dev-web may run as root beside the root service: %+v", sc)
	}
	waitRunning(t, eng2, r, 2) // the root pod was admitted
}

// Hibernation snapshots every PVC of the project, one VolumeSnapshot each, grouped under one
// snapshot row (the service's as its part), all ready and retained before the namespace goes;
// wake restores both PVCs from them; a manual snapshot's restore over the live project
// replaces both; purge frees every content, the restores' pre-provisioned ones included.
func TestServiceSnapshotsHibernateWakePurge(t *testing.T) {
	c := k8stest.Start(t)
	rt := newRuntime(t, c)
	eng := newEngine(t, rt)
	p := createWebAndDB(t, c, rt, eng, "Sleepy Database", "bitnami/postgresql:16")
	ns := rt.Namespace(p)
	ctx := t.Context()
	defer c.StartSnapshotter(t, ns)()
	api := c.Snapshots.SnapshotV1()

	// A manual snapshot, restored over the running project: both PVCs come from it.
	manual, err := eng.CreateSnapshot(ctx, p.ID, "before")
	if err != nil {
		t.Fatalf("manual snapshot: %v", err)
	}
	if manual.Status != engine.SnapshotReady || len(manual.Parts) != 1 || manual.Parts[0].Name != "db" || len(strings.Split(manual.Parts[0].Location, "/")) != 3 {
		t.Fatalf("manual snapshot %+v: want ready with part db and its content", manual)
	}
	if _, err := eng.RestoreSnapshot(ctx, p.ID, manual.ID); err != nil {
		t.Fatalf("restore: %v", err)
	}
	for pvc, loc := range map[string]string{kubernetes.PVCName: manual.Location, "svc-db-data": manual.Parts[0].Location} {
		got, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pvc, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pvc %s after restore: %v", pvc, err)
		}
		if ds := got.Spec.DataSource; ds == nil || ds.Name != strings.Split(loc, "/")[1] {
			t.Errorf("pvc %s after restore from %s: source %+v", pvc, loc, got.Spec.DataSource)
		}
	}

	hib, err := eng.Hibernate(ctx, p.ID)
	if err != nil {
		t.Fatalf("hibernate: %v", err)
	}
	if err := c.NamespaceGoing(ctx, ns); err != nil {
		t.Fatalf("namespace after hibernate: %v", err)
	}
	snap, err := eng.Snapshot(ctx, p.ID, hib.HibernationSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Backend != "csi" || snap.Status != engine.SnapshotReady || len(snap.Parts) != 1 || snap.Parts[0].Name != "db" {
		t.Fatalf("hibernation snapshot %+v: want one ready csi row with part db", snap)
	}
	locs := []string{snap.Location, snap.Parts[0].Location}
	var contents []string
	for _, loc := range locs {
		parts := strings.Split(loc, "/")
		if len(parts) != 3 {
			t.Fatalf("location %q: want namespace/volumesnapshot/content", loc)
		}
		content, err := api.VolumeSnapshotContents().Get(ctx, parts[2], metav1.GetOptions{})
		if err != nil {
			t.Fatalf("content %s survives the namespace: %v", parts[2], err)
		}
		if content.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentRetain {
			t.Errorf("content %s: deletion policy %s, want Retain", content.Name, content.Spec.DeletionPolicy)
		}
		contents = append(contents, content.Name)
	}
	if contents[0] == contents[1] {
		t.Fatalf("the files and the service share one content %s", contents[0])
	}

	if _, err := eng.Wake(ctx, p.ID); err != nil {
		t.Fatalf("wake: %v", err)
	}
	for _, name := range []string{kubernetes.PVCName, "svc-db-data"} {
		pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pvc %s after wake: %v", name, err)
		}
		ds := pvc.Spec.DataSource
		if ds == nil || ds.Kind != "VolumeSnapshot" {
			t.Fatalf("pvc %s after wake has no snapshot source: %+v", name, pvc.Spec)
		}
		vs, err := api.VolumeSnapshots(ns).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("restore VolumeSnapshot of %s: %v", name, err)
		}
		contents = append(contents, *vs.Spec.Source.VolumeSnapshotContentName)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(contents)))) != 4 {
		t.Errorf("contents %v: want two originals and two pre-provisioned", contents)
	}
	d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "svc-db", metav1.GetOptions{})
	if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("svc-db after wake: %v", err)
	}

	// Purge: every content of the snapshot goes, the part's and the restores' included.
	vols := kubernetes.NewSnapshots(rt)
	if err := vols.Delete(ctx, snap); err != nil {
		t.Fatalf("delete snapshot: %v", err)
	}
	for _, name := range contents {
		if _, err := api.VolumeSnapshotContents().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("content %s after purge: %v (want NotFound)", name, err)
		}
	}
	for _, loc := range locs {
		name := strings.Split(loc, "/")[1]
		if _, err := api.VolumeSnapshots(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("VolumeSnapshot %s after purge: %v (want NotFound)", name, err)
		}
	}
	if err := vols.Delete(ctx, snap); err != nil {
		t.Errorf("delete snapshot again: %v", err)
	}
}
