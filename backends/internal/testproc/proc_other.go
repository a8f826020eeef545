//go:build !linux

package testproc

import "os/exec"

// DieWithParent does nothing where the kernel cannot tie a child to its parent's life.
func DieWithParent(*exec.Cmd) {}
