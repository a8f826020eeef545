package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
	"github.com/sailtui/sailtui/engine/logfile"
)

// A container's output goes through a pipe to a capture process, which writes each line to the
// container's log with the time it read it (within a millisecond of the write): a log read
// later, in one go, still says when each line was written. The capture process is this very
// program started again with captureEnv set (the init below takes over before main), detached
// like the container, so it outlives the console as the container does. It is not in the
// container's process group: a stop's signals do not reach it, it ends when the last of the
// container's processes closes its output, after writing what they wrote last.
//
// The container starts only once the capture process says it reads (a byte on captureReadyFD):
// starting it takes this program's start, tens of milliseconds and far more on a loaded
// machine, and lines written before would wait in the pipe and carry the time they were read.
const captureEnv = "SAILTUI_LOCAL_LOG_CAPTURE"

// captureReadyEnv names the ready pipe's descriptor in the capture process (its first extra
// file, captureReadyFD). Without it, as when a console from before the ready pipe starts this
// program, descriptor 3 may be anything, the Go runtime's own included, and is left alone.
const (
	captureReadyEnv = "SAILTUI_LOCAL_LOG_CAPTURE_READY_FD"
	captureReadyFD  = 3
)

const (
	// captureIdle is how long a line without its newline waits for the rest before it is
	// written as it is (a prompt, a progress bar).
	captureIdle = time.Second
	// captureMaxLine cuts an endless line into lines of this size.
	captureMaxLine = 64 << 10
	// captureDrain bounds how long a stop or an exit waits for the capture process to write
	// the container's last lines before its marker goes in.
	captureDrain = 2 * time.Second
	// captureReadyWait bounds how long a start waits for the capture process to read. Past
	// it the container starts anyway: its lines are all kept, the first ones with late times.
	captureReadyWait = 10 * time.Second
)

func init() {
	if os.Getenv(captureEnv) != "1" || len(os.Args) != 3 {
		return
	}
	limit, err := strconv.ParseInt(os.Args[2], 10, 64)
	if err != nil {
		os.Exit(2)
	}
	os.Exit(runCapture(os.Args[1], limit))
}

// runCapture copies stdin to the log at path, line by line with times, until stdin ends.
func runCapture(path string, limit int64) int {
	// Detached, but a terminal's or a stop's signals must not lose the last lines.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	w := logfile.NewWriter(path, limit)
	defer w.Close()
	chunks := make(chan []byte)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 64<<10)
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				chunks <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	if os.Getenv(captureReadyEnv) == strconv.Itoa(captureReadyFD) {
		ready := os.NewFile(captureReadyFD, "ready")
		_, _ = ready.Write([]byte{1})
		_ = ready.Close()
	}
	var (
		partial   []byte
		partialAt time.Time
	)
	// A write error has nowhere to go; reading goes on regardless so the container never
	// blocks on a full pipe.
	take := func(at time.Time, data []byte) {
		var lines [][]byte
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			line := data[:i]
			data = data[i+1:]
			if len(partial) > 0 {
				_ = w.WriteLines(partialAt, [][]byte{append(partial, line...)})
				partial = nil
				continue
			}
			lines = append(lines, line)
		}
		_ = w.WriteLines(at, lines)
		if len(data) > 0 {
			if len(partial) == 0 {
				partialAt = at
			}
			partial = append(partial, data...)
		}
		for len(partial) >= captureMaxLine {
			_ = w.WriteLines(partialAt, [][]byte{partial[:captureMaxLine]})
			partial = append([]byte(nil), partial[captureMaxLine:]...)
		}
	}
	flush := func() {
		if len(partial) > 0 {
			_ = w.WriteLines(partialAt, [][]byte{partial})
			partial = nil
		}
	}
	idle := time.NewTimer(captureIdle)
	idle.Stop()
	for {
		select {
		case b, ok := <-chunks:
			if !ok {
				flush()
				return 0
			}
			take(time.Now(), b)
			if len(partial) > 0 {
				idle.Reset(captureIdle)
			}
		case <-idle.C:
			flush()
		}
	}
}

// capture is a started capture process.
type capture struct {
	pid   int
	ticks uint64
	done  chan struct{} // closed once this Runtime has reaped it
}

// startCapture starts the capture process for the log at path and returns the pipe end the
// container writes to (the caller closes it once the container has it).
func (r *Runtime) startCapture(path string) (*os.File, *capture, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find this program to capture output with: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		_, _ = pr.Close(), pw.Close()
		return nil, nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(exe, path, strconv.FormatInt(r.logMax(), 10))
	// One thread is plenty for copying a pipe; it keeps the process small (about 3.5 MiB of
	// its own memory, the program's text shared).
	cmd.Env = []string{captureEnv + "=1", "GOMAXPROCS=1", captureReadyEnv + "=" + strconv.Itoa(captureReadyFD)}
	cmd.Dir = "/" // not the project tree, which a teardown removes
	cmd.Stdin = pr
	cmd.ExtraFiles = []*os.File{readyW} // captureReadyFD
	cmd.SysProcAttr = detachedAttr()
	err = cmd.Start()
	_, _ = pr.Close(), readyW.Close()
	if err != nil {
		_ = pw.Close()
		return nil, nil, fmt.Errorf("start output capture: %w", err)
	}
	c := &capture{pid: cmd.Process.Pid, done: make(chan struct{})}
	c.ticks, _ = procStartTicks(c.pid)
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	if err := awaitReady(readyR, captureReadyWait); err != nil {
		_ = pw.Close()
		return nil, nil, fmt.Errorf("start output capture: %w", err)
	}
	return pw, c, nil
}

// awaitReady waits for the capture process's ready byte. An end without it means the process
// died before reading, and a container writing to its pipe would die of SIGPIPE; a slow
// process only costs the first lines their exact times, so the wait's end is not an error.
func awaitReady(ready *os.File, wait time.Duration) error {
	_ = ready.SetReadDeadline(time.Now().Add(wait))
	var b [1]byte
	n, err := ready.Read(b[:])
	switch {
	case n == 1:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	default:
		return fmt.Errorf("it exited before reading (%v)", err)
	}
}

// waitCaptured waits (bounded) for the capture process of rec to have written everything.
func waitCaptured(ctx context.Context, rec *record) {
	if rec.CapturePID > 0 {
		waitGone(ctx, rec.CapturePID, rec.CaptureTicks, captureDrain)
	}
}

func (r *Runtime) logMax() int64 {
	if r.cfg.LogMaxBytes > 0 {
		return r.cfg.LogMaxBytes
	}
	return logfile.DefaultMax
}

// mark writes a marker into a container's log; a log is a convenience, so a failure to write
// one is not a failure of what it marks.
func (r *Runtime) mark(slug, name, what string) {
	_ = logfile.Mark(r.logPath(slug, name), r.logMax(), what)
}

// MarkLog implements engine.LogKeeper: the logs live in LogDir, outside the project tree. A
// container without a log (it never ran) gets none.
func (r *Runtime) MarkLog(ctx context.Context, p engine.Project, cs []engine.Container, what string) error {
	return logfile.MarkLogs(p, cs, func(name string) string { return r.logPath(p.Slug, name) }, r.logMax(), what)
}

// DropLogs implements engine.LogKeeper: the project's log directory goes.
func (r *Runtime) DropLogs(ctx context.Context, p engine.Project) error {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return fmt.Errorf("drop logs: %w", err)
	}
	if err := os.RemoveAll(r.logDir(p.Slug)); err != nil {
		return fmt.Errorf("drop logs of %s: %w", p.Slug, err)
	}
	return nil
}
