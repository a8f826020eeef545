//go:build !linux

package k8stest

import "os/exec"

// dieWithParent has no portable equivalent of Linux's parent-death signal; the cleanups stop
// the components.
func dieWithParent(*exec.Cmd) {}
