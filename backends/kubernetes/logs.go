package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
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

// keptSegment is one saved piece of a container's log. Its key,
// <dir><at>-<last>-<random>.log.zst, says when it was saved (the order of segments) and the
// time of the last container line in it or before it (what a reader of the live pod skips).
type keptSegment struct {
	key      string
	at, last int64 // Unix nanoseconds
	size     int64
}

const segmentSuffix = ".log.zst"

// keepsLogs reports whether container logs outlive their pods (a bucket is configured).
func (r *Runtime) keepsLogs() bool { return r.cfg.Logs != nil }

// logDir is the key prefix of a container's segments; logProjectDir of all the project's.
func (r *Runtime) logProjectDir(p engine.Project) string {
	return r.cfg.LogPrefix + url.PathEscape(p.ID) + "/"
}

func (r *Runtime) logDir(p engine.Project, name string) string {
	return r.logProjectDir(p) + name + "/"
}

// segments lists a container's kept segments, oldest first. Objects under the prefix that are
// not segments (someone else's) are left out.
func (r *Runtime) segments(ctx context.Context, p engine.Project, name string) ([]keptSegment, error) {
	dir := r.logDir(p, name)
	objs, err := r.cfg.Logs.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("list kept log segments %s: %w", dir, err)
	}
	segs := make([]keptSegment, 0, len(objs))
	for _, o := range objs {
		name, ok := strings.CutPrefix(o.Key, dir)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		name, ok = strings.CutSuffix(name, segmentSuffix)
		parts := strings.Split(name, "-")
		if !ok || len(parts) != 3 {
			continue
		}
		at, err1 := strconv.ParseInt(parts[0], 10, 64)
		last, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		segs = append(segs, keptSegment{key: o.Key, at: at, last: last, size: o.Size})
	}
	slices.SortFunc(segs, func(a, b keptSegment) int { return strings.Compare(a.key, b.key) })
	return segs, nil
}

// lastKept is the time of the last container line kept in segs (0 when none).
func lastKept(segs []keptSegment) int64 {
	var last int64
	for _, s := range segs {
		last = max(last, s.last)
	}
	return last
}

// saveSegment keeps the stamped lines of logs written after the last kept line, then the marker
// what ("" for none), as a new segment, and drops the oldest segments past the cap.
func (r *Runtime) saveSegment(ctx context.Context, p engine.Project, name string, logs []byte, what string) error {
	segs, err := r.segments(ctx, p, name)
	if err != nil {
		return err
	}
	last := lastKept(segs)
	var out bytes.Buffer
	newLast := last
	for line := range bytes.Lines(logs) {
		if at, _, ok := engine.ParseLogLine(line); ok {
			if at.UnixNano() <= last {
				continue
			}
			newLast = max(newLast, at.UnixNano())
		}
		out.Write(line)
		if line[len(line)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	now := time.Now()
	if what != "" {
		out.Write(engine.FormatLogLine(now, []byte(engine.LogMarker(what))))
	}
	if out.Len() == 0 {
		return nil
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	packed := enc.EncodeAll(out.Bytes(), nil)
	_ = enc.Close()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	key := fmt.Sprintf("%s%020d-%020d-%s%s", r.logDir(p, name), now.UnixNano(), newLast, hex.EncodeToString(rnd[:]), segmentSuffix)
	if _, err := r.cfg.Logs.Put(ctx, key, bytes.NewReader(packed)); err != nil {
		return fmt.Errorf("keep log of %s: %w", name, err)
	}
	total := int64(len(packed))
	for _, s := range segs {
		total += s.size
	}
	for _, s := range segs {
		if total <= r.logMax() {
			break
		}
		if err := r.cfg.Logs.Delete(ctx, s.key); err != nil {
			return fmt.Errorf("trim kept log of %s: %w", name, err)
		}
		total -= s.size
	}
	return nil
}

func (r *Runtime) logMax() int64 {
	if r.cfg.LogMaxBytes > 0 {
		return r.cfg.LogMaxBytes
	}
	return logfile.DefaultMax
}

// readSegment is a segment's stamped lines.
func (r *Runtime) readSegment(ctx context.Context, s keptSegment) ([]byte, error) {
	rc, err := r.cfg.Logs.Get(ctx, s.key)
	if err != nil {
		return nil, fmt.Errorf("read kept log segment %s: %w", s.key, err)
	}
	defer rc.Close()
	dec, err := zstd.NewReader(rc, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(8*r.logMax()+64<<20)))
	if err != nil {
		return nil, fmt.Errorf("read kept log segment %s: %w", s.key, err)
	}
	defer dec.Close()
	b, err := io.ReadAll(dec)
	if err != nil {
		return nil, fmt.Errorf("read kept log segment %s: %w", s.key, err)
	}
	return b, nil
}

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
	pods, err := r.core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(r.logSelector(p, c)).String()})
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
	rc, err := r.core.CoreV1().Pods(ns).GetLogs(pod, lo).Stream(ctx)
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

// MarkLog implements engine.LogKeeper: a marker segment for each container that has a kept
// log (one that never ran gets none).
func (r *Runtime) MarkLog(ctx context.Context, p engine.Project, cs []engine.Container, what string) error {
	if !r.keepsLogs() {
		return nil
	}
	var errs []error
	for _, c := range cs {
		if err := engine.CheckContainerName(c.Name); err != nil {
			return fmt.Errorf("mark logs of %s: %w", p.Slug, err)
		}
		segs, err := r.segments(ctx, p, c.Name)
		if err == nil && len(segs) > 0 {
			err = r.saveSegment(ctx, p, c.Name, nil, what)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("mark logs of %s: %w", p.Slug, err)
	}
	return nil
}

// DropLogs implements engine.LogKeeper: every segment of the project goes.
func (r *Runtime) DropLogs(ctx context.Context, p engine.Project) error {
	if !r.keepsLogs() {
		return nil
	}
	objs, err := r.cfg.Logs.List(ctx, r.logProjectDir(p))
	if err != nil {
		return fmt.Errorf("drop logs of %s: %w", p.Slug, err)
	}
	for _, o := range objs {
		if err := r.cfg.Logs.Delete(ctx, o.Key); err != nil {
			return fmt.Errorf("drop logs of %s: %w", p.Slug, err)
		}
	}
	return nil
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
		rc, err := r.core.CoreV1().Pods(ns).GetLogs(pod, lo).Stream(ctx)
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

// keptTail is the last want lines of the segments (want < 0: all of them, want 0: none).
func (r *Runtime) keptTail(ctx context.Context, segs []keptSegment, want int) ([]byte, error) {
	if want == 0 {
		return nil, nil
	}
	var parts [][]byte
	lines := 0
	for i := len(segs) - 1; i >= 0 && (want < 0 || lines < want); i-- {
		b, err := r.readSegment(ctx, segs[i])
		if err != nil {
			return nil, err
		}
		parts = append(parts, b)
		lines += bytes.Count(b, []byte{'\n'})
	}
	slices.Reverse(parts)
	all := bytes.Join(parts, nil)
	if want > 0 && lines > want {
		off, _, err := logfile.TailOffset(bytes.NewReader(all), int64(len(all)), want)
		if err != nil {
			return nil, err
		}
		all = all[off:]
	}
	return all, nil
}

// podLogAfter reads the pod's stamped log with lo, without the lines at or before after (Unix
// nanoseconds): those are kept already.
func (r *Runtime) podLogAfter(ctx context.Context, ns, pod string, lo *corev1.PodLogOptions, after int64) ([]byte, error) {
	lo.Timestamps = true
	rc, err := r.core.CoreV1().Pods(ns).GetLogs(pod, lo).Stream(ctx)
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
	pods, err := r.core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(selector).String()})
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
			if rc, err := f.r.core.CoreV1().Pods(f.ns).GetLogs(pod, lo).Stream(ctx); err == nil {
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
