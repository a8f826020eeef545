//go:build linux

package local

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sailtui/sailtui/engine"
)

// openPTY opens a pseudo-terminal pair. The master stays non-blocking, in Go's poller, so
// closing it ends a read that waits on it: a process the command left behind may hold the
// terminal open for good, and an exec must still end. Its ioctls go through SyscallConn for
// that reason (File.Fd would put it back into blocking mode).
func openPTY() (master, tty *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	var n int
	if err := control(master, func(fd int) error {
		var err error
		if n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN); err != nil {
			return fmt.Errorf("ptsname: %w", err)
		}
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlockpt: %w", err)
		}
		return nil
	}); err != nil {
		_ = master.Close()
		return nil, nil, err
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		_ = master.Close()
		return nil, nil, err
	}
	return master, tty, nil
}

// setPTYSize sets the terminal's size; the kernel tells its foreground group (SIGWINCH).
func setPTYSize(master *os.File, sz engine.TermSize) error {
	return control(master, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: sz.Rows, Col: sz.Cols})
	})
}

// control runs fn on f's descriptor without taking it out of the poller.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
