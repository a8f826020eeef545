package k8stest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes a component go when the test binary does, even if it is killed before
// its cleanups run: a leftover etcd or API server would hold its port and files.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
