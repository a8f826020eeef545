//go:build !unix

package logfile

// lock is a no-op where flock is missing: rotation races between writers of one log are then
// possible, and cost at most the rotated file.
func lock(string) (func(), error) { return func() {}, nil }
