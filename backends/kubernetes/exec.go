package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/sailtui/sailtui/backends/kubernetes/kubeclient"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/capped"
	"github.com/sailtui/sailtui/engine/containerexec"
)

// executor runs argv in a container of a pod and returns its exit status. The real one is an
// exec through the API server; tests give their own.
type executor interface {
	run(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (exitCode int, err error)
}

// podExecutor is `kubectl exec`: WebSocket first (what API servers from 1.30 speak), SPDY when
// the server refuses the upgrade.
type podExecutor struct {
	config *rest.Config
	client *kubeclient.Clientset
}

func (x *podExecutor) run(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return x.stream(ctx, ns, pod, container, argv, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// stream runs argv with opts' streams (and terminal, with Tty) and returns its exit status.
func (x *podExecutor) stream(ctx context.Context, ns, pod, container string, argv []string, opts remotecommand.StreamOptions) (int, error) {
	u := execURL(x.client.CoreV1().RESTClient(), ns, pod, container, argv, opts.Stdin != nil, opts.Tty)
	ws, err := remotecommand.NewWebSocketExecutor(x.config, "GET", u.String())
	if err != nil {
		return -1, fmt.Errorf("exec %s/%s: %w", ns, pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(x.config, "POST", u)
	if err != nil {
		return -1, fmt.Errorf("exec %s/%s: %w", ns, pod, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return -1, fmt.Errorf("exec %s/%s: %w", ns, pod, err)
	}
	err = ex.StreamWithContext(ctx, opts)
	var exit utilexec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		return exit.ExitStatus(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("exec %s/%s: %w", ns, pod, err)
	}
	return 0, nil
}

// execURL is the pods/exec request: argv travels as repeated command parameters, one per
// element, never joined into a shell string. A terminal has one output stream (stderr goes
// to it too), as kubectl exec -t asks.
func execURL(client rest.Interface, ns, pod, container string, argv []string, stdin, tty bool) *url.URL {
	return client.Post().Namespace(ns).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: argv, Stdin: stdin, Stdout: true, Stderr: !tty, TTY: tty,
		}, kubeclient.ParameterCodec).URL()
}

// podWait bounds how long an operation waits for a pod its Deployment is bringing up (an image
// to unpack, a volume to mount): on a real node the file manager's pod runs a few seconds after
// the project is ensured.
const podWait = 2 * time.Minute

// runningPod finds a running pod of the Deployment named by selector in ns. While the
// Deployment wants a pod and none runs yet, it waits up to podWait, saying what it waits for.
func (r *Runtime) runningPod(ctx context.Context, ns string, selector map[string]string, what string) (string, error) {
	ctx, stopWaiting := engine.WaitContext(ctx) // a stopping sweep cuts the wait short
	defer stopWaiting()
	deadline := time.Now().Add(podWait)
	var waiting string
	for {
		pod, detail, err := r.findRunningPod(ctx, ns, selector, what)
		if pod != "" || err != nil {
			return pod, err
		}
		if detail == "" || time.Now().After(deadline) {
			if detail != "" {
				return "", fmt.Errorf("%s has no running pod in %s after %v (%s): %w", what, ns, podWait, detail, engine.ErrBadState)
			}
			return "", fmt.Errorf("%s has no running pod in %s; start it first: %w", what, ns, engine.ErrBadState)
		}
		if detail != waiting {
			waiting = detail
			if report := engine.ProgressFrom(ctx); report != nil {
				report(engine.Progress{Phase: "waiting for the " + what + " pod: " + detail})
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s: waiting for its pod (%s): %w", what, detail, context.Cause(ctx))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// findRunningPod returns the newest running pod of selector, or, when there is none, what the
// pod the Deployment is bringing up is doing ("" when nothing is coming).
func (r *Runtime) findRunningPod(ctx context.Context, ns string, selector map[string]string, what string) (pod, coming string, err error) {
	pods, err := r.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(selector).String()})
	if err != nil {
		if r.namespaceGone(ctx, ns, err) {
			return "", "", fmt.Errorf("%s: the project's namespace %s is gone (hibernated?): %w", what, ns, engine.ErrBadState)
		}
		return "", "", fmt.Errorf("%s: list pods: %w", what, err)
	}
	// Newest first: after a restart the old pod may still be terminating.
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && containersRunning(&p) {
			return p.Name, "", nil
		}
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning) {
			if why := crashed(&p); why != "" {
				// Waiting out a crash loop or a failed pull would only delay the answer.
				return "", "", fmt.Errorf("%s is not running in %s (%s): %w", what, ns, why, engine.ErrBadState)
			}
			return "", pendingDetail(&p), nil
		}
	}
	// No pod yet: one is coming when the Deployment wants one. The pods of a stop just before
	// (a restore's, say) may still be terminating: they are not the pod that comes.
	live := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live++
		}
	}
	deps, err := r.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(selector).String()})
	if err != nil || len(deps.Items) == 0 {
		return "", "", nil
	}
	for _, d := range deps.Items {
		if d.DeletionTimestamp == nil && (d.Spec.Replicas == nil || *d.Spec.Replicas > 0) && live == 0 {
			return "", "pod not created yet", nil
		}
	}
	return "", "", nil
}

// containersRunning: every container of the pod has started and not terminated (a pod in
// phase Running may hold a container in a crash loop).
func containersRunning(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// crashed says why a container of the pod will not run without someone changing something:
// it has exited and waits to be restarted, or its image cannot be pulled or used ("" when
// neither: it is still coming).
func crashed(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			continue
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError":
				return strings.TrimSpace(w.Reason + ": " + w.Message)
			}
		}
		if t := cs.LastTerminationState.Terminated; t != nil && cs.RestartCount > 0 {
			return fmt.Sprintf("exited %d times, last with code %d", cs.RestartCount, t.ExitCode)
		}
	}
	return ""
}

// pendingDetail says what a pod not running yet waits for: its scheduling or a container's
// reason (a crash loop among them: the wait then runs out and says so).
func pendingDetail(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return strings.TrimSpace(w.Reason + " " + w.Message)
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			return strings.TrimSpace("unschedulable: " + cond.Message)
		}
	}
	return strings.ToLower(string(p.Status.Phase))
}

// Exec runs req.Argv in the container's dev pod, in its directory joined with req.Dir, with
// req.Env on top of the pod's. A timeout kills the command and what it started (found by a
// marker variable), giving exit 124 and TimedOut.
func (r *Runtime) Exec(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest) (engine.ExecResult, error) {
	res, err := r.execIn(ctx, p, c, req)
	if err != nil {
		return res, fmt.Errorf("exec in %s/%s: %w", p.Slug, c.Name, err)
	}
	return res, nil
}

func (r *Runtime) execIn(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest) (engine.ExecResult, error) {
	out := capped.NewOutput(req.MaxOutput)
	var stdin io.Reader
	if req.Stdin != nil {
		stdin = bytes.NewReader(req.Stdin)
	}
	code, timedOut, err := r.runInDev(ctx, p, c, req, func(ctx context.Context, ns, pod string, argv []string) (int, error) {
		return r.exec.run(ctx, ns, pod, "dev", argv, stdin, out.Stdout, out.Stderr)
	})
	return out.Result(code, timedOut), err
}

// runInDev runs req in c's dev pod through run, and kills what it started when req.Timeout or
// ctx cuts the stream (the command may live on in the pod): exit code 124 and timedOut for a
// timeout, ctx's error when ctx ended.
func (r *Runtime) runInDev(ctx context.Context, p engine.Project, c engine.Container, req engine.ExecRequest,
	run func(ctx context.Context, ns, pod string, argv []string) (int, error)) (code int, timedOut bool, err error) {
	if err := req.Validate(); err != nil {
		return -1, false, err
	}
	mount := r.cfg.MountPath
	if c.IsService() {
		mount = dataPath(c) // a service pod has its volume, not the project's files
	}
	argv, marker, err := execArgv(mount, c, req)
	if err != nil {
		return -1, false, err
	}
	ns := r.Namespace(p)
	l := containerLabels(p, c)
	pod, err := r.runningPod(ctx, ns, map[string]string{LabelProjectID: l[LabelProjectID], LabelComponent: ComponentDev, LabelContainerID: l[LabelContainerID]}, "container "+c.Name)
	if err != nil {
		return -1, false, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if req.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	code, err = run(runCtx, ns, pod, argv)
	if err == nil {
		return code, false, nil
	}
	if runCtx.Err() == nil {
		return -1, false, err
	}
	// The stream was cut by the timeout or the caller: the command may live on in the pod.
	kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer kcancel()
	// Two buffers: the streams are copied by goroutines of their own.
	var kout, kerrOut bytes.Buffer
	kcode, kerr := r.exec.run(kctx, ns, pod, "dev", []string{"sh", "-c", containerexec.KillScript, "sh", marker}, nil, &kout, &kerrOut)
	if kerr == nil && kcode != 0 {
		kerr = fmt.Errorf("kill exited %d: %s", kcode, strings.TrimSpace(kout.String()+kerrOut.String()))
	}
	if ctx.Err() != nil {
		return -1, false, ctx.Err()
	}
	if kerr != nil {
		return engine.ExitTimedOut, true, fmt.Errorf("timed out, and the command could not be killed: %w", kerr)
	}
	return engine.ExitTimedOut, true, nil
}

// execArgv wraps req for execScript and returns the marker it carries.
func execArgv(mount string, c engine.Container, req engine.ExecRequest) ([]string, string, error) {
	cdir, err := engine.CleanRel(c.Directory)
	if err != nil {
		return nil, "", fmt.Errorf("container directory: %w", err)
	}
	sub, err := engine.CleanRel(req.Dir)
	if err != nil {
		return nil, "", fmt.Errorf("working directory: %w", err)
	}
	marker := containerexec.NewMarker()
	vars := []string{marker}
	for _, k := range slices.Sorted(maps.Keys(req.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, "", fmt.Errorf("environment variable name %q: %w", k, engine.ErrBadInput)
		}
		vars = append(vars, k+"="+req.Env[k])
	}
	argv := []string{"sh", "-c", execScript, "sh", path.Join(mount, cdir, sub), strconv.Itoa(len(vars))}
	argv = append(argv, vars...)
	return append(argv, req.Argv...), marker, nil
}

// cloneScript clones the URL read from stdin into $1 when that directory is empty. The URL
// (which may hold a credential) is never an argument, so it shows in no process list, pod spec
// or audit log of the exec request.
const cloneScript = `IFS= read -r url || exit 2
dir="$1"; branch="$2"
if [ -d "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then exit 0; fi
mkdir -p "$dir" || exit 1
if [ -n "$branch" ]; then
  exec git clone --quiet --depth 1 --branch "$branch" -- "$url" "$dir"
fi
exec git clone --quiet --depth 1 -- "$url" "$dir"`

// CloneInto implements engine.GitCloner in the file-manager pod.
func (r *Runtime) CloneInto(ctx context.Context, p engine.Project, dir, gitURL, branch string) error {
	clean, err := engine.CleanRel(dir)
	if err != nil {
		return err
	}
	if strings.HasPrefix(branch, "-") {
		return fmt.Errorf("branch %q: %w", branch, engine.ErrBadInput)
	}
	pod, err := r.fileManagerPod(ctx, p)
	if err != nil {
		return fmt.Errorf("clone into %s: %w", clean, err)
	}
	var stderr capped.Buffer
	stderr.Max = 8192
	code, err := r.exec.run(ctx, r.Namespace(p), pod, "file-manager",
		[]string{"sh", "-c", cloneScript, "sh", path.Join(r.cfg.MountPath, clean), branch},
		strings.NewReader(gitURL+"\n"), io.Discard, &stderr)
	if err != nil {
		return fmt.Errorf("clone into %s: %w", clean, err)
	}
	if code != 0 {
		return fmt.Errorf("clone into %s: git exited %d: %s", clean, code, strings.ReplaceAll(strings.TrimSpace(stderr.String()), gitURL, engine.RedactURL(gitURL)))
	}
	return nil
}
