//go:build !linux

package local

import (
	"errors"
	"syscall"
	"time"
)

// The process side of the local runtime reads /proc to tell its own processes from strangers
// that reuse their pids; without it, starting and signalling processes is refused rather than
// done unsafely. File operations, logs and git work everywhere.
var errUnsupported = errors.New("local runtime processes need Linux (/proc)")

const supported = false

func detachedAttr() *syscall.SysProcAttr            { return nil }
func groupAttr() *syscall.SysProcAttr               { return nil }
func terminalAttr() *syscall.SysProcAttr            { return nil }
func procStartTicks(int) (uint64, error)            { return 0, errUnsupported }
func groupAlive(int, uint64) bool                   { return false }
func groupHasLiveMembers(int) bool                  { return false }
func signalGroup(int, uint64, syscall.Signal) error { return errUnsupported }
func killGroup(int, syscall.Signal) error           { return errUnsupported }
func killSession(int)                               {}
func sessionAlive(int, uint64) bool                 { return false }
func exitCode(any) (int, bool)                      { return 0, false }

type groupUsage struct {
	cpu   time.Duration
	rss   int64
	procs int
}

func readGroupUsage(map[int]bool) (map[int]groupUsage, error) { return nil, errUnsupported }
