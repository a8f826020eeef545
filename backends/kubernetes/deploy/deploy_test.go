package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/deploy"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
)

func TestMain(m *testing.M) { os.Exit(k8stest.Main(m)) }

// parseYAML decodes a multi-document stream with the client-go scheme, as kubectl would.
func parseYAML(t *testing.T, b []byte) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("document %d does not decode: %v\n%s", i, err, doc)
		}
		objs = append(objs, obj)
	}
}

func cronJobs(objs []runtime.Object) map[string]*batchv1.CronJob {
	out := map[string]*batchv1.CronJob{}
	for _, o := range objs {
		if cj, ok := o.(*batchv1.CronJob); ok {
			out[cj.Spec.JobTemplate.Spec.Template.Labels["sailtui.io/sweep"]] = cj
		}
	}
	return out
}

// The YAML decodes back into exactly the typed objects; the RBAC is the backend's rules and
// nothing else; the CronJobs are what the issue asks for; no Secret or ConfigMap is created and
// no secret value can be in the output.
func TestManifestsContent(t *testing.T) {
	for _, s3 := range []bool{false, true} {
		o := deploy.Options{S3Snapshots: s3, Image: "registry.example.com/sailtui:1.2.3"}
		want, err := deploy.Objects(o)
		if err != nil {
			t.Fatal(err)
		}
		y, err := deploy.YAML(o)
		if err != nil {
			t.Fatal(err)
		}
		got := parseYAML(t, y)
		if len(got) != len(want) {
			t.Fatalf("%d documents, want %d", len(got), len(want))
		}
		for i := range want {
			// Decoding fills nothing in: the YAML is the objects, field for field.
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("document %d differs from the generated object:\n got %#v\nwant %#v", i, got[i], want[i])
			}
		}

		kinds := map[string]int{}
		for _, obj := range got {
			kind := reflect.TypeOf(obj).Elem().Name()
			kinds[kind]++
			switch x := obj.(type) {
			case *corev1.Namespace:
				if x.Name != kubernetes.SweeperNamespace || x.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
					t.Errorf("namespace %s labels %v", x.Name, x.Labels)
				}
			case *corev1.ServiceAccount:
				if x.Name != kubernetes.SweeperServiceAccount || x.Namespace != kubernetes.SweeperNamespace {
					t.Errorf("service account %s/%s", x.Namespace, x.Name)
				}
				if x.AutomountServiceAccountToken == nil || *x.AutomountServiceAccountToken {
					t.Errorf("the service account mounts its token by default")
				}
			case *rbacv1.ClusterRole:
				for _, r := range x.Rules {
					if slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*") || slices.Contains(r.Verbs, "*") {
						t.Errorf("%s grants %+v", x.Name, r)
					}
				}
				switch x.Name {
				case kubernetes.SweeperClusterRole:
					if !reflect.DeepEqual(x.Rules, kubernetes.SweeperClusterRules()) {
						t.Errorf("cluster role rules %v, want kubernetes.SweeperClusterRules()", x.Rules)
					}
				case kubernetes.SweeperProjectRole:
					if !reflect.DeepEqual(x.Rules, kubernetes.SweeperProjectRules(s3)) {
						t.Errorf("project role rules %v, want kubernetes.SweeperProjectRules(%v)", x.Rules, s3)
					}
				default:
					t.Errorf("unexpected cluster role %s", x.Name)
				}
			case *rbacv1.ClusterRoleBinding:
				// Only the cluster role is bound cluster-wide; the project role never is.
				if x.RoleRef.Name != kubernetes.SweeperClusterRole ||
					!reflect.DeepEqual(x.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: kubernetes.SweeperServiceAccount, Namespace: kubernetes.SweeperNamespace}}) {
					t.Errorf("cluster role binding %s: %+v %+v", x.Name, x.RoleRef, x.Subjects)
				}
			case *batchv1.CronJob:
			case *admissionv1.ValidatingAdmissionPolicy:
				if x.Name != deploy.SweeperPolicy || len(x.Spec.MatchConditions) != 1 ||
					!strings.Contains(x.Spec.MatchConditions[0].Expression, "system:serviceaccount:"+kubernetes.SweeperNamespace+":"+kubernetes.SweeperServiceAccount) {
					t.Errorf("admission policy %s matches %+v, want the sweeper's requests only", x.Name, x.Spec.MatchConditions)
				}
			case *admissionv1.ValidatingAdmissionPolicyBinding:
				if x.Spec.PolicyName != deploy.SweeperPolicy || !slices.Equal(x.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
					t.Errorf("admission policy binding %+v", x.Spec)
				}
			default:
				t.Errorf("unexpected object %T", obj)
			}
		}
		if want := map[string]int{"Namespace": 1, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1, "CronJob": 2,
			"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}; !reflect.DeepEqual(kinds, want) {
			t.Errorf("objects %v, want %v", kinds, want)
		}
		// pods/exec only in the project role, and only for the S3 sandwich.
		if got := bytes.Contains(y, []byte("pods/exec")); got != s3 {
			t.Errorf("pods/exec in the manifests: %v with S3Snapshots=%v", got, s3)
		}
		for _, forbidden := range []string{"- secrets", "kind: Secret", "kind: ConfigMap", "DATABASE_URL", "AWS_SECRET", "password"} {
			if bytes.Contains(y, []byte(forbidden)) {
				t.Errorf("the manifests mention %q", forbidden)
			}
		}

		cjs := cronJobs(got)
		checkCronJob(t, cjs["hibernate"], "hibernate", deploy.HibernateSchedule, "", deploy.HibernateActiveDeadline, o.Image)
		checkCronJob(t, cjs["purge"], "purge", deploy.PurgeSchedule, "Etc/UTC", deploy.PurgeActiveDeadline, o.Image)
	}
}

func checkCronJob(t *testing.T, cj *batchv1.CronJob, sweep, schedule, tz string, active time.Duration, image string) {
	t.Helper()
	if cj == nil {
		t.Fatalf("no %s CronJob", sweep)
	}
	s := cj.Spec
	if s.Schedule != schedule || s.ConcurrencyPolicy != batchv1.ForbidConcurrent || s.StartingDeadlineSeconds == nil ||
		s.SuccessfulJobsHistoryLimit == nil || s.FailedJobsHistoryLimit == nil {
		t.Errorf("%s: schedule %q, policy %s, starting deadline %v, history %v/%v", sweep, s.Schedule, s.ConcurrencyPolicy,
			s.StartingDeadlineSeconds, s.SuccessfulJobsHistoryLimit, s.FailedJobsHistoryLimit)
	}
	if (tz == "") != (s.TimeZone == nil) || (tz != "" && *s.TimeZone != tz) {
		t.Errorf("%s: time zone %v, want %q", sweep, s.TimeZone, tz)
	}
	j := s.JobTemplate.Spec
	if j.ActiveDeadlineSeconds == nil || *j.ActiveDeadlineSeconds != int64(active/time.Second) || j.BackoffLimit == nil || *j.BackoffLimit > 2 {
		t.Errorf("%s: active deadline %v, backoff %v", sweep, j.ActiveDeadlineSeconds, j.BackoffLimit)
	}
	p := j.Template.Spec
	if p.ServiceAccountName != kubernetes.SweeperServiceAccount || p.AutomountServiceAccountToken == nil || !*p.AutomountServiceAccountToken {
		t.Errorf("%s: service account %q, automount %v: the sweep needs its in-cluster config", sweep, p.ServiceAccountName, p.AutomountServiceAccountToken)
	}
	if p.TerminationGracePeriodSeconds == nil || *p.TerminationGracePeriodSeconds < 60 {
		t.Errorf("%s: termination grace %v: in-flight steps need time to reach a journaled point", sweep, p.TerminationGracePeriodSeconds)
	}
	if p.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restart policy %s", sweep, p.RestartPolicy)
	}
	if psc := p.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod security context %+v", sweep, psc)
	}
	if len(p.Containers) != 1 {
		t.Fatalf("%s: %d containers", sweep, len(p.Containers))
	}
	c := p.Containers[0]
	if c.Image != image {
		t.Errorf("%s: image %q, want %q", sweep, c.Image, image)
	}
	if !slices.Equal(c.Args[:2], []string{"--headless", "--sweep=" + sweep}) || !strings.HasPrefix(c.Args[2], "--deadline=") {
		t.Errorf("%s: args %q", sweep, c.Args)
	}
	sweepDeadline, err := time.ParseDuration(strings.TrimPrefix(c.Args[2], "--deadline="))
	if err != nil || sweepDeadline <= 0 || sweepDeadline >= active {
		t.Errorf("%s: the sweep stops claiming after %v (%v); want before the job's active deadline %v", sweep, sweepDeadline, err, active)
	}
	if !slices.Contains(c.Env, corev1.EnvVar{Name: "DEPLOYMENT_MODE", Value: "kubernetes"}) {
		t.Errorf("%s: env %v lacks DEPLOYMENT_MODE=kubernetes", sweep, c.Env)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Errorf("%s: env %s comes from %v; configuration comes from envFrom", sweep, e.Name, e.ValueFrom)
		}
	}
	if len(c.EnvFrom) != 2 || c.EnvFrom[0].ConfigMapRef == nil || c.EnvFrom[0].ConfigMapRef.Name != deploy.DefaultConfigMap ||
		c.EnvFrom[1].SecretRef == nil || c.EnvFrom[1].SecretRef.Name != deploy.DefaultSecret {
		t.Errorf("%s: envFrom %+v, want the ConfigMap %s and the Secret %s", sweep, c.EnvFrom, deploy.DefaultConfigMap, deploy.DefaultSecret)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s: %s request %v limit %v", sweep, r, req.String(), lim.String())
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: container security context %+v", sweep, sc)
	}
}

// The hibernation CronJob's deadlines fit its schedule: the sweep stops claiming inside the
// 2-minute slot, and a hung run is stopped before the global sweep lock it holds could expire.
func TestHibernateDeadlines(t *testing.T) {
	if deploy.HibernateSweepDeadline >= 2*time.Minute {
		t.Errorf("the sweep claims for %v, longer than its 2-minute schedule", deploy.HibernateSweepDeadline)
	}
	if deploy.HibernateActiveDeadline >= engine.DefaultSweepLockTTL || deploy.HibernateActiveDeadline <= deploy.HibernateSweepDeadline {
		t.Errorf("active deadline %v: want between the sweep's deadline %v and the lock TTL %v",
			deploy.HibernateActiveDeadline, deploy.HibernateSweepDeadline, engine.DefaultSweepLockTTL)
	}
	// The waits fit too (issue 20, item 10): a project claimed at the sweep's deadline has had
	// its snapshot wait run out before the job's deadline, with time left to stop and tear down.
	y, err := deploy.YAML(deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cj := cronJobs(parseYAML(t, y))["hibernate"]
	var ready time.Duration
	for _, e := range cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "K8S_SNAPSHOT_READY_TIMEOUT_SECONDS" {
			n, err := strconv.Atoi(e.Value)
			if err != nil {
				t.Fatalf("K8S_SNAPSHOT_READY_TIMEOUT_SECONDS=%q: %v", e.Value, err)
			}
			ready = time.Duration(n) * time.Second
		}
	}
	if ready <= 0 || deploy.HibernateSweepDeadline+ready+20*time.Second > deploy.HibernateActiveDeadline {
		t.Errorf("the hibernation CronJob waits %v for a snapshot (K8S_SNAPSHOT_READY_TIMEOUT_SECONDS in its env; 0: unset, the default 300 s): "+
			"with the sweep's deadline %v that is not 20 s inside its active deadline %v", ready, deploy.HibernateSweepDeadline, deploy.HibernateActiveDeadline)
	}
	if deploy.PurgeSweepDeadline >= deploy.PurgeActiveDeadline {
		t.Errorf("purge: sweep deadline %v past the job's %v", deploy.PurgeSweepDeadline, deploy.PurgeActiveDeadline)
	}
}

// With a TLS secret or a pull secret to copy, the manifests add a Role in its namespace that
// reads that one secret, by resourceNames (issue 20, item 14; issue 16).
func TestManifestsSecretSourceRoles(t *testing.T) {
	objs, err := deploy.Objects(deploy.Options{TLSSecret: "ingress-nginx/wildcard", PullSecret: "registry/regcred"})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]*rbacv1.Role{}
	for _, o := range objs {
		if r, ok := o.(*rbacv1.Role); ok {
			roles[r.Name] = r
		}
	}
	reads := func(name string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: []string{"get"}}}
	}
	if r := roles[deploy.TLSSourceRole]; len(roles) != 2 || r == nil || r.Namespace != "ingress-nginx" || !reflect.DeepEqual(r.Rules, reads("wildcard")) {
		t.Fatalf("TLS source role: %+v", roles)
	}
	if r := roles[deploy.PullSecretSourceRole]; r == nil || r.Namespace != "registry" || !reflect.DeepEqual(r.Rules, reads("regcred")) ||
		!strings.Contains(r.Annotations["sailtui.io/bound-by"], "K8S_COPY_PULL_SECRET_FROM=registry") {
		t.Fatalf("pull secret source role: %+v", roles)
	}
	for _, o := range []deploy.Options{{TLSSecret: "no-slash"}, {PullSecret: "no-slash"}, {PullSecret: "Bad NS/x"}} {
		if _, err := deploy.Objects(o); err == nil {
			t.Errorf("%+v: a secret without a valid namespace is accepted", o)
		}
	}
}

// Options are names the cluster will check anyway; bad ones are refused up front.
func TestOptionsValidated(t *testing.T) {
	for _, o := range []deploy.Options{
		{Namespace: "Bad_NS"}, {ConfigMap: "no spaces"}, {Secret: "UPPER"}, {Image: "two words"},
	} {
		if _, err := deploy.YAML(o); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("%+v: %v, want a bad-input error", o, err)
		}
	}
	y, err := deploy.YAML(deploy.Options{Namespace: "ops", ConfigMap: "cm", Secret: "sec"})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range parseYAML(t, y) {
		switch x := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			if x.Subjects[0].Namespace != "ops" {
				t.Errorf("binding subject %+v, want the service account in ops", x.Subjects[0])
			}
		case *batchv1.CronJob:
			ef := x.Spec.JobTemplate.Spec.Template.Spec.Containers[0].EnvFrom
			if x.Namespace != "ops" || ef[0].ConfigMapRef.Name != "cm" || ef[1].SecretRef.Name != "sec" {
				t.Errorf("cron job %s/%s envFrom %+v", x.Namespace, x.Name, ef)
			}
		}
	}
}

func TestProjectRoleBinding(t *testing.T) {
	rb := deploy.ProjectRoleBinding("proj-1", "ops", "sweeper")
	if rb.Name != kubernetes.SweeperRoleBinding || rb.Namespace != "proj-1" ||
		rb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: kubernetes.SweeperProjectRole}) ||
		!reflect.DeepEqual(rb.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sweeper", Namespace: "ops"}}) {
		t.Fatalf("%+v", rb)
	}
}
