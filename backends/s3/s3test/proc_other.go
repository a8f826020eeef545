//go:build !linux

package s3test

import "os/exec"

// dieWithParent has no portable equivalent of Linux's parent-death signal; the cleanups stop
// the server.
func dieWithParent(*exec.Cmd) {}
