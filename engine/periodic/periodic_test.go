package periodic

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// Every calls f again and again until stop, and never after stop has returned, also when stop
// comes while f runs.
func TestEvery(t *testing.T) {
	var calls atomic.Int32
	running := make(chan struct{}, 1)
	stop := Every(t.Context(), time.Millisecond, func(context.Context) {
		if calls.Add(1) == 3 {
			running <- struct{}{}
			time.Sleep(50 * time.Millisecond) // stop arrives during this call
		}
	})
	<-running
	stop()
	n := calls.Load()
	if n != 3 {
		t.Fatalf("%d calls when stop returned, want the 3 before it (the third one finished)", n)
	}
	time.Sleep(20 * time.Millisecond)
	if got := calls.Load(); got != n {
		t.Errorf("%d calls after stop returned, %d when it did", got, n)
	}
	stop() // a second stop is harmless
}

// A call that hangs is bounded: its ctx ends after the interval, and at once when stop comes,
// so neither the next call nor stop waits for a store that went away.
func TestEveryBoundsAHungCall(t *testing.T) {
	started, ended := make(chan struct{}, 8), make(chan error, 8)
	stop := Every(t.Context(), 30*time.Millisecond, func(ctx context.Context) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
	})
	<-started
	if err := <-ended; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a hung call ended with %v, want its interval's deadline", err)
	}
	<-started // the next call is hung now
	stop()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the call in flight at stop ended with %v, want it cancelled", err)
	}
}
