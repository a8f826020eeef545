package testproc

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes a test server go when the test binary does, even if it is killed before
// its cleanups run.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
