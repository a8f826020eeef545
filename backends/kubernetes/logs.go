package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/logfile"
)

// A container's log in this runtime is its pod's, and a pod goes with a stop and its namespace
// with a hibernation. With a bucket for logs (Config.Logs: the S3 bucket of S3_BUCKET_NAME) the
// runtime keeps each container's log across both: before a container's pods go, what they
// wrote since the last save becomes one segment object, zstd-compressed stamped lines ending
// with a marker of why (stopped); the engine's markers (hibernated, woke) are segments too.
// A reader gets the segments in order, then the live pod's lines written after the last saved
// one (a stop that failed after its save leaves the pod running: its lines are not read twice).
//
// The bucket and not this machine: the sweep that hibernates runs in a CronJob's pod, the
// console that reads the log on an operator's machine. Segments are outside the archive prefix,
// so no snapshot, archive inventory or doctor check sees them; the oldest go once the
// container's segments pass LogMaxBytes (compressed); all go with the project (DropLogs).
// Lines a container writes between the save and its end (its shutdown) are not kept.

// logFollowPoll is how often a followed log looks for a pod to read, or for new markers.
const logFollowPoll = time.Second

// keepLogs saves what the container's pods wrote (the last run before a restart too) before
// they go, ending with the marker what. A log is a convenience: a failure is logged, never the
// stop's.
func (r *Runtime) keepLogs(ctx context.Context, p engine.Project, c engine.Container, what string) {
	if !r.keepsLogs() {
		return
	}
	if err := r.keepPodLogs(context.WithoutCancel(ctx), p, c, what); err != nil {
		r.cfg.Logger.Warn("keep container log", "project", p.Slug, "container", c.Name, "err", err)
	}
}

func (r *Runtime) keepPodLogs(ctx context.Context, p engine.Project, c engine.Container, what string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ns := r.Namespace(p)
	pods, err := r.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(r.logSelector(p, c)).String()})
	if err != nil {
		if r.namespaceGone(ctx, ns, err) {
			return nil
		}
		return fmt.Errorf("list pods: %w", err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	var logs bytes.Buffer
	for i := range pods.Items {
		pod := &pods.Items[i]
		cs := devStatus(pod)
		if cs == nil {
			continue
		}
		if cs.RestartCount > 0 {
			if err := r.readPodLog(ctx, &logs, ns, pod.Name, &corev1.PodLogOptions{Previous: true}); err != nil {
				return err
			}
		}
		if cs.State.Running != nil || cs.State.Terminated != nil {
			if err := r.readPodLog(ctx, &logs, ns, pod.Name, &corev1.PodLogOptions{}); err != nil {
				return err
			}
		}
	}
	if logs.Len() == 0 {
		return nil // never ran: no log, and no marker of a stop of nothing
	}
	return r.saveSegment(ctx, p, c.Name, logs.Bytes(), what)
}

// readPodLog appends the stamped log of the pod's dev container to w, its last logMax bytes
// at most (from a line start).
func (r *Runtime) readPodLog(ctx context.Context, w *bytes.Buffer, ns, pod string, lo *corev1.PodLogOptions) error {
	lo.Container, lo.Timestamps = "dev", true
	rc, err := r.kube.CoreV1().Pods(ns).GetLogs(pod, lo).Stream(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			return nil // gone, or its container has not run (a previous run that is not there)
		}
		return fmt.Errorf("read log of pod %s: %w", pod, err)
	}
	defer rc.Close()
	var tail []byte
	buf := make([]byte, 64<<10)
	limit := int(r.logMax())
	for {
		n, err := rc.Read(buf)
		tail = append(tail, buf[:n]...)
		if len(tail) > 2*limit {
			cut := len(tail) - limit
			if i := bytes.IndexByte(tail[cut:], '\n'); i >= 0 {
				cut += i + 1
			}
			tail = append(tail[:0], tail[cut:]...)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read log of pod %s: %w", pod, err)
		}
	}
	if len(tail) > limit {
		cut := len(tail) - limit
		if i := bytes.IndexByte(tail[cut:], '\n'); i >= 0 {
			cut += i + 1
		}
		tail = tail[cut:]
	}
	w.Write(tail)
	if len(tail) > 0 && tail[len(tail)-1] != '\n' {
		w.WriteByte('\n')
	}
	return nil
}

// devStatus is the status of the pod's dev container, nil before it has one.
func devStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == "dev" {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func (r *Runtime) logSelector(p engine.Project, c engine.Container) map[string]string {
	l := containerLabels(p, c)
	return map[string]string{LabelProjectID: l[LabelProjectID], LabelComponent: ComponentDev, LabelContainerID: l[LabelContainerID]}
}

// Logs streams the container's log: the kept segments (with a bucket for logs), then its pod's
// own, each line with the time the kubelet recorded for it (given with Timestamps, taken off
// otherwise). Tail counts lines over both. With Follow the reader goes on through stops and
// wakes: a pod that is not there yet is waited for, a new pod is read from its start, and the
// markers of what happened between them are delivered in place.
func (r *Runtime) Logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	rc, err := r.logs(ctx, p, c, opts)
	if err != nil {
		return nil, fmt.Errorf("logs of %s/%s: %w", p.Slug, c.Name, err)
	}
	if !opts.Timestamps {
		return readCloser{Reader: logfile.Strip(rc), Closer: rc}, nil
	}
	return rc, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

func (r *Runtime) logs(ctx context.Context, p engine.Project, c engine.Container, opts engine.LogOptions) (io.ReadCloser, error) {
	ns := r.Namespace(p)
	if !r.keepsLogs() {
		// The pod's log only: the one of a running pod.
		pod, err := r.runningPod(ctx, ns, r.logSelector(p, c), "container "+c.Name)
		if err != nil {
			return nil, fmt.Errorf("%w (a container's log goes with its pod; to keep logs across stops and hibernation, give sailtui a bucket: S3_BUCKET_NAME)", err)
		}
		lo := podLogOptions(opts)
		lo.Timestamps = true
		rc, err := r.kube.CoreV1().Pods(ns).GetLogs(pod, lo).Stream(ctx)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil, engine.ErrNotFound
			}
			return nil, err
		}
		return rc, nil
	}
	segs, err := r.segments(ctx, p, c.Name)
	if err != nil {
		return nil, err
	}
	after := lastKept(segs)
	pod, previous, err := r.logPod(ctx, ns, r.logSelector(p, c), false)
	if err != nil {
		return nil, err
	}
	// The backlog: Tail lines (0 all, < 0 none) over the segments and the pod.
	var backlog bytes.Buffer
	if opts.Tail >= 0 {
		var live []byte
		if pod != "" {
			lo := podLogOptions(engine.LogOptions{Tail: opts.Tail})
			lo.Previous = previous
			if live, err = r.podLogAfter(ctx, ns, pod, lo, after); err != nil {
				return nil, err
			}
		}
		want := -1 // lines still wanted from the segments; -1 all
		if opts.Tail > 0 {
			want = opts.Tail - bytes.Count(live, []byte{'\n'})
		}
		kept, err := r.keptTail(ctx, segs, want)
		if err != nil {
			return nil, err
		}
		backlog.Write(kept)
		backlog.Write(live)
	}
	if !opts.Follow {
		return io.NopCloser(&backlog), nil
	}
	fctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		f := &logFollower{r: r, p: p, c: c, ns: ns, w: pw, sent: after, segAt: 0}
		for _, s := range segs {
			f.segAt = max(f.segAt, s.at)
		}
		f.noteSent(backlog.Bytes())
		if _, err := pw.Write(backlog.Bytes()); err != nil {
			return
		}
		// Tail < 0: only what the running pod writes from now on (a pod that comes later is
		// read from its start).
		if previous {
			pod = "" // follow the run that comes, not the one that ended
		}
		pw.CloseWithError(f.run(fctx, pod, opts.Tail < 0 && pod != ""))
	}()
	return readCloser{Reader: pr, Closer: closerFunc(func() error { cancel(); return pr.Close() })}, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// podLogAfter reads the pod's stamped log with lo, without the lines at or before after (Unix
// nanoseconds): those are kept already.
func (r *Runtime) podLogAfter(ctx context.Context, ns, pod string, lo *corev1.PodLogOptions, after int64) ([]byte, error) {
	lo.Timestamps = true
	rc, err := r.kube.CoreV1().Pods(ns).GetLogs(pod, lo).Stream(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read log of pod %s: %w", pod, err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if err := copyAfter(&out, rc, &after); err != nil {
		return nil, fmt.Errorf("read log of pod %s: %w", pod, err)
	}
	return out.Bytes(), nil
}

// copyAfter copies the lines of r to w that are timed after *after, moving *after on.
func copyAfter(w io.Writer, r io.Reader, after *int64) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			at, text, ok := engine.ParseLogLine(line)
			// A marker is delivered once (from its segment) whatever its time, and moves
			// nothing on: it was timed by this machine's clock, the lines by the node's.
			marker := ok && engine.IsLogMarker(string(text))
			if !ok || marker || at.UnixNano() > *after {
				if ok && !marker {
					*after = at.UnixNano()
				}
				if line[len(line)-1] != '\n' {
					line = append(line, '\n')
				}
				if _, werr := w.Write(line); werr != nil {
					return werr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// logPod is the newest pod of selector whose dev container has run (so it has a log): with
// running, only one whose container runs now. "" when there is none (or no namespace). A pod
// being deleted is not one: its log was kept before it was (a stop), and what it writes while
// it goes would be read once and then never again.
//
// previous says the container waits to be restarted: its log is its last run's.
func (r *Runtime) logPod(ctx context.Context, ns string, selector map[string]string, running bool) (pod string, previous bool, err error) {
	pods, err := r.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(selector).String()})
	if err != nil {
		if r.namespaceGone(ctx, ns, err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("list pods: %w", err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for i := range pods.Items {
		cs := devStatus(&pods.Items[i])
		switch {
		case cs == nil || pods.Items[i].DeletionTimestamp != nil:
		case cs.State.Running != nil:
			return pods.Items[i].Name, false, nil
		case running:
		case cs.State.Terminated != nil:
			return pods.Items[i].Name, false, nil
		case cs.RestartCount > 0:
			return pods.Items[i].Name, true, nil
		}
	}
	return "", false, nil
}

// logFollower delivers a followed log past its backlog: the running pod's lines as they come,
// then, once it goes, the markers kept since, then the next pod's lines.
type logFollower struct {
	r     *Runtime
	p     engine.Project
	c     engine.Container
	ns    string
	w     io.Writer
	sent  int64 // time of the last line delivered (Unix nanoseconds)
	segAt int64 // save time of the newest segment looked at
}

func (f *logFollower) noteSent(b []byte) {
	for line := range bytes.Lines(b) {
		if at, text, ok := engine.ParseLogLine(line); ok && !engine.IsLogMarker(string(text)) {
			f.sent = max(f.sent, at.UnixNano())
		}
	}
}

func (f *logFollower) run(ctx context.Context, pod string, fromNow bool) error {
	sel := f.r.logSelector(f.p, f.c)
	for {
		if pod == "" {
			var err error
			if pod, _, err = f.r.logPod(ctx, f.ns, sel, true); err != nil && ctx.Err() == nil {
				return err
			}
		}
		if pod != "" {
			lo := &corev1.PodLogOptions{Container: "dev", Follow: true, Timestamps: true}
			if fromNow {
				zero := int64(0)
				lo.TailLines = &zero
			} else if f.sent > 0 {
				// Whole seconds: copyAfter drops what was delivered already.
				lo.SinceTime = &metav1.Time{Time: time.Unix(0, f.sent).Truncate(time.Second)}
			}
			fromNow = false
			if rc, err := f.r.kube.CoreV1().Pods(f.ns).GetLogs(pod, lo).Stream(ctx); err == nil {
				err = copyAfter(f.w, rc, &f.sent)
				_ = rc.Close()
				if errors.Is(err, io.ErrClosedPipe) {
					return nil
				}
			}
			pod = ""
		}
		if err := f.markers(ctx); err != nil {
			return nil // the reader went, or the bucket: the pod's lines still came
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logFollowPoll):
		}
	}
}

// markers delivers the lines of segments saved since the last look that were not delivered
// live: the markers of a stop, a hibernation, a wake.
func (f *logFollower) markers(ctx context.Context) error {
	segs, err := f.r.segments(ctx, f.p, f.c.Name)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if s.at <= f.segAt {
			continue
		}
		f.segAt = s.at
		b, err := f.r.readSegment(ctx, s)
		if err != nil {
			return err
		}
		if err := copyAfter(f.w, bytes.NewReader(b), &f.sent); err != nil {
			return err
		}
	}
	return nil
}

func podLogOptions(opts engine.LogOptions) *corev1.PodLogOptions {
	// The kubelet's own times, RFC3339Nano in front of each line (engine.ParseLogLine).
	lo := &corev1.PodLogOptions{Container: "dev", Follow: opts.Follow, Timestamps: opts.Timestamps}
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
