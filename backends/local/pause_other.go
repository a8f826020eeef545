//go:build !linux

package local

// Without /proc no container process runs (StartContainer refuses), so there is never a group
// to pause or watch.

type pauseWatchdog struct{}

func startPauseWatchdog([]pausedGroup) (*pauseWatchdog, error) { return nil, errUnsupported }
func (*pauseWatchdog) stop()                                   {}
func unstoppedMember(map[int]bool) (int, byte, bool)           { return 0, 0, false }
