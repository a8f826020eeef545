package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sailtui/sailtui/engine"
)

// EnsureProject creates what the project needs to exist, leaving what is there: namespace,
// NetworkPolicy, the sweeper's RoleBinding, PVC and file manager. A namespace still being
// deleted (a hibernation's teardown) is waited out first; one sailtui did not make is refused.
func (r *Runtime) EnsureProject(ctx context.Context, p engine.Project) error {
	ns := r.Namespace(p)
	if err := r.ensureNamespace(ctx, p); err != nil {
		return fmt.Errorf("ensure project %s: %w", p.Slug, err)
	}
	if _, err := apply(ctx, r.kube.NetworkingV1().NetworkPolicies(ns), r.networkPolicyObject(p)); err != nil {
		return fmt.Errorf("ensure project %s: network policy: %w", p.Slug, err)
	}
	if r.cfg.Sweeper != "" {
		if _, err := apply(ctx, r.kube.RbacV1().RoleBindings(ns), r.sweeperBindingObject(p)); err != nil {
			return fmt.Errorf("ensure project %s: sweeper role binding: %w", p.Slug, err)
		}
	}
	for _, warning := range []string{r.ensureTLSSecret(ctx, p), r.ensurePullSecret(ctx, p), r.routeProblem(ctx)} {
		if report := engine.ProgressFrom(ctx); warning != "" && report != nil {
			report(engine.Progress{Phase: "warning: " + warning})
		}
	}
	if p.Status == engine.StatusRestoring {
		// The restore that follows creates the PVC from its snapshot (a PVC's source cannot
		// change later) and the file manager with it.
		return nil
	}
	if err := r.createPVC(ctx, p, ""); err != nil {
		return fmt.Errorf("ensure project %s: %w", p.Slug, err)
	}
	if err := r.ensureFileManager(ctx, p); err != nil {
		return fmt.Errorf("ensure project %s: %w", p.Slug, err)
	}
	return nil
}

// ensureNamespace creates p's namespace, or checks the one there is ours and not going away
// (waiting it out when it is).
func (r *Runtime) ensureNamespace(ctx context.Context, p engine.Project) error {
	want := r.namespaceObject(p)
	for range 2 {
		_, err := r.kube.CoreV1().Namespaces().Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", want.Name, err)
		}
		cur, err := r.kube.CoreV1().Namespaces().Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // deleted between the two calls
		}
		if err != nil {
			return fmt.Errorf("read namespace %s: %w", want.Name, err)
		}
		if !managed(cur) || cur.Labels[LabelProjectID] != want.Labels[LabelProjectID] {
			return fmt.Errorf("namespace %s exists and is not this project's (labels %v): remove or rename it: %w", want.Name, cur.Labels, engine.ErrConflict)
		}
		if cur.DeletionTimestamp == nil {
			_, err := apply(ctx, r.kube.CoreV1().Namespaces(), want)
			return err
		}
		if err := r.waitNamespaceGone(ctx, want.Name); err != nil {
			return err
		}
	}
	return fmt.Errorf("namespace %s keeps coming back while being created", want.Name)
}

// createPVC creates the project's PVC (from the VolumeSnapshot named from, when set) unless
// one exists: a PVC's source cannot change, so an existing one is never touched here.
func (r *Runtime) createPVC(ctx context.Context, p engine.Project, from string) error {
	_, err := r.kube.CoreV1().PersistentVolumeClaims(r.Namespace(p)).Create(ctx, r.pvcObject(p, from), metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pvc %s: %w", PVCName, err)
	}
	return nil
}

// waitNamespaceGone waits, up to DeleteTimeout, for the project's earlier namespace to finish
// terminating (a wake right after a hibernation meets it), reporting that it waits and, when the
// bound runs out, what holds the namespace.
func (r *Runtime) waitNamespaceGone(ctx context.Context, ns string) error {
	if report := engine.ProgressFrom(ctx); report != nil {
		report(engine.Progress{Phase: "waiting for the earlier namespace " + ns + " to finish terminating"})
	}
	err := waitFor(ctx, r.kube.CoreV1().RESTClient(), "namespaces", "", ns, &corev1.Namespace{}, r.cfg.DeleteTimeout, gone)
	if err != nil && ctx.Err() == nil {
		if cur, gerr := r.kube.CoreV1().Namespaces().Get(context.WithoutCancel(ctx), ns, metav1.GetOptions{}); gerr == nil {
			return fmt.Errorf("%w; namespace %s is held by %s (see `kubectl get namespace %s -o yaml`)", err, ns, namespaceBlockers(cur), ns)
		}
	}
	return err
}

// StartContainer applies the container's Service, Ingress and Deployment (replicas 1). It does
// not wait for the pod: ContainerStatus says when it is ready.
func (r *Runtime) StartContainer(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec) (engine.ContainerStatus, error) {
	if c.IsService() {
		return r.startService(ctx, p, c, spec)
	}
	if strings.TrimSpace(spec.Command) == "" {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: empty command: %w", c.Name, engine.ErrBadInput)
	}
	dev, err := r.devObject(p, c, spec, 1)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: %w", c.Name, err)
	}
	ns := r.Namespace(p)
	if _, err := apply(ctx, r.kube.CoreV1().Services(ns), r.serviceObject(p, c, spec)); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: service: %w", c.Name, err)
	}
	if err := r.applyHostAlias(ctx, p, c, spec); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: %w", c.Name, err)
	}
	if _, err := apply(ctx, r.kube.NetworkingV1().Ingresses(ns), r.ingressObject(p, c, spec)); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: ingress: %w", c.Name, err)
	}
	d, err := apply(ctx, r.kube.AppsV1().Deployments(ns), dev)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("start %s: deployment: %w", c.Name, err)
	}
	return r.statusOf(ctx, p, c, d), nil
}

// StopContainer scales the container's Deployment to zero and waits for its pod to go; its
// Service and Ingress stay, so a start is one request.
func (r *Runtime) StopContainer(ctx context.Context, p engine.Project, c engine.Container) error {
	r.keepLogs(ctx, p, c, engine.LogMarkStopped)
	if err := r.scaleDown(ctx, r.Namespace(p), deploymentName(c)); err != nil {
		return fmt.Errorf("stop %s: %w", c.Name, err)
	}
	return nil
}

func (r *Runtime) scaleDown(ctx context.Context, ns, name string) error {
	deps := r.kube.AppsV1().Deployments(ns)
	d, err := deps.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("scale deployment %s to 0: %w", name, err)
	}
	// Wait until no pod of the Deployment is left.
	err = waitFrom(ctx, r.kube.AppsV1().RESTClient(), "deployments", d, r.cfg.DeleteTimeout,
		func(obj runtime.Object) (bool, error) {
			if obj == nil {
				return true, nil
			}
			d := obj.(*appsv1.Deployment)
			return d.Status.ObservedGeneration >= d.Generation && d.Status.Replicas == 0, nil
		})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%w (pods left: %s)", err, r.podsLeft(context.WithoutCancel(ctx), d))
	}
	return err
}

// podsLeft names the Deployment's pods that are still there, with what holds each.
func (r *Runtime) podsLeft(ctx context.Context, d *appsv1.Deployment) string {
	pods, err := r.kube.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(d.Spec.Selector.MatchLabels).String()})
	if err != nil {
		return err.Error()
	}
	var left []string
	for _, p := range pods.Items {
		s := p.Name + " " + string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			s += ", terminating since " + p.DeletionTimestamp.UTC().Format(time.RFC3339)
		}
		if len(p.Finalizers) > 0 {
			s += ", finalizers " + strings.Join(p.Finalizers, ", ")
		}
		left = append(left, s)
	}
	if len(left) == 0 {
		return "none visible"
	}
	return strings.Join(left, "; ")
}

// StopProject scales every dev Deployment of the project to zero and waits for their pods to
// go, so a snapshot taken next sees files nobody writes. The file manager stays.
func (r *Runtime) StopProject(ctx context.Context, p engine.Project, cs []engine.Container) error {
	ns := r.Namespace(p)
	list, err := r.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{LabelComponent: ComponentDev}.String()})
	if err != nil {
		if r.namespaceGone(ctx, ns, err) {
			return nil
		}
		return fmt.Errorf("stop project %s: list deployments: %w", p.Slug, err)
	}
	var errs []error
	for _, d := range list.Items {
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && d.Status.Replicas == 0 {
			continue
		}
		if c, ok := containerOf(cs, d.Name); ok {
			r.keepLogs(ctx, p, c, engine.LogMarkStopped)
		}
		if err := r.scaleDown(ctx, ns, d.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop project %s: %w", p.Slug, err)
	}
	return nil
}

// containerOf is the container of cs whose Deployment is named name.
func containerOf(cs []engine.Container, name string) (engine.Container, bool) {
	for _, c := range cs {
		if deploymentName(c) == name {
			return c, true
		}
	}
	return engine.Container{}, false
}

// namespaceGone reports whether err, from a request into ns, came because ns does not exist:
// a NotFound, or a Forbidden when the caller's rights in ns came from a RoleBinding that went
// with it (the sweeper's).
func (r *Runtime) namespaceGone(ctx context.Context, ns string, err error) bool {
	if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return false
	}
	_, gerr := r.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	return apierrors.IsNotFound(gerr)
}

// ContainerStatus reads the container's Deployment: replicas 0 is stopped, an available pod is
// running, anything else is starting (with the reason a pod waits, when it can be read).
func (r *Runtime) ContainerStatus(ctx context.Context, p engine.Project, c engine.Container) (engine.ContainerStatus, error) {
	d, err := r.kube.AppsV1().Deployments(r.Namespace(p)).Get(ctx, deploymentName(c), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err != nil && r.namespaceGone(ctx, r.Namespace(p), err)) {
		return r.finishStatus(p, c, engine.ContainerStatus{Name: c.Name, State: engine.ContainerStopped}), nil
	}
	if err != nil {
		return engine.ContainerStatus{Name: c.Name, State: engine.ContainerUnknown}, fmt.Errorf("status of %s: %w", c.Name, err)
	}
	return r.finishStatus(p, c, r.statusOf(ctx, p, c, d)), nil
}

func (r *Runtime) statusOf(ctx context.Context, p engine.Project, c engine.Container, d *appsv1.Deployment) engine.ContainerStatus {
	st := engine.ContainerStatus{Name: c.Name, URL: r.URL(p, c)}
	switch {
	case d.Spec.Replicas != nil && *d.Spec.Replicas == 0:
		st.State, st.URL = engine.ContainerStopped, ""
		if d.Status.Replicas > 0 {
			st.Detail = "stopping"
		}
	case d.Status.AvailableReplicas > 0 && d.Status.ObservedGeneration >= d.Generation:
		st.State = engine.ContainerRunning
		if st.URL != "" {
			st.RouteProblem = r.routeProblem(ctx)
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable {
				st.StartedAt = cond.LastTransitionTime.UTC()
			}
		}
	default:
		// One list serves the three questions; a caller without the right to list pods gets
		// the Deployment's own message.
		pods := r.deploymentPods(ctx, d)
		if code, detail, ok := exitedPod(pods); ok {
			st.State, st.ExitCode, st.Detail, st.URL = engine.ContainerExited, code, detail, ""
			break
		}
		st.State = engine.ContainerStarting
		st.Detail = podDetail(d, pods)
		if why := blockedPod(pods); why != "" {
			st.Blocked, st.Detail = true, why
		}
	}
	return st
}

// deploymentPods lists d's pods, nil when they cannot be read.
func (r *Runtime) deploymentPods(ctx context.Context, d *appsv1.Deployment) []corev1.Pod {
	pods, err := r.kube.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(d.Spec.Selector.MatchLabels).String()})
	if err != nil {
		return nil
	}
	return pods.Items
}

// blockedPod says why one of the pods will not run without someone changing something (its image
// cannot be pulled or used: see crashed), "" when nothing blocks it.
func blockedPod(pods []corev1.Pod) string {
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			if why := crashed(&pods[i]); why != "" {
				return why + " (the cluster keeps trying)"
			}
		}
	}
	return ""
}

// exitedPod reports a dev pod whose command has exited: its container terminated, or waits
// to be restarted after terminating (the Deployment's pods always restart, so "exited" is
// what the last run did, and the detail says the kubelet is restarting it).
func exitedPod(pods []corev1.Pod) (code int, detail string, ok bool) {
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Running != nil {
				continue
			}
			if t := cs.State.Terminated; t != nil {
				return int(t.ExitCode), strings.TrimSpace("exited: " + t.Reason), true
			}
			if t := cs.LastTerminationState.Terminated; t != nil && cs.RestartCount > 0 {
				detail := fmt.Sprintf("exited %d times", cs.RestartCount)
				if w := cs.State.Waiting; w != nil && w.Reason != "" {
					detail += "; " + w.Reason
				}
				return int(t.ExitCode), detail, true
			}
		}
	}
	return 0, "", false
}

// podDetail says why a dev pod is not ready yet (image pull, crash loop, unschedulable), best
// effort: a caller without the right to list pods gets the Deployment's own message.
func podDetail(d *appsv1.Deployment, pods []corev1.Pod) string {
	for _, cond := range d.Status.Conditions {
		if cond.Type == appsv1.DeploymentProgressing && cond.Status == corev1.ConditionFalse {
			return cond.Message
		}
	}
	for _, pod := range pods {
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				return strings.TrimSpace(w.Reason + ": " + w.Message)
			}
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				return strings.TrimSpace(cond.Reason + ": " + cond.Message)
			}
		}
		if pod.Status.Phase == corev1.PodPending {
			return "pod pending"
		}
	}
	return ""
}

// DestroyProject deletes the project's namespace, with everything in it, and returns once the
// deletion is underway: the dev Deployments are deleted first (so no pod of the project keeps
// running while the namespace goes) and the namespace is marked for deletion. The engine calls
// it only after every snapshot it keeps has its content set to Retain (WaitReady), so the
// deletion takes no snapshot data with it, and a project whose namespace is still terminating
// is safe in its snapshot: the next EnsureProject waits the namespace out (saying so), and the
// doctor names what holds one that never goes.
func (r *Runtime) DestroyProject(ctx context.Context, p engine.Project, cs []engine.Container) error {
	ns := r.Namespace(p)
	cur, err := r.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("destroy %s: read namespace %s: %w", p.Slug, ns, err)
	}
	if !managed(cur) || cur.Labels[LabelProjectID] != labelValue(p.ID) {
		return fmt.Errorf("destroy %s: namespace %s is not this project's; not deleting it: %w", p.Slug, ns, engine.ErrConflict)
	}
	if cur.DeletionTimestamp != nil {
		return nil
	}
	// The engine stopped the containers first (their logs are kept); this keeps the log of
	// one that a failed stop left running.
	for _, c := range cs {
		r.keepLogs(ctx, p, c, engine.LogMarkStopped)
	}
	background := metav1.DeletePropagationBackground
	if err := r.kube.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("destroy %s: delete deployments in %s: %w", p.Slug, ns, err)
	}
	// What still runs is the idle file manager (the engine stopped the containers and holds
	// the project: nothing is in flight) or pods whose writes are past the snapshot. Their grace
	// period would hold the namespace controller that long (it waits a pod's grace period before
	// it looks again), and so the next wake of the project.
	grace := int64(1)
	// A sweeper bound by older manifests may not: the namespace then only goes slower.
	if err := r.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("destroy %s: delete pods in %s: %w", p.Slug, ns, err)
	}
	uid := cur.UID
	err = r.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("destroy %s: delete namespace %s: %w", p.Slug, ns, err)
	}
	return nil
}

// ProjectExists reports whether the project's PVC is there and not being deleted.
func (r *Runtime) ProjectExists(ctx context.Context, p engine.Project) (bool, error) {
	ns := r.Namespace(p)
	pvc, err := r.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, PVCName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || r.namespaceGone(ctx, ns, err) {
			return false, nil
		}
		return false, fmt.Errorf("read pvc %s/%s: %w", ns, PVCName, err)
	}
	if pvc.DeletionTimestamp != nil {
		return false, nil
	}
	// The namespace controller marks the PVC some time after the namespace.
	nsObj, err := r.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read namespace %s: %w", ns, err)
	}
	return nsObj.DeletionTimestamp == nil, nil
}

// Describe lists the project's objects as the API server has them.
func (r *Runtime) Describe(ctx context.Context, p engine.Project, cs []engine.Container) (string, error) {
	ns := r.Namespace(p)
	var b strings.Builder
	if r.keepsLogs() {
		fmt.Fprintf(&b, "logs: kept across stops and hibernation in %s under %s\n", r.cfg.Logs.Describe(), r.logProjectDir(p))
	} else {
		b.WriteString("logs: each pod's own, gone with it (set S3_BUCKET_NAME to keep them across stops and hibernation)\n")
	}
	nsObj, err := r.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(&b, "namespace %s: absent (hibernated or not created)\n", ns)
		return b.String(), nil
	}
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	fmt.Fprintf(&b, "namespace %s: %s\n", ns, nsObj.Status.Phase)
	if r.cfg.TLSSecret != "" {
		if warning := r.tlsSecretWarning(ctx, ns); warning != "" {
			fmt.Fprintf(&b, "warning: %s\n", warning)
		}
	}
	if warning := r.pullSecretWarning(ctx, ns); warning != "" {
		fmt.Fprintf(&b, "warning: %s\n", warning)
	}
	if pvc, err := r.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, PVCName, metav1.GetOptions{}); err == nil {
		src := ""
		if pvc.Spec.DataSource != nil {
			src = ", from " + pvc.Spec.DataSource.Kind + " " + pvc.Spec.DataSource.Name
		}
		req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		fmt.Fprintf(&b, "pvc %s: %s, %s%s\n", PVCName, pvc.Status.Phase, req.String(), src)
	}
	deps, err := r.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		slices.SortFunc(deps.Items, func(a, b appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })
		for _, d := range deps.Items {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			fmt.Fprintf(&b, "deployment %s: %d/%d ready\n", d.Name, d.Status.ReadyReplicas, want)
		}
	}
	r.describeServices(ctx, &b, p, cs)
	for _, c := range cs {
		if c.IsService() {
			continue // described above
		}
		fmt.Fprintf(&b, "container %s: %s\n", c.Name, r.URL(p, c))
		// Why a pod is stuck (an image that cannot be pulled, a crash loop, unschedulable).
		if st, err := r.ContainerStatus(ctx, p, c); err == nil && st.State != engine.ContainerRunning && st.Detail != "" {
			fmt.Fprintf(&b, "  %s: %s\n", st.State, st.Detail)
		}
	}
	return b.String(), nil
}
