package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sailtui/sailtui/engine"
)

// Service containers (a project's database): per service a Deployment svc-<name> running the
// service's own image (its own command unless the service names one), a PVC svc-<name>-data
// mounted at its data path, and a ClusterIP Service named as the container, so that ${HOST}
// of its exports (the container's name) resolves in the namespace. The pods carry the labels,
// pod affinity and security context of dev pods (component "dev", so stopping a project stops
// its services before a snapshot, and exec and logs find them), plus LabelContainerKind.
//
// Their PVCs are part of the project's storage: Snapshots captures each as a part of the
// snapshot, restores recreate them from it, and a hibernation's namespace deletion removes
// them only after the snapshot is ready (the engine's order).
//
// A service pod does not mount the project's files: a database has no business with the code.

// LabelContainerKind marks the objects of a service container with its kind ("service").
const LabelContainerKind = "tesslate.io/container-kind"

// RunsServices implements engine.ServiceRunner.
func (r *Runtime) RunsServices() bool { return true }

// svcDeploymentName is the Deployment of service c.
func svcDeploymentName(c engine.Container) string { return dnsLabel("svc-" + c.Name) }

// SvcPVCName is the data PVC of service c.
func SvcPVCName(c engine.Container) string { return svcPVCNamed(c.Name) }

func svcPVCNamed(name string) string { return dnsLabel("svc-" + name + "-data") }

// deploymentName is the Deployment of any container of a project.
func deploymentName(c engine.Container) string {
	if c.IsService() {
		return svcDeploymentName(c)
	}
	return devName(c)
}

// dataPath is where a service's volume is mounted.
func dataPath(c engine.Container) string { return cmp.Or(c.DataPath, "/data") }

// rootImages are the official images whose entrypoint starts as root (to own the data
// directory, then drop to the server's user): under the restricted pod security of project
// pods they fail at once. The images cannot be inspected from here, so they go by name.
var rootImages = map[string]bool{"postgres": true, "mysql": true, "mariadb": true, "mongo": true, "redis": true, "valkey": true}

// imageBase is an image reference's last path element without tag or digest:
// "docker.io/library/postgres:16@sha256:..." is "postgres".
func imageBase(image string) string {
	image, _, _ = strings.Cut(image, "@")
	base := path.Base(image)
	if i := strings.LastIndex(base, ":"); i >= 0 {
		base = base[:i]
	}
	return strings.ToLower(base)
}

// needsRoot reports whether service c runs an image known to need root.
func needsRoot(c engine.Container) bool { return rootImages[imageBase(c.Image)] }

// checkService refuses, before anything is applied, a service this runtime cannot run as the
// project expects.
func (r *Runtime) checkService(c engine.Container, spec engine.StartSpec) error {
	if strings.TrimSpace(c.Image) == "" {
		return fmt.Errorf("service container %s has no image: %w", c.Name, engine.ErrBadInput)
	}
	// The Service is named as the container so that ${HOST} resolves: the name must be a
	// Service name (DNS-1035) and not one the dev containers' Services take ("dev-<app>").
	if errs := validation.IsDNS1035Label(c.Name); len(errs) > 0 {
		return fmt.Errorf("service container %s: its name is its host name in the namespace, and a Kubernetes Service name must start with a letter (%s); rename it: %w",
			c.Name, strings.Join(errs, "; "), engine.ErrBadInput)
	}
	if strings.HasPrefix(c.Name, "dev-") {
		return fmt.Errorf("service container %s: names starting with dev- are the Services of app containers in kubernetes mode; rename it: %w", c.Name, engine.ErrBadInput)
	}
	if spec.Port <= 0 || spec.Port > 65535 {
		return fmt.Errorf("service container %s: port %d out of range 1-65535: %w", c.Name, spec.Port, engine.ErrBadInput)
	}
	if needsRoot(c) && !r.cfg.AllowRootServices {
		return fmt.Errorf("service container %s: image %s starts as root (to own its data directory), which the project's pod security (non-root) refuses; use an image that runs as a non-root user (e.g. bitnami/%s), or set K8S_ALLOW_ROOT_SERVICES=true to let such services run as root: %w",
			c.Name, c.Image, imageBase(c.Image), engine.ErrBadInput)
	}
	if !path.IsAbs(dataPath(c)) {
		return fmt.Errorf("service container %s: data path %q is not absolute: %w", c.Name, c.DataPath, engine.ErrBadInput)
	}
	return nil
}

// svcLabels are the labels of a service's objects and pods.
func svcLabels(p engine.Project, c engine.Container) map[string]string {
	l := containerLabels(p, c)
	l[LabelContainerKind] = string(engine.KindService)
	return l
}

// svcPVCObject is the data PVC of service name, from the VolumeSnapshot named from when set.
func (r *Runtime) svcPVCObject(p engine.Project, name, from string) *corev1.PersistentVolumeClaim {
	pvc := r.pvcObject(p, from)
	pvc.Name = svcPVCNamed(name)
	pvc.Labels[LabelContainerID] = labelValue(name)
	pvc.Labels[LabelContainerKind] = string(engine.KindService)
	return pvc
}

// createSvcPVC creates the data PVC of service name unless there is one (see createPVC).
func (r *Runtime) createSvcPVC(ctx context.Context, p engine.Project, name, from string) error {
	obj := r.svcPVCObject(p, name, from)
	_, err := r.kube.CoreV1().PersistentVolumeClaims(r.Namespace(p)).Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pvc %s: %w", obj.Name, err)
	}
	return nil
}

// svcDeploymentObject is service c's Deployment.
func (r *Runtime) svcDeploymentObject(p engine.Project, c engine.Container, spec engine.StartSpec, replicas int32) (*appsv1.Deployment, error) {
	res, err := resourcesOf(c)
	if err != nil {
		return nil, err
	}
	labels := svcLabels(p, c)
	env := map[string]string{}
	maps.Copy(env, spec.Env)
	maps.Copy(env, c.Env)
	maps.Copy(env, map[string]string{"PROJECT_ID": p.ID, "CONTAINER_ID": svcDeploymentName(c), "CONTAINER_NAME": c.Name})
	var envVars []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envVars = append(envVars, corev1.EnvVar{Name: k, Value: env[k]})
	}
	ctr := corev1.Container{
		// "dev", as in dev pods: exec and logs address the container by that name.
		Name:      "dev",
		Image:     c.Image,
		Env:       envVars,
		Ports:     []corev1.ContainerPort{{Name: "svc", ContainerPort: int32(spec.Port), Protocol: corev1.ProtocolTCP}},
		Resources: res,
		// Ready once it accepts connections; no liveness probe: a database recovering at
		// start must not be killed for being slow.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("svc")}},
			PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: 2,
		},
	}
	if strings.TrimSpace(spec.Command) != "" {
		// As in docker mode: the command replaces the image's entrypoint, run by a shell.
		ctr.Command = []string{"sh", "-c", spec.Command}
	}
	tmpl := r.podTemplate(p, labels, ctr)
	// Not the project's files: only the service's own volume.
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: SvcPVCName(c)}}}}
	pc := &tmpl.Spec.Containers[0]
	pc.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: dataPath(c)}}
	if needsRoot(c) && r.cfg.AllowRootServices {
		// This pod only: the image's entrypoint starts as root, owns the data directory and
		// drops to its server's user, which needs the default capabilities (chown, setuid).
		// Still no privilege escalation, a seccomp profile, and no service account token.
		no := false
		tmpl.Spec.SecurityContext = &corev1.PodSecurityContext{
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		pc.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no}
	}
	return deploymentObject(svcDeploymentName(c), r.Namespace(p), labels, replicas, tmpl), nil
}

// svcServiceObject is the ClusterIP Service that gives service c its host name, c.Name.
func (r *Runtime) svcServiceObject(p engine.Project, c engine.Container, spec engine.StartSpec) *corev1.Service {
	labels := svcLabels(p, c)
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: r.Namespace(p), Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelProjectID: labels[LabelProjectID], LabelComponent: ComponentDev, LabelContainerID: labels[LabelContainerID]},
			Ports: []corev1.ServicePort{{Name: "svc", Port: int32(spec.Port), TargetPort: intstr.FromString("svc"),
				Protocol: corev1.ProtocolTCP}},
		},
	}
}

// startService applies service c's PVC (unless it exists: a restore made it from its
// snapshot), Service and Deployment (replicas 1). Like StartContainer it does not wait.
func (r *Runtime) startService(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec) (engine.ContainerStatus, error) {
	if err := r.checkService(c, spec); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: %w", c.Name, err)
	}
	d, err := r.svcDeploymentObject(p, c, spec, 1)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: %w", c.Name, err)
	}
	ns := r.Namespace(p)
	if err := r.createSvcPVC(ctx, p, c.Name, ""); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: %w", c.Name, err)
	}
	if _, err := apply(ctx, r.kube.CoreV1().Services(ns), r.svcServiceObject(p, c, spec)); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: service: %w", c.Name, err)
	}
	got, err := apply(ctx, r.kube.AppsV1().Deployments(ns), d)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: deployment: %w", c.Name, err)
	}
	return r.finishStatus(p, c, r.statusOf(ctx, p, c, got)), nil
}

// finishStatus adds to a status what a service's differs in: no URL (services are not
// routed) and its volume.
func (r *Runtime) finishStatus(_ engine.Project, c engine.Container, st engine.ContainerStatus) engine.ContainerStatus {
	if !c.IsService() {
		return st
	}
	st.URL = ""
	st.Volume = SvcPVCName(c)
	return st
}

// hostAliasName is the Service that gives app c its host name c.Name, as the ${HOST} of its
// exports says, beside its dev-<name> Service (the Ingress's backend); "" when c.Name cannot
// be one: not a Service name (starting with a digit), or one of the dev-<app> names.
func hostAliasName(c engine.Container) string {
	if len(validation.IsDNS1035Label(c.Name)) > 0 || strings.HasPrefix(c.Name, "dev-") {
		return ""
	}
	return c.Name
}

// hostAliasObject is app c's Service named hostAliasName(c), on the dev Service's port.
func (r *Runtime) hostAliasObject(p engine.Project, c engine.Container, spec engine.StartSpec) *corev1.Service {
	svc := r.serviceObject(p, c, spec)
	svc.Name = hostAliasName(c)
	return svc
}

// applyHostAlias gives app c the Service its name resolves to (see hostAliasName).
func (r *Runtime) applyHostAlias(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec) error {
	if hostAliasName(c) == "" {
		return nil
	}
	if _, err := apply(ctx, r.kube.CoreV1().Services(r.Namespace(p)), r.hostAliasObject(p, c, spec)); err != nil {
		return fmt.Errorf("service %s (its host name): %w", hostAliasName(c), err)
	}
	return nil
}

// describeServices adds each service's PVC and Service to Describe's lines.
func (r *Runtime) describeServices(ctx context.Context, b *strings.Builder, p engine.Project, cs []engine.Container) {
	ns := r.Namespace(p)
	for _, c := range cs {
		if !c.IsService() {
			continue
		}
		fmt.Fprintf(b, "service container %s: image %s, data at %s\n", c.Name, c.Image, dataPath(c))
		name := SvcPVCName(c)
		pvc, err := r.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			src := ""
			if pvc.Spec.DataSource != nil {
				src = ", from " + pvc.Spec.DataSource.Kind + " " + pvc.Spec.DataSource.Name
			}
			req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			fmt.Fprintf(b, "  pvc %s: %s, %s%s\n", name, pvc.Status.Phase, req.String(), src)
		case apierrors.IsNotFound(err):
			fmt.Fprintf(b, "  pvc %s: absent (made at its first start)\n", name)
		}
		if svc, err := r.kube.CoreV1().Services(ns).Get(ctx, c.Name, metav1.GetOptions{}); err == nil {
			ports := make([]string, 0, len(svc.Spec.Ports))
			for _, sp := range svc.Spec.Ports {
				ports = append(ports, strconv.Itoa(int(sp.Port)))
			}
			fmt.Fprintf(b, "  service %s: %s %s, port %s (host %s)\n", svc.Name, svc.Spec.Type, svc.Spec.ClusterIP, strings.Join(ports, ","), c.Name)
		}
		if st, err := r.ContainerStatus(ctx, p, c); err == nil && st.State != engine.ContainerRunning && st.Detail != "" {
			fmt.Fprintf(b, "  %s: %s\n", st.State, st.Detail)
		}
	}
}

// Resources of app and service pods, unless the container says otherwise.
var (
	defaultCPURequest    = resource.MustParse("100m")
	defaultMemoryRequest = resource.MustParse("256Mi")
	defaultMemoryLimit   = resource.MustParse("2Gi")
)

// resourcesOf are the requests and limits of c's pod: c.Resources over the defaults. A bad
// quantity, or a request above its limit, is refused naming the container and the key.
func resourcesOf(c engine.Container) (corev1.ResourceRequirements, error) {
	out := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: defaultCPURequest, corev1.ResourceMemory: defaultMemoryRequest},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: defaultMemoryLimit},
	}
	set := func(list corev1.ResourceList, name corev1.ResourceName, key, v string) error {
		if v == "" {
			return nil
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("container %s: resources %s %q: %w (want a quantity such as 512Mi or 100m): %w", c.Name, key, v, err, engine.ErrBadInput)
		}
		if q.Sign() <= 0 {
			return fmt.Errorf("container %s: resources %s %q: want a positive quantity: %w", c.Name, key, v, engine.ErrBadInput)
		}
		list[name] = q
		return nil
	}
	rs := c.Resources
	if err := errors.Join(
		set(out.Requests, corev1.ResourceMemory, "memory_request", rs.MemoryRequest),
		set(out.Limits, corev1.ResourceMemory, "memory_limit", rs.MemoryLimit),
		set(out.Requests, corev1.ResourceCPU, "cpu_request", rs.CPURequest),
		set(out.Limits, corev1.ResourceCPU, "cpu_limit", rs.CPULimit),
	); err != nil {
		return out, err
	}
	for _, k := range []struct {
		name       corev1.ResourceName
		req, limit string
		limitSet   bool
	}{
		{corev1.ResourceMemory, "memory_request", "memory_limit", rs.MemoryLimit != ""},
		{corev1.ResourceCPU, "cpu_request", "cpu_limit", rs.CPULimit != ""},
	} {
		req, lim := out.Requests[k.name], out.Limits[k.name]
		if _, ok := out.Limits[k.name]; !ok || req.Cmp(lim) <= 0 {
			continue
		}
		if !k.limitSet {
			// A request above the default limit: the limit is the request.
			out.Limits[k.name] = req
			continue
		}
		return out, fmt.Errorf("container %s: resources %s %s is above %s %s: %w", c.Name, k.req, req.String(), k.limit, lim.String(), engine.ErrBadInput)
	}
	return out, nil
}

// websocketAnnotations keep a dev server's websockets (hot reload) open through the nginx
// ingress controller: its default of 60 s would cut them.
var websocketAnnotations = map[string]string{
	"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
	"nginx.ingress.kubernetes.io/proxy-send-timeout": "3600",
	"nginx.ingress.kubernetes.io/proxy-http-version": "1.1",
}

// ingressAnnotations are the annotations of every Ingress: the websocket ones, then the
// configured ones over them.
func (r *Runtime) ingressAnnotations() map[string]string {
	out := maps.Clone(websocketAnnotations)
	maps.Copy(out, r.cfg.IngressAnnotations)
	return out
}

// ParseIngressAnnotations reads K8S_INGRESS_ANNOTATIONS: a JSON object of strings
// ({"k": "v", ...}), or a comma-separated list of key=value (values without commas).
func ParseIngressAnnotations(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	if strings.HasPrefix(s, "{") {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("%w (want a JSON object of strings, or key=value,key=value)", err)
		}
	} else {
		for item := range strings.SplitSeq(s, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			k, v, ok := strings.Cut(item, "=")
			if !ok {
				return nil, fmt.Errorf("%q has no '=' (want key=value,key=value, or a JSON object)", item)
			}
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, checkAnnotations(out)
}

// checkAnnotations checks annotation keys as the API server would.
func checkAnnotations(m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("annotation key %q: %s", k, strings.Join(errs, "; "))
		}
	}
	return nil
}

// CheckImagePullPolicy checks K8S_IMAGE_PULL_POLICY.
func CheckImagePullPolicy(s string) error {
	switch corev1.PullPolicy(s) {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	}
	return errors.New("want Always, IfNotPresent or Never")
}

// CheckImagePullSecret checks K8S_IMAGE_PULL_SECRET, the name of a Secret.
func CheckImagePullSecret(s string) error {
	if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
		return fmt.Errorf("want the name of a Secret: %s", strings.Join(errs, "; "))
	}
	return nil
}

// pullSecrets is the imagePullSecrets of every pod.
func (r *Runtime) pullSecrets() []corev1.LocalObjectReference {
	if r.cfg.ImagePullSecret == "" {
		return nil
	}
	return []corev1.LocalObjectReference{{Name: r.cfg.ImagePullSecret}}
}
