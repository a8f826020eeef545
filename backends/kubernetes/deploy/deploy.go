// Package deploy generates what a cluster needs to run sailtui's headless sweeps as CronJobs:
// the namespace, the sweeper's ServiceAccount, its least-privilege RBAC and the two CronJobs
// (hibernation every 2 minutes, retention purge daily). The permissions themselves are defined
// once, in the kubernetes backend (rbac.go); this package only packages them. `sailtui
// manifests` prints Objects as YAML, and the runtime calls ProjectRoleBinding for each project
// namespace it creates.
package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/engine"
)

// Defaults of Options.
const (
	DefaultImage     = "sailtui:latest"
	DefaultConfigMap = "sailtui-config"
	DefaultSecret    = "sailtui-secrets"
)

// The schedules: the hibernation sweep every 2 minutes, the purge daily at 03:00 UTC.
const (
	HibernateSchedule = "*/2 * * * *"
	PurgeSchedule     = "0 3 * * *"
	PurgeTimeZone     = "Etc/UTC"
)

// How long each sweep may run, and why.
//
// Hibernation runs every 2 minutes with concurrencyPolicy Forbid, so a run that overstays only
// makes the next ones skip. The sweep itself stops claiming projects after HibernateSweepDeadline
// (--deadline: the rest are reported deferred and the next run takes them), which keeps a
// normal run inside its 2-minute slot. activeDeadlineSeconds is the backstop for a run that
// hangs anyway: below the global sweep lock's TTL (engine.DefaultSweepLockTTL, 3 min), so a
// hung run is stopped before the lock it holds could even expire, and 70 s past the sweep's own
// deadline, so the projects in flight when it stopped claiming usually finish first. When it
// fires, the pod gets SIGTERM (as in a node drain): sailtui stops claiming, cuts the waits of
// the projects in flight short (a snapshot not ready yet: the project is handed back with its
// containers running, reported deferred), lets in-flight steps reach a journaled point within
// terminationGracePeriodSeconds, and exits; a step still running after that is killed, and the
// next run resumes it from the journal, reusing the snapshot it made.
//
// The waits themselves fit the slot too: the hibernation CronJob sets
// K8S_SNAPSHOT_READY_TIMEOUT_SECONDS to HibernateSnapshotReadyTimeout in its env (which wins
// over the ConfigMap's), so a project claimed just before the sweep's deadline has had its
// snapshot wait run out, and been handed back running, before activeDeadlineSeconds.
//
// The purge is daily and deletes one expired snapshot at a time, each a single object or API
// deletion: it gets an hour, stops claiming after 50 minutes, and may start up to an hour late
// (a missed daily run would otherwise wait a whole day).
const (
	HibernateSweepDeadline    = 100 * time.Second
	HibernateActiveDeadline   = 170 * time.Second
	HibernateStartingDeadline = 60 * time.Second
	PurgeSweepDeadline        = 50 * time.Minute
	PurgeActiveDeadline       = time.Hour
	PurgeStartingDeadline     = time.Hour
	// HibernateSnapshotReadyTimeout bounds a hibernation sweep's wait for a snapshot to be
	// readyToUse: HibernateSweepDeadline plus this wait leaves HibernateActiveDeadline 25 s
	// for stopping the containers first and tearing down after.
	HibernateSnapshotReadyTimeout = 45 * time.Second
	// TerminationGrace is what in-flight steps get after SIGTERM: their waits are cut short,
	// so what is left is handing projects back, a teardown, or one archive to finish
	// streaming and be read back.
	TerminationGrace = 120 * time.Second
)

// RunAsUser is the non-root uid (and gid) the sweeper runs as: the "nonroot" user of
// distroless images; any non-zero uid works with a static sailtui.
const RunAsUser = 65532

// Options shape the manifests. Zero values take the defaults.
type Options struct {
	// Namespace holds the ServiceAccount and the CronJobs (kubernetes.SweeperNamespace).
	Namespace string
	// Image is the sailtui image the CronJobs run (DefaultImage).
	Image string
	// S3Snapshots grants what the S3 sandwich needs (pods/exec into a project's file
	// manager), for clusters without a CSI snapshot class; only in project namespaces.
	S3Snapshots bool
	// ConfigMap and Secret are referenced by name (envFrom), never created: the Secret holds
	// DATABASE_URL and the AWS credentials, and its values never appear in the manifests.
	ConfigMap string
	Secret    string
	// NamespacePrefix is K8S_NAMESPACE_PREFIX of the runtime that creates the projects
	// ("proj-"): the admission policy lets the sweeper change the snapshot contents of
	// VolumeSnapshots in namespaces so named.
	NamespacePrefix string
	// TLSSecret, "namespace/name", is the wildcard TLS secret the runtime copies into project
	// namespaces (K8S_COPY_TLS_SECRET_FROM): a Role there reads that one secret
	// (TLSSourceRole), for whoever creates projects to be bound to. "" adds none.
	TLSSecret string
	// PullSecret, "namespace/name", is the image pull secret the runtime copies into project
	// namespaces (K8S_COPY_PULL_SECRET_FROM), with a Role there as for TLSSecret
	// (PullSecretSourceRole).
	PullSecret string
}

// TLSSourceRole names the Role that reads the wildcard TLS secret in its namespace.
const TLSSourceRole = "sailtui-tls-source"

// PullSecretSourceRole reads the image pull secret where it is copied from (Options.PullSecret).
const PullSecretSourceRole = "sailtui-pull-secret-source"

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = kubernetes.SweeperNamespace
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.ConfigMap == "" {
		o.ConfigMap = DefaultConfigMap
	}
	if o.Secret == "" {
		o.Secret = DefaultSecret
	}
	if o.NamespacePrefix == "" {
		o.NamespacePrefix = "proj-"
	}
	return o
}

func (o Options) validate() error {
	for _, f := range []struct{ what, v string }{{"namespace", o.Namespace}, {"config map", o.ConfigMap}, {"secret", o.Secret}} {
		var errs []string
		if f.what == "namespace" {
			errs = validation.IsDNS1123Label(f.v)
		} else {
			errs = validation.IsDNS1123Subdomain(f.v)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s %q: %s: %w", f.what, f.v, strings.Join(errs, "; "), engine.ErrBadInput)
		}
	}
	if errs := validation.IsDNS1123Label(o.NamespacePrefix + "x"); len(errs) > 0 {
		return fmt.Errorf("namespace prefix %q: want the start of a DNS label: %w", o.NamespacePrefix, engine.ErrBadInput)
	}
	for what, ref := range map[string]string{"TLS secret": o.TLSSecret, "pull secret": o.PullSecret} {
		if ref == "" {
			continue
		}
		ns, name, ok := strings.Cut(ref, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return fmt.Errorf("%s %q: want namespace/name: %w", what, ref, engine.ErrBadInput)
		}
	}
	if strings.ContainsAny(o.Image, " \t\n") {
		return fmt.Errorf("image %q: no spaces allowed: %w", o.Image, engine.ErrBadInput)
	}
	return nil
}

// Labels every generated object carries.
func labels(component string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "sailtui",
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/part-of":    "sailtui",
		"app.kubernetes.io/managed-by": "sailtui",
	}
}

// Objects returns the manifests in apply order: Namespace, ServiceAccount, the cluster role
// and its binding, the admission policy that narrows that role to sailtui's own objects and its
// binding, the per-project role (bound in each project namespace by the runtime, see
// ProjectRoleBinding; never cluster-wide), and the two CronJobs.
func Objects(o Options) ([]runtime.Object, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: merge(labels("sweeper"), map[string]string{
			// The sweeper pods meet the restricted Pod Security profile; enforce it.
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
			"pod-security.kubernetes.io/audit":   "restricted",
		})},
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperServiceAccount, Namespace: o.Namespace, Labels: labels("sweeper")},
		// Nothing mounts the token by default; only the sweep pods opt in (they need the
		// in-cluster config).
		AutomountServiceAccountToken: ptr(false),
	}
	clusterRole := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperClusterRole, Labels: labels("sweeper")},
		Rules:      kubernetes.SweeperClusterRules(),
	}
	clusterBinding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperClusterRole, Labels: labels("sweeper")},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubernetes.SweeperClusterRole},
		Subjects:   []rbacv1.Subject{saSubject(o.Namespace, kubernetes.SweeperServiceAccount)},
	}
	projectRole := &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: kubernetes.SweeperProjectRole, Labels: labels("sweeper"), Annotations: map[string]string{
			"sailtui.io/bound-by": "a RoleBinding " + kubernetes.SweeperRoleBinding + " in each project namespace, created by the runtime; never cluster-wide",
		}},
		Rules: kubernetes.SweeperProjectRules(o.S3Snapshots),
	}
	hibernate := cronJob(o, "sailtui-hibernate", "hibernate", HibernateSchedule, "", HibernateSweepDeadline,
		HibernateStartingDeadline, HibernateActiveDeadline, 0,
		resources("100m", "256Mi", "1", "1Gi"),
		// Fitted to the job's deadlines (see HibernateSnapshotReadyTimeout), whatever the
		// ConfigMap says for the consoles.
		corev1.EnvVar{Name: "K8S_SNAPSHOT_READY_TIMEOUT_SECONDS", Value: fmt.Sprint(int64(HibernateSnapshotReadyTimeout / time.Second))})
	purge := cronJob(o, "sailtui-purge", "purge", PurgeSchedule, PurgeTimeZone, PurgeSweepDeadline,
		PurgeStartingDeadline, PurgeActiveDeadline, 2,
		resources("50m", "128Mi", "500m", "512Mi"))
	policy, policyBinding := sweeperPolicy(o)
	objs := []runtime.Object{ns, sa, clusterRole, clusterBinding, policy, policyBinding, projectRole, hibernate, purge}
	for _, src := range []struct{ ref, role, setting string }{
		{o.TLSSecret, TLSSourceRole, "K8S_COPY_TLS_SECRET_FROM"},
		{o.PullSecret, PullSecretSourceRole, "K8S_COPY_PULL_SECRET_FROM"},
	} {
		if src.ref == "" {
			continue
		}
		srcNS, name, _ := strings.Cut(src.ref, "/")
		objs = append(objs, &rbacv1.Role{
			TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: src.role, Namespace: srcNS, Labels: labels("projects"), Annotations: map[string]string{
				"sailtui.io/bound-by": "a RoleBinding here for whoever creates projects with " + src.setting + "=" + srcNS + "; the sweeper needs none",
			}},
			Rules: kubernetes.SecretSourceRules(name),
		})
	}
	return objs, nil
}

// ProjectRoleBinding is the RoleBinding the runtime creates in every project namespace: it
// grants the sweeper's ServiceAccount (saName in saNamespace) the ClusterRole
// kubernetes.SweeperProjectRole there, and goes away with the namespace. It is the runtime's own
// kubernetes.SweeperRoleBindingFor (the runtime cannot import this package, which imports it),
// so what the tests check here is what the runtime creates.
func ProjectRoleBinding(namespace, saNamespace, saName string) *rbacv1.RoleBinding {
	return kubernetes.SweeperRoleBindingFor(namespace, saNamespace, saName)
}

func saSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}
}

func cronJob(o Options, name, sweep, schedule, tz string, sweepDeadline, starting, active time.Duration,
	backoff int32, res corev1.ResourceRequirements, env ...corev1.EnvVar) *batchv1.CronJob {
	lbl := merge(labels("sweeper"), map[string]string{"sailtui.io/sweep": sweep})
	var timeZone *string
	if tz != "" {
		timeZone = ptr(tz)
	}
	pod := corev1.PodSpec{
		ServiceAccountName: kubernetes.SweeperServiceAccount,
		// The ServiceAccount mounts no token; this pod needs one for its in-cluster config.
		AutomountServiceAccountToken:  ptr(true),
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr(int64(TerminationGrace / time.Second)),
		EnableServiceLinks:            ptr(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr(true),
			RunAsUser:      ptr(int64(RunAsUser)),
			RunAsGroup:     ptr(int64(RunAsUser)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            "sweep",
			Image:           o.Image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Args:            []string{"--headless", "--sweep=" + sweep, fmt.Sprintf("--deadline=%ds", int64(sweepDeadline/time.Second))},
			Env: append([]corev1.EnvVar{
				{Name: "DEPLOYMENT_MODE", Value: "kubernetes"},
				// The root filesystem is read-only; the state directory is scratch space.
				{Name: "SAILTUI_STATE_DIR", Value: "/var/lib/sailtui"},
				{Name: "TMPDIR", Value: "/tmp"},
			}, env...),
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: o.ConfigMap}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: o.Secret}}},
			},
			Resources: res,
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot:             ptr(true),
				ReadOnlyRootFilesystem:   ptr(true),
				AllowPrivilegeEscalation: ptr(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "state", MountPath: "/var/lib/sailtui"},
				{Name: "tmp", MountPath: "/tmp"},
			},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		Volumes: []corev1.Volume{
			{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("256Mi"))}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("256Mi"))}}},
		},
	}
	return &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: lbl},
		Spec: batchv1.CronJobSpec{
			Schedule:                   schedule,
			TimeZone:                   timeZone,
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    ptr(int64(starting / time.Second)),
			SuccessfulJobsHistoryLimit: ptr(int32(3)),
			FailedJobsHistoryLimit:     ptr(int32(5)),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: batchv1.JobSpec{
					BackoffLimit:          ptr(backoff),
					ActiveDeadlineSeconds: ptr(int64(active / time.Second)),
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: lbl},
						Spec:       pod,
					},
				},
			},
		},
	}
}

func resources(cpuReq, memReq, cpuLim, memLim string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse(memReq)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(memLim)},
	}
}

// YAML renders Objects as one multi-document YAML stream, ready for kubectl apply -f -.
func YAML(o Options) ([]byte, error) {
	objs, err := Objects(o)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# sailtui headless sweeps: generated by `sailtui manifests`; edit the flags, not this output.\n")
	for i, obj := range objs {
		doc, err := marshal(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(doc)
	}
	return b.Bytes(), nil
}

// marshal renders one object without what only a server fills in (status) and without nulls.
func marshal(obj runtime.Object) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	delete(m, "status")
	prune(m)
	y, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	return y, nil
}

// prune drops null values, recursively. Empty objects stay: some mean something (emptyDir: {}).
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}

func merge(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }
