// Command k8snode runs the real Kubernetes node of the tests (k8stest.ServeNode): a kubelet
// on a containerd of its own, under a control plane of its own, on this machine.
//
//	k8snode run [--dir D] -- CMD...   start the node, run CMD with SAILTUI_TEST_NODE=D, stop the
//	                                  node (also when CMD fails or is interrupted); CMD's exit code
//	k8snode up [--dir D]              start it in the background (idempotent); prints the exports
//	k8snode down [--dir D]            stop it and undo every change to the host
//	k8snode env [--dir D]             print the exports of the running node
//
// It needs root, the tools of `make tools` (.tools/bin) and Debian's containerd, runc and
// containernetworking-plugins (`make deps`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet("k8snode "+cmd, flag.ExitOnError)
	dir := fs.String("dir", k8stest.DefaultNodeDir(), "the node's directory")
	_ = fs.Parse(os.Args[2:])
	d, err := filepath.Abs(*dir)
	if err != nil {
		fail(err)
	}
	switch cmd {
	case "serve":
		os.Exit(serve(d))
	case "up":
		env, err := up(d)
		if err != nil {
			fail(err)
		}
		fmt.Print(env.Exports())
	case "down":
		if err := down(d); err != nil {
			fail(err)
		}
	case "env":
		env, err := k8stest.ReadNodeEnv(d)
		if err != nil {
			fail(fmt.Errorf("no node running in %s (start one with `make cluster`): %w", d, err))
		}
		fmt.Print(env.Exports())
	case "run":
		args := fs.Args()
		if len(args) == 0 {
			usage()
		}
		os.Exit(run(d, args))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: k8snode up|down|env [--dir D] | k8snode run [--dir D] -- CMD...")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "k8snode:", err)
	os.Exit(1)
}

func pidFile(dir string) string { return dir + ".pid" }
func logFile(dir string) string { return dir + ".log" }

// serve is the node's supervisor, started in the background by up.
func serve(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	err := k8stest.ServeNode(ctx, dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8snode:", err)
		return 1
	}
	return 0
}

// running is the pid of the node's supervisor when it runs.
func running(dir string) int {
	b, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.Contains(string(cmdline), "serve") {
		return 0 // the pid was reused
	}
	return pid
}

// up starts the supervisor unless it runs, and waits until the node is ready.
func up(dir string) (k8stest.NodeEnv, error) {
	if pid := running(dir); pid != 0 {
		if env, err := k8stest.ReadNodeEnv(dir); err == nil {
			return env, nil
		}
		return waitUp(dir, pid)
	}
	if err := k8stest.CleanNode(dir); err != nil {
		return k8stest.NodeEnv{}, fmt.Errorf("clean what an earlier node left in %s: %w", dir, err)
	}
	self, err := os.Executable()
	if err != nil {
		return k8stest.NodeEnv{}, err
	}
	log, err := os.Create(logFile(dir))
	if err != nil {
		return k8stest.NodeEnv{}, err
	}
	defer log.Close()
	cmd := exec.Command(self, "serve", "--dir", dir)
	cmd.Stdout, cmd.Stderr = log, log
	// A session of its own: the node outlives `make cluster`, and a Ctrl-C meant for the
	// caller's foreground job does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return k8stest.NodeEnv{}, err
	}
	if err := os.WriteFile(pidFile(dir), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return k8stest.NodeEnv{}, err
	}
	go func() { _ = cmd.Wait() }()
	return waitUp(dir, cmd.Process.Pid)
}

func waitUp(dir string, pid int) (k8stest.NodeEnv, error) {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if env, err := k8stest.ReadNodeEnv(dir); err == nil {
			return env, nil
		}
		if syscall.Kill(pid, 0) != nil || zombie(pid) {
			return k8stest.NodeEnv{}, fmt.Errorf("the node did not start; its log (%s):\n%s", logFile(dir), tail(logFile(dir)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return k8stest.NodeEnv{}, fmt.Errorf("the node was not ready after 10 minutes; its log (%s):\n%s", logFile(dir), tail(logFile(dir)))
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

func tail(file string) string {
	b, _ := os.ReadFile(file)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

// down stops the supervisor (it tears the node down), then undoes what a killed one left.
func down(dir string) error {
	var errs []error
	if pid := running(dir); pid != 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(2 * time.Minute)
		for syscall.Kill(pid, 0) == nil && !zombie(pid) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			errs = append(errs, fmt.Errorf("the node's supervisor (pid %d) did not stop within 2 minutes; killed", pid))
		}
	}
	if err := k8stest.CleanNode(dir); err != nil {
		errs = append(errs, err)
	}
	_ = os.Remove(pidFile(dir))
	if b, err := os.ReadFile(logFile(dir)); err == nil && strings.Contains(string(b), "k8snode: ") {
		// The supervisor's own errors (a teardown that failed) are the caller's to see.
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "k8snode: real node:") {
				errs = append(errs, errors.New(line))
			}
		}
	}
	return errors.Join(errs...)
}

// run brings the node up, runs args with the node in the environment, and brings it down
// whatever happens; an interrupt goes to the command, and the node still comes down.
func run(dir string, args []string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// A node someone started with `make cluster` is used, and left running.
	theirs := running(dir) != 0
	_, err := up(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8snode:", err)
		if theirs {
			return 1
		}
		if derr := down(dir); derr != nil {
			fmt.Fprintln(os.Stderr, "k8snode:", derr)
		}
		return 1
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), k8stest.NodeDirEnv+"="+dir)
	code := 0
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "k8snode:", err)
		code = 1
	} else {
		done := make(chan struct{})
		go func() {
			for {
				select {
				case s := <-sigs:
					_ = cmd.Process.Signal(s)
				case <-done:
					return
				}
			}
		}()
		err := cmd.Wait()
		close(done)
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
			if code < 0 {
				code = 1
			}
		case err != nil:
			fmt.Fprintln(os.Stderr, "k8snode:", err)
			code = 1
		}
	}
	if theirs {
		return code
	}
	if err := down(dir); err != nil {
		fmt.Fprintln(os.Stderr, "k8snode: stopping the node:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
