package kubernetes

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/engine"
)

// The identity the headless sweeps run as, and the two roles that hold its permissions. The
// sweeps get nothing cluster-wide that a namespaced grant can cover: what they do inside a
// project (stop its Deployments, snapshot its PVC) is granted by SweeperProjectRole, bound in
// each project namespace by a RoleBinding the runtime creates with the namespace and that goes
// away with it. Only what has no namespace (namespaces themselves, VolumeSnapshotContents) is in
// SweeperClusterRole.
const (
	SweeperServiceAccount = "sailtui-sweeper"
	SweeperNamespace      = "sailtui-system"
	SweeperClusterRole    = "sailtui-sweeper"
	SweeperProjectRole    = "sailtui-sweeper-project"
	// SweeperRoleBinding is the RoleBinding's name in every project namespace.
	SweeperRoleBinding = "sailtui-sweeper"
)

const snapshotGroup = "snapshot.storage.k8s.io"

// SweeperClusterRules are the sweeps' cluster-wide permissions: a hibernation deletes the
// project's namespace once its snapshot is ready (and watches it go), keeps the snapshot's
// content past that deletion (patch deletionPolicy to Retain), and the purge deletes contents
// of expired snapshots. Namespaces cannot be granted by name pattern, so delete is cluster-wide;
// the runtime only ever deletes namespaces it labelled as its own.
func SweeperClusterRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "delete"}},
		{APIGroups: []string{snapshotGroup}, Resources: []string{"volumesnapshotcontents"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
		// Read only, for the check before a hibernation stops anything (Preflight): the
		// snapshot class exists and is of the driver of the PVC's volume.
		{APIGroups: []string{snapshotGroup}, Resources: []string{"volumesnapshotclasses"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get"}},
	}
}

// SweeperProjectRules are the sweeps' permissions inside one project namespace: read and scale
// the dev Deployments (the stop tier and the stop before a snapshot, and the restart after an
// aborted hibernation), read their pods and logs, read the PVC, and make, watch and delete its VolumeSnapshots. With s3Snapshots (no CSI snapshot class) the archive is
// streamed out of the file-manager pod, which needs pods/exec — granted here, never cluster-wide.
func SweeperProjectRules(s3Snapshots bool) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		// Tearing a project down deletes its Deployments before its namespace (DestroyProject).
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "patch", "deletecollection"}},
		// A hibernation that cannot finish starts the containers it stopped again, which
		// applies (server-side apply is a patch) their Service and Ingress too.
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "delete"}},
		// The teardown's pods go with a short grace period, so the namespace goes fast; before
		// they go, what they wrote is kept in the bucket when there is one (logs.go).
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "deletecollection"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{snapshotGroup}, Resources: []string{"volumesnapshots"}, Verbs: []string{"get", "list", "watch", "create", "delete", "deletecollection"}},
	}
	if s3Snapshots {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}})
	}
	return rules
}

// SweeperRoleBindingFor is the RoleBinding that gives the service account saNamespace/saName
// the SweeperProjectRole inside namespace, as the runtime creates it with every project
// namespace.
func SweeperRoleBindingFor(namespace, saNamespace, saName string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: SweeperRoleBinding, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: SweeperProjectRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: saNamespace, Name: saName}},
	}
}

// SweepOptions is the kubernetes mode's sweep policy, fitted to the sweeper's role: its rules
// (SweeperClusterRules, SweeperProjectRules) cannot create namespaces or PVCs, and finishing an
// interrupted wake or restore needs both. A sweep leaves those to the next wake, which any
// operator's console or CLI runs with its own rights, instead of failing on them every run.
// The policy is the same for every Config; it is a method so that the wiring finds it with the
// rest of the kubernetes settings.
func (Config) SweepOptions(o engine.SweepOptions) engine.SweepOptions {
	o.LeaveInterrupted = append(slices.Clip(o.LeaveInterrupted), engine.OpWake, engine.OpRestore)
	return o
}

// splitSweeper splits "namespace/name".
func splitSweeper(s string) (namespace, name string) {
	namespace, name, _ = strings.Cut(s, "/")
	return namespace, name
}
