package s3test

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the server go when the test binary does, even if it is killed before
// its cleanups run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
