//go:build unix

package archivetest

import "syscall"

// FlushDisk writes back dirty pages, so that one side of a benchmark does not pay for the
// other's writes.
func FlushDisk() { syscall.Sync() }
