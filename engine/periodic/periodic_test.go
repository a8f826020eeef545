package periodic

import (
	"sync/atomic"
	"testing"
	"time"
)

// Every calls f again and again until stop, and never after stop has returned, also when stop
// comes while f runs.
func TestEvery(t *testing.T) {
	var calls atomic.Int32
	running := make(chan struct{}, 1)
	stop := Every(time.Millisecond, func() {
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
