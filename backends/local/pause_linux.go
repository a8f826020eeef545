//go:build linux

package local

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// pauseWatchdog is a shell that sends SIGCONT to the paused groups as soon as its stdin reaches
// end of file. Only this process holds the pipe's write end (close-on-exec keeps it out of
// every child), so the kernel closes it when this process dies, however it dies.
type pauseWatchdog struct {
	cmd *exec.Cmd
	w   *os.File
}

func startPauseWatchdog(groups []pausedGroup) (*pauseWatchdog, error) {
	rd, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	args := []string{"-c", `read _; kill -s CONT -- "$@"`, "sailtui-pause-watchdog"}
	for _, g := range groups {
		args = append(args, "-"+strconv.Itoa(g.PID))
	}
	cmd := exec.Command("/bin/sh", args...)
	// Not this process's environment: it may carry store or object-store credentials, and
	// the watchdog needs nothing of it (kill is a shell builtin).
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stdin = rd
	// A session of its own: a ^C or a hangup of this process's terminal must not take the
	// watchdog down with the process it watches.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	_ = rd.Close()
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return &pauseWatchdog{cmd: cmd, w: w}, nil
}

// stop ends the watchdog without letting it signal: the caller continued the groups itself,
// and a late SIGCONT could land in a pause taken after this one.
func (d *pauseWatchdog) stop() {
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	_ = d.w.Close()
}

// unstoppedMember finds a process of one of the groups pgids with a thread that is neither
// stopped nor dead. A process stops once all its threads have: each is looked at.
func unstoppedMember(pgids map[int]bool) (pid int, state byte, found bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, '?', true
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, '?', true
	}
	type member struct {
		pid, ppid int
		state     byte
	}
	var members []member
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		st, err := parseProcStat(b)
		if err != nil || !pgids[st.pgrp] || dead(st.state) {
			continue
		}
		members = append(members, member{pid: pid, ppid: statPPID(b), state: st.state})
	}
	for _, m := range members {
		switch {
		case stoppedState(m.state):
			if tid, state, ok := unstoppedThread(m.pid); ok {
				return tid, state, true
			}
		case m.state == 'D' && inVfork(m.pid):
			// A shell (dash, Go's os/exec) that vforked waits in uninterruptible sleep until
			// its child execs or exits, and never gets to stop itself while that child is
			// stopped. It cannot run a single instruction before then either: it counts as
			// stopped when that child does.
			stoppedChild := false
			for _, c := range members {
				stoppedChild = stoppedChild || (c.ppid == m.pid && stoppedState(c.state))
			}
			if !stoppedChild {
				return m.pid, m.state, true
			}
		default:
			return m.pid, m.state, true
		}
	}
	return 0, 0, false
}

// inVfork reports whether a process in uninterruptible sleep waits in fork/clone (its vfork
// child has not exec'd yet) rather than for a disk. When the kernel does not say (wchan "0"
// without kallsyms), the stopped child alone decides.
func inVfork(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
	if err != nil {
		return true
	}
	w := string(b)
	return w == "0" || w == "" || strings.Contains(w, "fork") || strings.Contains(w, "clone")
}

// statPPID is field 4 of a /proc stat line (0 when it cannot be read).
func statPPID(b []byte) int {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(string(f[1]))
	return n
}

func unstoppedThread(pid int) (tid int, state byte, found bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tids, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, false // the process is gone
	}
	for _, t := range tids {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/stat")
		if err != nil {
			continue // the thread is gone
		}
		st, err := parseProcStat(b)
		if err != nil || dead(st.state) || stoppedState(st.state) {
			continue
		}
		tid, _ := strconv.Atoi(t.Name())
		return tid, st.state, true
	}
	return 0, 0, false
}

// stoppedState is 'T' (stopped by a signal) or 't' (stopped by a tracer).
func stoppedState(s byte) bool { return s == 'T' || s == 't' }
