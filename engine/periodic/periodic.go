// Package periodic runs a function every so often in the background until told to stop: the
// engine's keep-alives of a hold (an operation's heartbeat, the sweep lock's renewal) and the
// archive restore's early flushes.
package periodic

import (
	"context"
	"sync"
	"time"
)

// Every calls f every d, in a goroutine of its own, the first time d after the call, until
// stop is called. The pause is counted from the end of one call, so a slow f is never called
// twice at once nor in a burst to catch up. stop waits for a call in progress: once it returns,
// f runs no more. Each call's ctx, from parent, ends after d or when stop is called: a call that
// hangs (a store gone mid-operation) holds neither the next call nor stop for longer.
func Every(parent context.Context, d time.Duration, f func(ctx context.Context)) (stop func()) {
	done := make(chan struct{})
	stopped, cancel := context.WithCancel(parent)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			select {
			case <-done: // stop came while the timer fired too: no new call
				return
			default:
			}
			ctx, cancelCall := context.WithTimeout(stopped, d)
			f(ctx)
			cancelCall()
			t.Reset(d)
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done); cancel() })
		wg.Wait()
	}
}
