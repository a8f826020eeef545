package k8stest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sailtui/sailtui/backends/internal/testproc"
)

// errExited marks a component that exited while starting, which is what one does when its
// port was taken: worth another attempt on other ports.
var errExited = errors.New("exited while starting")

// proc is one running component, its output in a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed when cmd has exited
}

func startProc(bin, logPath string, args ...string) (*proc, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("k8stest: %w", err)
	}
	defer log.Close()
	p := &proc{name: filepath.Base(bin), logPath: logPath, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = filepath.Dir(logPath)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// Settings of the developer's cluster must not steer the components.
	p.cmd.Env = cleanEnv()
	testproc.DieWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("k8stest: start %s: %w\n%s", bin, err, buildHint())
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// cleanEnv is the environment without KUBECONFIG and ETCD* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "ETCD") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// waitReady polls ready until it succeeds. When the process exits first the error wraps
// errExited; on timeout it does not. Either way the process is stopped and the error holds
// the end of its log.
func (p *proc) waitReady(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	start := time.Now()
	for {
		attemptCtx, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		err := ready(attemptCtx)
		cancelAttempt()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("k8stest: %s %w (%v): %v\n%s", p.name, errExited, p.cmd.ProcessState, err, p.tail())
		case <-ctx.Done():
			_ = p.stop()
			return fmt.Errorf("k8stest: %s not ready after %v: %v\n%s", p.name, time.Since(start).Round(time.Millisecond), err, p.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop asks the process to end (SIGTERM), then kills it.
func (p *proc) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Errorf("k8stest: %s did not stop within %v of SIGTERM; killed\n%s", p.name, stopTimeout, p.tail())
}

// tail is the end of the process's log.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return p.name + " log (" + p.logPath + "):\n" + strings.TrimSpace(string(b))
}
