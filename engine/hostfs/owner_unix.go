//go:build unix

package hostfs

import (
	"io/fs"
	"syscall"
)

func statOwner(fi fs.FileInfo) (Owner, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Owner{}, false
	}
	return Owner{UID: int(st.Uid), GID: int(st.Gid)}, true
}
