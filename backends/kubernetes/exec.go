package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/httpstream"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

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
	client clientset.Interface
}

func (x *podExecutor) run(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	u := execURL(x.client.CoreV1().RESTClient(), ns, pod, container, argv, stdin != nil)
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
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
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
// element, never joined into a shell string.
func execURL(client rest.Interface, ns, pod, container string, argv []string, stdin bool) *url.URL {
	return client.Post().Namespace(ns).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: argv, Stdin: stdin, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec).URL()
}

// runningPod finds a running, ready pod of the Deployment named by selector in ns.
func (r *Runtime) runningPod(ctx context.Context, ns string, selector map[string]string, what string) (string, error) {
	pods, err := r.core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(selector).String()})
	if err != nil {
		if r.namespaceGone(ctx, ns, err) {
			return "", fmt.Errorf("%s: the project's namespace %s is gone (hibernated?): %w", what, ns, engine.ErrBadState)
		}
		return "", fmt.Errorf("%s: list pods: %w", what, err)
	}
	// Newest first: after a restart the old pod may still be terminating.
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p.Name, nil
		}
	}
	return "", fmt.Errorf("%s has no running pod in %s; start it first: %w", what, ns, engine.ErrBadState)
}

func (r *Runtime) fileManagerPod(ctx context.Context, p engine.Project) (string, error) {
	return r.runningPod(ctx, r.Namespace(p), map[string]string{LabelProjectID: labelValue(p.ID), LabelComponent: ComponentFileManager}, "file manager")
}

// Exit codes of the scripts below, distinct from what the tools they run return.
const (
	exitEscapes = 86 // the path resolves outside the project
	exitMissing = 87 // the path does not exist
	exitIsDir   = 88 // a file operation on a directory
	exitNotDir  = 89 // a listing of a file
)

// fileScript does one file operation in the file-manager pod. $1 is the operation, $2 the
// path relative to the project (already cleaned by CleanRel, so no ".." and not absolute). The
// path is never part of the script text: it arrives as an argument. Symlinks are resolved in
// the pod and anything that resolves outside the mount is refused, the same confinement
// hostfs gives the other runtimes.
const fileScript = `root=` + MountPath + `; op="$1"; t="$root/$2"
inside() { r=$(readlink -f "$1" 2>/dev/null) || r=; case "$r" in "$root"|"$root"/*) return 0;; esac; echo "$2 leaves the project" >&2; exit 86; }
parent() { d=${t%/*}; while [ ! -e "$d" ] && [ "$d" != "$root" ]; do d=${d%/*}; done; inside "$d" "$2"; }
case "$op" in
read)
  [ -e "$t" ] || exit 87; inside "$t" "$2"; [ -d "$t" ] && exit 88; exec cat "$t" ;;
write)
  parent x "$2"; mkdir -p "${t%/*}" || exit 1; inside "${t%/*}" "$2"
  if [ -L "$t" ] || [ -e "$t" ]; then inside "$t" "$2"; [ -d "$t" ] && exit 88; fi
  tmp="${t%/*}/.sailtui-write.$$"; cat > "$tmp" && mv -f "$tmp" "$t" || { rm -f "$tmp"; exit 1; } ;;
delete)
  { [ -e "$t" ] || [ -L "$t" ]; } || exit 87; parent x "$2"; exec rm -rf "$t" ;;
list)
  [ -e "$t" ] || exit 87; inside "$t" "$2"; [ -d "$t" ] || exit 89
  for f in "$t"/* "$t"/.[!.]* "$t"/..?*; do
    { [ -e "$f" ] || [ -L "$f" ]; } || continue
    m=$(stat -c '%s %Y %f' "$f") || continue
    l=; [ -L "$f" ] && l=$(readlink "$f")
    printf '%s\0%s\0%s\0' "${f##*/}" "$m" "$l"
  done ;;
*) echo "unknown operation $op" >&2; exit 2 ;;
esac`

// fileOp runs fileScript in the file-manager pod.
func (r *Runtime) fileOp(ctx context.Context, p engine.Project, op, rel string, stdin io.Reader, stdout io.Writer) error {
	clean, err := engine.CleanRel(rel)
	if err != nil {
		return err
	}
	pod, err := r.fileManagerPod(ctx, p)
	if err != nil {
		return err
	}
	var stderr capped.Buffer
	stderr.Max = 4096
	code, err := r.exec.run(ctx, r.Namespace(p), pod, "file-manager", []string{"sh", "-c", fileScript, "sh", op, clean}, stdin, stdout, &stderr)
	if err != nil {
		return err
	}
	msg := strings.TrimSpace(stderr.String())
	switch code {
	case 0:
		return nil
	case exitEscapes:
		return fmt.Errorf("%q: %s: %w", rel, msg, engine.ErrBadPath)
	case exitMissing:
		return fmt.Errorf("%q: %w", rel, engine.ErrNotFound)
	case exitIsDir:
		return fmt.Errorf("%q is a directory: %w", rel, engine.ErrBadInput)
	case exitNotDir:
		return fmt.Errorf("%q is not a directory: %w", rel, engine.ErrBadInput)
	}
	return fmt.Errorf("%s %q in the file manager: exit %d: %s", op, rel, code, msg)
}

// ReadFile implements engine.Runtime through the file-manager pod.
func (r *Runtime) ReadFile(ctx context.Context, p engine.Project, rel string, w io.Writer) error {
	return r.fileOp(ctx, p, "read", rel, nil, w)
}

// WriteFile implements engine.Runtime: the content goes on the exec's stdin into a temporary
// file that is renamed over the target, so a reader never sees half a file.
func (r *Runtime) WriteFile(ctx context.Context, p engine.Project, rel string, rd io.Reader) error {
	if clean, err := engine.CleanRel(rel); err != nil {
		return err
	} else if clean == "." {
		return fmt.Errorf("write %q: the project root is a directory: %w", rel, engine.ErrBadInput)
	}
	return r.fileOp(ctx, p, "write", rel, rd, io.Discard)
}

// DeleteFile implements engine.Runtime.
func (r *Runtime) DeleteFile(ctx context.Context, p engine.Project, rel string) error {
	if clean, err := engine.CleanRel(rel); err != nil {
		return err
	} else if clean == "." {
		return fmt.Errorf("delete %q: the project root cannot be deleted: %w", rel, engine.ErrBadInput)
	}
	return r.fileOp(ctx, p, "delete", rel, nil, io.Discard)
}

// ListFiles implements engine.Runtime.
func (r *Runtime) ListFiles(ctx context.Context, p engine.Project, rel string) ([]engine.FileInfo, error) {
	var out bytes.Buffer
	if err := r.fileOp(ctx, p, "list", rel, nil, &out); err != nil {
		return nil, err
	}
	clean, _ := engine.CleanRel(rel)
	return parseListing(clean, out.Bytes())
}

// parseListing reads fileScript's list output: name, "size mtime rawmode-hex", link target,
// each NUL-terminated.
func parseListing(dir string, b []byte) ([]engine.FileInfo, error) {
	fields := strings.Split(string(b), "\x00")
	if len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	if len(fields)%3 != 0 {
		return nil, fmt.Errorf("list %q: malformed listing from the file manager", dir)
	}
	var infos []engine.FileInfo
	for i := 0; i < len(fields); i += 3 {
		var size, mtime int64
		var raw uint64
		parts := strings.Fields(fields[i+1])
		if len(parts) != 3 {
			return nil, fmt.Errorf("list %q: malformed entry %q", dir, fields[i+1])
		}
		size, err1 := strconv.ParseInt(parts[0], 10, 64)
		mtime, err2 := strconv.ParseInt(parts[1], 10, 64)
		raw, err3 := strconv.ParseUint(parts[2], 16, 32)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("list %q: entry %q: %w", dir, fields[i], err)
		}
		mode := unixMode(uint32(raw))
		infos = append(infos, engine.FileInfo{
			Path: path.Join(dir, fields[i]), Size: size, Mode: mode.String(), IsDir: mode.IsDir(),
			ModTime: time.Unix(mtime, 0).UTC(), Target: fields[i+2],
		})
	}
	slices.SortFunc(infos, func(a, b engine.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return infos, nil
}

// unixMode turns st_mode bits into an fs.FileMode.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// execScript runs argv ($4...) in directory $1 with $2 variables ($3.. as K=V) exported, and
// marks the process with SAILTUI_EXEC so a timeout can find and kill all it started.
const execScript = `cd "$1" || exit 127; n="$2"; shift 2
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n-1)); done
exec "$@"`

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
	if err := req.Validate(); err != nil {
		return engine.ExecResult{}, err
	}
	argv, marker, err := execArgv(c, req)
	if err != nil {
		return engine.ExecResult{}, err
	}
	ns := r.Namespace(p)
	l := containerLabels(p, c)
	pod, err := r.runningPod(ctx, ns, map[string]string{LabelProjectID: l[LabelProjectID], LabelComponent: ComponentDev, LabelContainerID: l[LabelContainerID]}, "container "+c.Name)
	if err != nil {
		return engine.ExecResult{}, err
	}
	out := capped.NewOutput(req.MaxOutput)
	var stdin io.Reader
	if req.Stdin != nil {
		stdin = bytes.NewReader(req.Stdin)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if req.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	code, err := r.exec.run(runCtx, ns, pod, "dev", argv, stdin, out.Stdout, out.Stderr)
	if err == nil {
		return out.Result(code, false), nil
	}
	if runCtx.Err() == nil {
		return out.Result(-1, false), err
	}
	// The stream was cut by the timeout or the caller: the command may live on in the pod.
	kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer kcancel()
	var kout bytes.Buffer
	kcode, kerr := r.exec.run(kctx, ns, pod, "dev", []string{"sh", "-c", containerexec.KillScript, "sh", marker}, nil, &kout, &kout)
	if kerr == nil && kcode != 0 {
		kerr = fmt.Errorf("kill exited %d: %s", kcode, strings.TrimSpace(kout.String()))
	}
	if ctx.Err() != nil {
		return out.Result(-1, false), ctx.Err()
	}
	if kerr != nil {
		return out.Result(engine.ExitTimedOut, true), fmt.Errorf("timed out, and the command could not be killed: %w", kerr)
	}
	return out.Result(engine.ExitTimedOut, true), nil
}

// execArgv wraps req for execScript and returns the marker it carries.
func execArgv(c engine.Container, req engine.ExecRequest) ([]string, string, error) {
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
	argv := []string{"sh", "-c", execScript, "sh", path.Join(MountPath, cdir, sub), strconv.Itoa(len(vars))}
	argv = append(argv, vars...)
	return append(argv, req.Argv...), marker, nil
}

// Logs streams the dev pod's log (the container's output).
func (r *Runtime) Logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	ns := r.Namespace(p)
	l := containerLabels(p, c)
	pod, err := r.runningPod(ctx, ns, map[string]string{LabelProjectID: l[LabelProjectID], LabelComponent: ComponentDev, LabelContainerID: l[LabelContainerID]}, "container "+c.Name)
	if err != nil {
		return nil, fmt.Errorf("logs of %s/%s: %w", p.Slug, c.Name, err)
	}
	rc, err := r.core.CoreV1().Pods(ns).GetLogs(pod, logOptions(opts)).Stream(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("logs of %s/%s: %w", p.Slug, c.Name, engine.ErrNotFound)
		}
		return nil, fmt.Errorf("logs of %s/%s: %w", p.Slug, c.Name, err)
	}
	return rc, nil
}

func logOptions(opts engine.LogOptions) *corev1.PodLogOptions {
	lo := &corev1.PodLogOptions{Container: "dev", Follow: opts.Follow}
	switch {
	case opts.Tail > 0:
		n := int64(opts.Tail)
		lo.TailLines = &n
	case opts.Tail < 0:
		zero := int64(0)
		lo.TailLines = &zero
	}
	return lo
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
		[]string{"sh", "-c", cloneScript, "sh", path.Join(MountPath, clean), branch},
		strings.NewReader(gitURL+"\n"), io.Discard, &stderr)
	if err != nil {
		return fmt.Errorf("clone into %s: %w", clean, err)
	}
	if code != 0 {
		return fmt.Errorf("clone into %s: git exited %d: %s", clean, code, strings.ReplaceAll(strings.TrimSpace(stderr.String()), gitURL, engine.RedactURL(gitURL)))
	}
	return nil
}
