//go:build unix && !linux

package archive

import (
	"io/fs"
	"syscall"
)

// statOwner is the numeric owner of the entry fi describes (its stat, as the walk took it).
func statOwner(fi fs.FileInfo) (uid, gid int) {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), int(s.Gid)
	}
	return 0, 0
}
