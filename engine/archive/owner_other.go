//go:build !unix

package archive

import "io/fs"

// statOwner is 0, 0 where files have no numeric owner: archives record root, and restores there
// never apply owners (see Limits.Owners).
func statOwner(fs.FileInfo) (uid, gid int) { return 0, 0 }
