package engine

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotUp is wrapped by the error of a start whose container did not come up: it exited, or
// it did not accept connections on its port within the start timeout.
var ErrNotUp = errors.New("container did not come up")

// Defaults of the wait for a started container.
const (
	// DefaultStartTimeout bounds the wait for a container's port: generous, since a dev
	// server's first start may install its dependencies (npm install) before it listens.
	DefaultStartTimeout = 10 * time.Minute
	// DefaultStartSettle is how long a container without a port must run, not exited, to count
	// as started: a command that dies at once (a missing binary) dies well within it.
	DefaultStartSettle = time.Second
	// logTail is how many of its last log lines a container that did not come up shows.
	logTail = 20
	// probeTimeout bounds one look at whether a port answers.
	probeTimeout = time.Second
)

// PortProber is offered by runtimes that can tell whether a running container accepts
// connections on its port now, where the runtime already reaches it (st is its status): local
// dials the process's port, docker its published port, kubernetes reports the pod's readiness,
// which its TCP probe on the port decides. Without it a running container counts as up.
type PortProber interface {
	ProbePort(ctx context.Context, p Project, c Container, st ContainerStatus) (bool, error)
}

// listenPort is the port a start waits to answer: the declared one; 0 (no wait for a port,
// only that it keeps running) when the port is only the fallback default, which a container
// that serves nothing (a worker) does not listen on.
func (s StartSpec) listenPort() int {
	if !s.declaredPort {
		return 0
	}
	return s.Port
}

// startWait is one started container being waited for.
type startWait struct {
	c    Container
	done chan struct{}
	err  error
}

// awaitUp waits until c, just started, is up: running and, when it has a port and the runtime
// can probe it, accepting connections on it, within the start timeout. A container that exits
// (or is stopped) meanwhile, or never listens, is an error wrapping ErrNotUp that names it, its
// exit code and its last log lines.
func (e *Engine) awaitUp(ctx context.Context, p Project, c Container, port int) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.StartTimeout)
	defer cancel()
	prober, _ := e.runtime.(PortProber)
	begun := time.Now()
	var runningSince, runStart time.Time
	restarts := 0
	var last ContainerStatus
	var lastErr error
	for delay := 100 * time.Millisecond; ; delay = min(delay*2, time.Second) {
		st, err := e.runtime.ContainerStatus(ctx, p, c)
		if ctx.Err() == nil {
			lastErr = err // not the error of a look the timeout cut short
		}
		if err == nil {
			last = st
			switch st.State {
			case ContainerExited:
				return e.notUp(ctx, p, c, exitedWhat(st.ExitCode, time.Since(begun)), st)
			case ContainerStopped:
				return e.notUp(ctx, p, c, "was stopped while it started", st)
			case ContainerMissing:
				return e.notUp(ctx, p, c, "was removed outside sailtui while it started", st)
			case ContainerStarting:
				if st.Blocked {
					return e.notUp(ctx, p, c, "cannot start: "+cmp.Or(st.Detail, "its runtime says it cannot"), st)
				}
			case ContainerRunning:
				if !runningSince.IsZero() && !st.StartedAt.Equal(runStart) {
					// Another run than the one seen before: it exited between two looks
					// and its restart policy started it again (docker's unless-stopped, a
					// pod's Always). Only this run counts toward staying up, and the next
					// looks come quickly, to catch it exited with its code.
					runningSince = time.Time{}
					restarts++
					delay = 50 * time.Millisecond
				}
				if runningSince.IsZero() {
					// A container that was running already (a start of a running project)
					// has run since its runtime started it, not since this look.
					runningSince = time.Now()
					if !st.StartedAt.IsZero() && st.StartedAt.Before(runningSince) {
						runningSince = st.StartedAt
					}
					runStart = st.StartedAt
				}
				if port > 0 && prober != nil {
					if ok, _ := e.probe(ctx, prober, p, c, st); ok {
						return nil
					}
				} else if time.Since(runningSince) >= e.cfg.StartSettle {
					return nil
				}
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			if cerr := context.Cause(ctx); !errors.Is(cerr, context.DeadlineExceeded) {
				return fmt.Errorf("start %s/%s: wait for it to come up: %w", p.Slug, c.Name, cerr)
			}
			what := fmt.Sprintf("did not accept connections on port %d within the start timeout %s (SAILTUI_START_TIMEOUT)", port, e.cfg.StartTimeout)
			switch {
			case last.State != ContainerRunning && lastErr != nil:
				what = fmt.Sprintf("did not run within the start timeout %s (SAILTUI_START_TIMEOUT); its status: %v", e.cfg.StartTimeout, lastErr)
			case last.State != ContainerRunning:
				what = fmt.Sprintf("did not run within the start timeout %s (SAILTUI_START_TIMEOUT); it is %s", e.cfg.StartTimeout, describeState(last))
			case restarts > 0:
				what = fmt.Sprintf("kept exiting: its runtime started it again at least %d times within the start timeout %s (SAILTUI_START_TIMEOUT)", restarts, e.cfg.StartTimeout)
			}
			return e.notUp(context.WithoutCancel(ctx), p, c, what, last)
		case <-t.C:
		}
	}
}

// probe asks prober once, bounded by probeTimeout.
func (e *Engine) probe(ctx context.Context, prober PortProber, p Project, c Container, st ContainerStatus) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return prober.ProbePort(ctx, p, c, st)
}

// exitedWhat says how a container that exited while it started ended.
func exitedWhat(code int, after time.Duration) string {
	if after < 2*time.Second {
		return fmt.Sprintf("exited at once with code %d", code)
	}
	return fmt.Sprintf("exited with code %d, %s after it started", code, after.Round(time.Second))
}

func describeState(st ContainerStatus) string {
	s := string(st.State)
	if s == "" {
		s = string(ContainerUnknown)
	}
	if st.Detail != "" {
		s += " (" + st.Detail + ")"
	}
	return s
}

// saysCode reports a detail of an exited container that only says its exit code again
// ("exited with code 3", "exit 3").
func saysCode(st ContainerStatus) bool {
	return st.State == ContainerExited && strings.HasPrefix(st.Detail, "exit") &&
		strings.HasSuffix(st.Detail, " "+strconv.Itoa(st.ExitCode))
}

// notUpError is the error of a container that did not come up; it wraps ErrNotUp without
// saying so at its end, where it would follow the log lines.
type notUpError struct{ msg string }

func (e notUpError) Error() string { return e.msg }
func (e notUpError) Unwrap() error { return ErrNotUp }

// notUp is the error of a container that did not come up: what happened, and its last log lines.
func (e *Engine) notUp(ctx context.Context, p Project, c Container, what string, st ContainerStatus) error {
	msg := fmt.Sprintf("start %s/%s: it %s", p.Slug, c.Name, what)
	if st.Detail != "" && st.State != ContainerRunning && !strings.Contains(what, st.Detail) && !saysCode(st) {
		msg += " (" + st.Detail + ")"
	}
	tail := e.logTail(ctx, p, c)
	// A runtime may still be writing the last output of a container that just exited (the
	// local runtime's capture process): give it a moment before the log reads as markers only.
	for i := 0; i < 10 && st.State == ContainerExited && onlyMarkers(tail) && ctx.Err() == nil; i++ {
		time.Sleep(200 * time.Millisecond)
		tail = e.logTail(ctx, p, c)
	}
	if tail != "" {
		msg += fmt.Sprintf("; its last log lines:\n%s\n(sailtui logs %s %s shows all of it)", tail, p.Slug, c.Name)
	} else {
		msg += "; its log is empty"
	}
	return notUpError{msg: msg}
}

// logTail is the last lines of c's log, indented, or "" when there are none or they cannot be read.
func (e *Engine) logTail(ctx context.Context, p Project, c Container) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rc, err := e.runtime.Logs(ctx, p, c, LogOptions{Tail: logTail})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var lines []string
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, "  | "+strings.TrimRight(sc.Text(), "\r"))
		if len(lines) > logTail {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// awaitAll waits for every start in ws (each in its own goroutine, started by waitFor) and
// joins what did not come up, saying what of the project runs all the same.
func awaitAll(p Project, ws []*startWait) error {
	var errs []error
	var up []string
	for _, w := range ws {
		<-w.done
		if w.err != nil {
			errs = append(errs, w.err)
		} else {
			up = append(up, w.c.Name)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	if len(up) > 0 {
		errs = append(errs, fmt.Errorf("the project's other containers run (%s); sailtui project stop %s stops them", strings.Join(up, ", "), p.Slug))
	}
	return errors.Join(errs...)
}

// waitFor starts waiting for c in the background; its result is in the startWait once done closes.
func (e *Engine) waitFor(ctx context.Context, wg *sync.WaitGroup, p Project, c Container, port int) *startWait {
	w := &startWait{c: c, done: make(chan struct{})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(w.done)
		w.err = e.awaitUp(ctx, p, c, port)
	}()
	return w
}

// startFailedPrefix begins the status reason of an active project whose last start failed
// (StartFailed): it is active (its storage is live, its files and execs work, the sweep
// hibernates it when idle), but what was started is not up.
const startFailedPrefix = "start failed: "

// StartFailed reports whether p's last start failed: a container of it exited or did not
// listen. Displays show it instead of "active", which would read as all is well.
func StartFailed(p Project) bool {
	return p.Status == StatusActive && strings.HasPrefix(p.StatusReason, startFailedPrefix)
}

// DisplayStatus is p's status as shown to people: "start failed" for an active project whose
// last start failed, else its status.
func DisplayStatus(p Project) string {
	if StartFailed(p) {
		return "start failed"
	}
	return string(p.Status)
}

// startFailedReason is the status reason recorded for a start that failed with err: the first
// line of each failure, so that lists stay one line a project.
func startFailedReason(err error) string {
	if err == nil {
		return ""
	}
	var heads []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if rest, ok := strings.CutPrefix(line, "start "); ok {
			head, _, _ := strings.Cut(rest, "; its last log lines:")
			// "shop/web: it exited..." reads "web: it exited..." beside the project's name.
			if slash := strings.IndexByte(head, '/'); slash >= 0 && slash < strings.IndexByte(head+":", ':') {
				head = head[slash+1:]
			}
			heads = append(heads, head)
		}
	}
	if len(heads) == 0 {
		heads = []string{strings.SplitN(err.Error(), "\n", 2)[0]}
	}
	return startFailedPrefix + strings.Join(heads, "; ")
}

// onlyMarkers reports a log tail (logTail's lines) that holds no line of the container's own,
// only sailtui's markers ("— started —").
func onlyMarkers(tail string) bool {
	for _, l := range strings.Split(tail, "\n") {
		if l = strings.TrimPrefix(l, "  | "); l != "" && !strings.HasPrefix(l, "—") {
			return false
		}
	}
	return true
}
