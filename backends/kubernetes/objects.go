package kubernetes

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sailtui/sailtui/engine"
)

// The objects of a project, built here and nowhere else, so that the tests that check them and
// the code that applies them see the same thing.

// uid and gid every project pod runs as: the devserver image's user, never root.
const podUser = 1000

func (r *Runtime) namespaceObject(p engine.Project) *corev1.Namespace {
	l := projectLabels(p, ComponentProject)
	// Pod Security admission enforces "restricted": no root, no privilege escalation, no
	// capabilities, a seccomp profile — what every pod of the project is built to pass.
	for _, mode := range []string{"enforce", "audit", "warn"} {
		l["pod-security.kubernetes.io/"+mode] = "restricted"
		l["pod-security.kubernetes.io/"+mode+"-version"] = "latest"
	}
	if r.cfg.AllowRootServices {
		// Root service pods (see services.go) pass "baseline" only; audit and warn stay
		// "restricted", so every pod that needs the exception is still reported.
		l["pod-security.kubernetes.io/enforce"] = "baseline"
	}
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Namespace(p), Labels: l},
	}
}

// pvcObject is the project's storage; from, when set, names the VolumeSnapshot it is
// restored from.
func (r *Runtime) pvcObject(p engine.Project, from string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: PVCName, Namespace: r.Namespace(p), Labels: projectLabels(p, ComponentStorage)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.PersistentVolumeAccessMode(r.cfg.PVCAccessMode)},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(r.cfg.PVCSize)},
			},
		},
	}
	if r.cfg.StorageClass != "" {
		pvc.Spec.StorageClassName = &r.cfg.StorageClass
	}
	if from != "" {
		group := snapshotGroup
		ref := &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: from}
		pvc.Spec.DataSource = ref
		pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: from}
	}
	return pvc
}

// networkPolicyObject lets into the project only the ingress controller, the platform and the
// project itself, and out only DNS, the project itself and the web (80/443) — never the
// link-local range where cloud metadata servers answer with node credentials.
func (r *Runtime) networkPolicyObject(p engine.Project) *networkingv1.NetworkPolicy {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(proto *corev1.Protocol, n int) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(int32(n))
		return networkingv1.NetworkPolicyPort{Protocol: proto, Port: &v}
	}
	nsNamed := func(name string) networkingv1.NetworkPolicyPeer {
		return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": name}}}
	}
	same := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicy, Namespace: r.Namespace(p), Labels: projectLabels(p, ComponentProject)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{nsNamed(r.cfg.IngressNamespace), nsNamed(r.cfg.PlatformNamespace), same},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{Ports: []networkingv1.NetworkPolicyPort{port(&udp, 53), port(&tcp, 53)}},
				{To: []networkingv1.NetworkPolicyPeer{same}},
				{
					To: []networkingv1.NetworkPolicyPeer{
						{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"169.254.0.0/16"}}},
						{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: []string{"fe80::/10"}}},
					},
					Ports: []networkingv1.NetworkPolicyPort{port(&tcp, 80), port(&tcp, 443)},
				},
			},
		},
	}
}

// sweeperBindingObject grants the sweeps' service account their project role in p's namespace;
// it goes away with the namespace.
func (r *Runtime) sweeperBindingObject(p engine.Project) *rbacv1.RoleBinding {
	ns, name := splitSweeper(r.cfg.Sweeper)
	rb := SweeperRoleBindingFor(r.Namespace(p), ns, name)
	rb.Labels = projectLabels(p, ComponentProject)
	return rb
}

// podSecurity is what the restricted Pod Security level asks of a pod.
func podSecurity() *corev1.PodSecurityContext {
	uid, nonRoot := int64(podUser), true
	return &corev1.PodSecurityContext{
		RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid, RunAsNonRoot: &nonRoot,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// containerSecurity is the restricted level's part for each container.
func containerSecurity() *corev1.SecurityContext {
	no, yes := false, true
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no, RunAsNonRoot: &yes,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// podTemplate is the part every pod of a project shares: the storage at MountPath, no service
// account token (a user's code must not talk to the API server), no service links, non-root,
// and the project's affinity.
func (r *Runtime) podTemplate(p engine.Project, labels map[string]string, ctr corev1.Container) corev1.PodTemplateSpec {
	no := false
	ctr.SecurityContext = containerSecurity()
	ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "project", MountPath: r.cfg.MountPath})
	ctr.ImagePullPolicy = corev1.PullPolicy(r.cfg.ImagePullPolicy)
	spec := corev1.PodSpec{
		AutomountServiceAccountToken: &no,
		EnableServiceLinks:           &no,
		SecurityContext:              podSecurity(),
		Containers:                   []corev1.Container{ctr},
		ImagePullSecrets:             r.pullSecrets(),
		Volumes: []corev1.Volume{{Name: "project", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PVCName}}}},
	}
	if r.cfg.PodAffinity {
		// Every pod of the project mounts one volume, ReadWriteOnce unless configured
		// otherwise: they must share a node. With the file manager always there, a project
		// with a dev container already has several pods, so the rule is on every pod.
		spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelProjectID: labelValue(p.ID)}},
				TopologyKey:   "kubernetes.io/hostname",
			}},
		}}
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
}

func deploymentObject(name, ns string, labels map[string]string, replicas int32, tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	selector := map[string]string{LabelProjectID: labels[LabelProjectID], LabelComponent: labels[LabelComponent]}
	if id, ok := labels[LabelContainerID]; ok {
		selector[LabelContainerID] = id
	}
	revisions := int32(2)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// One volume, one writer at a time: the old pod goes before the new one starts.
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			RevisionHistoryLimit: &revisions,
			Template:             tmpl,
		},
	}
}

// fileManagerObject is the pod file operations, exec-based archives and template clones run
// in. It runs nothing but a sleep: every operation is an exec with an argv.
func (r *Runtime) fileManagerObject(p engine.Project) *appsv1.Deployment {
	labels := projectLabels(p, ComponentFileManager)
	ctr := corev1.Container{
		Name:       "file-manager",
		Image:      r.cfg.FileManagerImage,
		Command:    []string{"sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"},
		WorkingDir: r.cfg.MountPath,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
	return deploymentObject(FileManagerName, r.Namespace(p), labels, 1, r.podTemplate(p, labels, ctr))
}

// devScript runs the startup command (SAILTUI_START, never spliced into the script) in the
// container's directory (made when missing, as Docker does with a working directory): inside a tmux session when the image has tmux, so an operator can
// attach to it, with its output copied to the pod's log; otherwise as the pod's main process.
//
// A tmux that cannot start (no UTF-8 locale in the image, say) does not keep the dev server
// from running: it then runs as the main process, as without tmux. The shell waiting on the
// session is the pod's PID 1, which ignores signals it does not trap: without the trap a stop
// would wait out the grace period for the kill.
const devScript = `mkdir -p "$SAILTUI_DIR" && cd "$SAILTUI_DIR" || exit 1
if command -v tmux >/dev/null 2>&1 && tmux new-session -d -s dev '{ sh -c "$SAILTUI_START"; echo $? > /tmp/.sailtui-exit; } 2>&1 | tee -a /proc/1/fd/1' 2>/dev/null; then
  trap 'tmux kill-server 2>/dev/null; exit 143' TERM INT
  while tmux has-session -t dev 2>/dev/null; do sleep 1 & wait $!; done
  code=$(cat /tmp/.sailtui-exit 2>/dev/null) || code=1
  exit "${code:-1}"
fi
exec sh -c "$SAILTUI_START"`

// devObject is a container's Deployment, with replicas 1 (started) or 0 (stopped). A bad
// quantity in the container's resources is refused.
func (r *Runtime) devObject(p engine.Project, c engine.Container, spec engine.StartSpec, replicas int32) (*appsv1.Deployment, error) {
	res, err := resourcesOf(c)
	if err != nil {
		return nil, err
	}
	labels := containerLabels(p, c)
	port := devPort(spec)
	// As in the other runtimes: spec.Env, then the container's own, then the runtime's.
	// NODE_ENV=development beneath them all, as the reference platform sets it (a container
	// may say otherwise).
	env := map[string]string{"NODE_ENV": "development"}
	maps.Copy(env, spec.Env)
	maps.Copy(env, c.Env)
	maps.Copy(env, map[string]string{
		"PORT":           strconv.Itoa(port),
		"HOST":           "0.0.0.0",
		"PROJECT_ID":     p.ID,
		"CONTAINER_ID":   devName(c),
		"CONTAINER_NAME": c.Name,
		"SAILTUI_START":  spec.Command,
		"SAILTUI_DIR":    workDir(r.cfg.MountPath, c),
	})
	var envVars []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envVars = append(envVars, corev1.EnvVar{Name: k, Value: env[k]})
	}
	probe := func(delay, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
			InitialDelaySeconds: delay, PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 2,
		}
	}
	ctr := corev1.Container{
		Name:       "dev",
		Image:      cmp.Or(c.Image, r.cfg.Image),
		Command:    []string{"sh", "-c", devScript},
		WorkingDir: r.cfg.MountPath,
		Env:        envVars,
		Ports:      []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}},
		// Dev servers compile before they listen: up to 10 minutes to start, then checked. A
		// TCP connect each second while starting costs nothing and makes a started server
		// ready within a second instead of five.
		StartupProbe:   probe(0, 1, 600),
		ReadinessProbe: probe(0, 5, 3),
		LivenessProbe:  probe(0, 20, 6),
		Resources:      res,
	}
	return deploymentObject(devName(c), r.Namespace(p), labels, replicas, r.podTemplate(p, labels, ctr)), nil
}

func devPort(spec engine.StartSpec) int {
	if spec.Port > 0 {
		return spec.Port
	}
	return 3000
}

// workDir is the container's directory under the mount.
func workDir(mount string, c engine.Container) string {
	if c.Directory == "" || c.Directory == "." {
		return mount
	}
	return mount + "/" + c.Directory
}

func (r *Runtime) serviceObject(p engine.Project, c engine.Container, spec engine.StartSpec) *corev1.Service {
	labels := containerLabels(p, c)
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: devName(c), Namespace: r.Namespace(p), Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelProjectID: labels[LabelProjectID], LabelComponent: ComponentDev, LabelContainerID: labels[LabelContainerID]},
			Ports: []corev1.ServicePort{{Name: "http", Port: int32(devPort(spec)), TargetPort: intstr.FromString("http"),
				Protocol: corev1.ProtocolTCP}},
		},
	}
}

func (r *Runtime) ingressObject(p engine.Project, c engine.Container, spec engine.StartSpec) *networkingv1.Ingress {
	host := r.Host(p, c)
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Name: devName(c), Namespace: r.Namespace(p), Labels: containerLabels(p, c),
			Annotations: r.ingressAnnotations()},
		Spec: networkingv1.IngressSpec{
			IngressClassName: &r.cfg.IngressClass,
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: &prefix,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: devName(c), Port: networkingv1.ServiceBackendPort{Name: "http"}}},
				}}},
			}}},
		},
	}
	if r.cfg.TLSSecret != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: r.cfg.TLSSecret}}
	}
	return ing
}

// URL is where the ingress serves c.
func (r *Runtime) URL(p engine.Project, c engine.Container) string {
	scheme := "http"
	if r.cfg.TLSSecret != "" {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/", scheme, r.Host(p, c))
}
