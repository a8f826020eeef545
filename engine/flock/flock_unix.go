//go:build unix

package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// poll is the pause between two tries of a lock another holder has.
const poll = 10 * time.Millisecond

// Lock takes an exclusive flock on path, polling so that ctx can end the wait (with ctx's
// error). Without create, a missing lock file is an error (fs.ErrNotExist) rather than made
// again. The returned func releases the lock.
func Lock(ctx context.Context, path string, create bool) (unlock func(), err error) {
	// A lock file is never opened through a link: one put in its place (a kept log's rotation
	// lock sits beside the log) would make the open create or lock a file anywhere.
	flags := os.O_RDWR | syscall.O_NOFOLLOW
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("lock file %s is a symbolic link, which sailtui does not follow: remove it (rm %s) and try again: %w", path, path, err)
	}
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}
