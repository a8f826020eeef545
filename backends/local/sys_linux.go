//go:build linux

package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// detachedAttr puts a container in a session of its own: it leads its own process group (so
// the whole group can be signalled) and has no controlling terminal, so it keeps running when
// the console that started it exits or its terminal goes away.
func detachedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// groupAttr gives an exec'd command a process group of its own, so a timeout can kill
// everything it spawned, not only the direct child.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// terminalAttr makes a terminal exec's command lead a session whose controlling terminal is
// its stdin, as a login on a terminal does: job control works, and the session can be killed.
func terminalAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true}
}

// procStat is the part of /proc/<pid>/stat the runtime needs.
type procStat struct {
	state byte
	pgrp  int
	// session is field 6: a terminal exec's shell leads one, and its jobs are groups in it.
	session int
	// start is field 22, the start time in clock ticks since boot: together with the pid it
	// names one process for the life of the machine.
	start uint64
	// cpu is fields 14 to 17, the CPU time of the process and of its children it waited for,
	// in clock ticks; rss is field 24, its resident set in pages (usage.go).
	cpu uint64
	rss uint64
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat reads a stat line. The command name (field 2) is in parentheses and may itself
// contain spaces and parentheses, so fields are counted from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat line")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[11] to f[14] fields 14 to 17 (utime,
	// stime, cutime, cstime), f[19] field 22 (starttime), f[21] field 24 (rss).
	if len(f) < 22 || len(f[0]) != 1 {
		return procStat{}, errors.New("short /proc stat line")
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return procStat{}, fmt.Errorf("bad pgrp in /proc stat: %w", err)
	}
	sid, err := strconv.Atoi(string(f[3]))
	if err != nil {
		return procStat{}, fmt.Errorf("bad session in /proc stat: %w", err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("bad starttime in /proc stat: %w", err)
	}
	st := procStat{state: f[0][0], pgrp: pgrp, session: sid, start: start}
	for _, v := range f[11:15] {
		// cutime and cstime are signed in the kernel's format; they are never negative.
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("bad CPU time in /proc stat: %w", err)
		}
		st.cpu += n
	}
	if st.rss, err = strconv.ParseUint(string(f[21]), 10, 64); err != nil {
		return procStat{}, fmt.Errorf("bad rss in /proc stat: %w", err)
	}
	return st, nil
}

func procStartTicks(pid int) (uint64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	return st.start, nil
}

func dead(state byte) bool { return state == 'Z' || state == 'X' || state == 'x' }

// groupAlive reports whether the process group led by the recorded process still has a live
// member. A pid is never handed out again while a process group or session still carries that
// number, so: when pid runs with another start time, ours is gone and so is its group; when the
// leader is gone (or a zombie), group members still running are ours.
func groupAlive(pid int, start uint64) bool {
	if pid <= 1 {
		return false
	}
	st, err := readProcStat(pid)
	if err == nil {
		if st.start != start {
			return false
		}
		if !dead(st.state) {
			return true
		}
	}
	return groupHasLiveMembers(pid)
}

// groupHasLiveMembers scans /proc for a process of group pgid that has not exited. Only used
// when the leader is gone, so the cost of the scan is paid rarely.
func groupHasLiveMembers(pgid int) bool {
	return len(liveProcs(func(st procStat) bool { return st.pgrp == pgid })) > 0
}

// liveProcs scans /proc for the processes that have not exited and match.
func liveProcs(match func(procStat) bool) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil
	}
	var out []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue
		}
		if match(st) && !dead(st.state) {
			out = append(out, pid)
		}
	}
	return out
}

// killSession kills every process of session sid, in whatever process group job control put
// it, and waits a moment for them to be gone. The leader's pid cannot be reused while a
// process of its session lives.
func killSession(sid int) {
	if sid <= 1 {
		return
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		pids := liveProcs(func(st procStat) bool { return st.session == sid })
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sessionAlive reports whether the session led by the recorded process still has a live
// process, by the same reasoning as groupAlive: a session id is not handed out again while a
// process of the session lives, so when the pid runs with another start time ours is gone.
func sessionAlive(sid int, start uint64) bool {
	if sid <= 1 {
		return false
	}
	if st, err := readProcStat(sid); err == nil && st.start != start {
		return false
	}
	return len(liveProcs(func(st procStat) bool { return st.session == sid })) > 0
}

// signalGroup signals the process group of the recorded process, unless its pid now belongs to
// another process (then the group is gone and the number is someone else's).
func signalGroup(pid int, start uint64, sig syscall.Signal) error {
	if pid <= 1 {
		return nil
	}
	if st, err := readProcStat(pid); err == nil && st.start != start {
		return nil
	}
	return killGroup(pid, sig)
}

func killGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// exitCode turns a wait status into a shell-style exit code: the status for a normal exit,
// 128+signal for a process killed by a signal.
func exitCode(ws any) (int, bool) {
	w, ok := ws.(syscall.WaitStatus)
	if !ok {
		return 0, false
	}
	if w.Signaled() {
		return 128 + int(w.Signal()), true
	}
	return w.ExitStatus(), true
}

const supported = true
