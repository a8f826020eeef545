package deploy

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sailtui/sailtui/backends/kubernetes"
)

// SweeperPolicy names the ValidatingAdmissionPolicy (and its binding) that narrows the
// sweeper's cluster-wide destructive verbs to sailtui's own objects.
const SweeperPolicy = "sailtui-sweeper-own-objects"

// sweeperPolicy is what RBAC cannot say: namespaces cannot be granted by label or name
// pattern, so the sweeper's ClusterRole lets it delete any namespace (kube-system too) and
// patch or delete any VolumeSnapshotContent. The policy lets those requests of the sweeper's
// service account through only for objects that are sailtui's: a namespace labelled
// app.kubernetes.io/managed-by=sailtui; a content so labelled (the pre-provisioned ones of a
// restore) or cut for a VolumeSnapshot in a project namespace (prefix; the snapshot controller
// names those, without labels). Everyone else's requests are not matched, so it changes
// nothing for them. A dry run is admitted or refused as the real request would be.
func sweeperPolicy(o Options) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionv1.Fail
	sweeper := fmt.Sprintf("system:serviceaccount:%s:%s", o.Namespace, kubernetes.SweeperServiceAccount)
	const managed = `has(oldObject.metadata.labels) && '` + kubernetes.LabelManagedBy + `' in oldObject.metadata.labels && ` +
		`oldObject.metadata.labels['` + kubernetes.LabelManagedBy + `'] == '` + kubernetes.ManagedBy + `'`
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: SweeperPolicy, Labels: labels("sweeper")},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
				}},
				{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update, admissionv1.Delete},
					Rule: admissionv1.Rule{APIGroups: []string{"snapshot.storage.k8s.io"}, APIVersions: []string{"*"},
						Resources: []string{"volumesnapshotcontents"}},
				}},
			}},
			// Only the sweeper's own requests are judged.
			MatchConditions: []admissionv1.MatchCondition{{Name: "sweeper", Expression: fmt.Sprintf("request.userInfo.username == %q", sweeper)}},
			Validations: []admissionv1.Validation{
				{
					Expression: `request.resource.resource != 'namespaces' || (` + managed + `)`,
					Message:    "the sailtui sweeper deletes only namespaces labelled " + kubernetes.LabelManagedBy + "=" + kubernetes.ManagedBy,
					Reason:     ptr(metav1.StatusReasonForbidden),
				},
				{
					Expression: `request.resource.resource != 'volumesnapshotcontents' || (` + managed + `) || ` +
						fmt.Sprintf(`(has(oldObject.spec.volumeSnapshotRef.namespace) && oldObject.spec.volumeSnapshotRef.namespace.startsWith(%q))`, o.NamespacePrefix),
					Message: fmt.Sprintf("the sailtui sweeper changes only VolumeSnapshotContents labelled %s=%s or of a VolumeSnapshot in a project namespace (%s*)",
						kubernetes.LabelManagedBy, kubernetes.ManagedBy, o.NamespacePrefix),
					Reason: ptr(metav1.StatusReasonForbidden),
				},
			},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: SweeperPolicy, Labels: labels("sweeper")},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: SweeperPolicy,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	return policy, binding
}
