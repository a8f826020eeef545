// Package notifiertest is the contract suite every engine.Notifier implementation passes: the
// in-process Bus, PostgreSQL's LISTEN/NOTIFY and the webhook's wrapper. It uses only the
// interface, so what the console and `sailtui events` rely on holds for each.
package notifiertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// wait bounds every delivery the suite waits for.
const wait = 15 * time.Second

// Run runs the suite. open returns a publisher and a listener that are views of one notifier
// (the same value in process; two processes' handles on one database for one that crosses
// processes), fresh for each test.
func Run(t *testing.T, open func(t *testing.T) (pub, sub engine.Notifier)) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, pub, sub engine.Notifier)
	}{
		{"Delivered", testDelivered},
		{"EverySubscriber", testEverySubscriber},
		{"InOrder", testInOrder},
		{"ClosesWithContext", testClosesWithContext},
		{"SlowSubscriberNeverBlocks", testSlowSubscriber},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, sub := open(t)
			tc.fn(t, pub, sub)
		})
	}
}

// subscribe subscribes and returns once the subscription hears pub: a notifier may start
// listening after Subscribe returns, and what is published before is not promised.
func subscribe(t *testing.T, ctx context.Context, pub, sub engine.Notifier) <-chan engine.Event {
	t.Helper()
	ch, err := sub.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	deadline := time.Now().Add(wait)
	for i := 0; time.Now().Before(deadline); i++ {
		probe := fmt.Sprintf("probe-%d", i)
		if err := pub.Publish(ctx, engine.Event{Kind: "probe", Slug: probe}); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		tick := time.After(200 * time.Millisecond)
	drain:
		for {
			select {
			case e := <-ch:
				if e.Kind == "probe" {
					// Probes published before this one may still come: drain a moment.
					for {
						select {
						case <-ch:
						case <-time.After(300 * time.Millisecond):
							return ch
						}
					}
				}
			case <-tick:
				break drain
			}
		}
	}
	t.Fatal("the subscription never heard the publisher")
	return nil
}

// next is the next event that is not the notifier's own (a resync after a reconnect) nor a
// probe.
func next(t *testing.T, ch <-chan engine.Event) engine.Event {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatal("the subscription closed")
			}
			if e.Kind == "probe" || e.Kind == "resync" {
				continue
			}
			return e
		case <-timeout:
			t.Fatalf("no event within %s", wait)
		}
	}
}

func event(i int) engine.Event {
	return engine.Event{Time: time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC).Add(time.Duration(i) * time.Second),
		ProjectID: fmt.Sprintf("id-%d", i), Slug: fmt.Sprintf("shop-%d", i), From: engine.StatusActive, To: engine.StatusHibernated,
		Kind: "status", Reason: fmt.Sprintf("reason «%d»", i), Snapshot: fmt.Sprintf("snap-%d", i)}
}

func same(a, b engine.Event) bool {
	return a.Time.Equal(b.Time) && a.ProjectID == b.ProjectID && a.Slug == b.Slug && a.From == b.From && a.To == b.To &&
		a.Kind == b.Kind && a.Reason == b.Reason && a.Snapshot == b.Snapshot
}

// An event arrives whole.
func testDelivered(t *testing.T, pub, sub engine.Notifier) {
	ctx := t.Context()
	ch := subscribe(t, ctx, pub, sub)
	want := event(1)
	if err := pub.Publish(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got := next(t, ch); !same(got, want) {
		t.Fatalf("got %+v; want %+v", got, want)
	}
}

// Every subscription hears every event.
func testEverySubscriber(t *testing.T, pub, sub engine.Notifier) {
	ctx := t.Context()
	a := subscribe(t, ctx, pub, sub)
	b := subscribe(t, ctx, pub, sub)
	want := event(2)
	if err := pub.Publish(ctx, want); err != nil {
		t.Fatal(err)
	}
	for i, ch := range []<-chan engine.Event{a, b} {
		if got := next(t, ch); !same(got, want) {
			t.Fatalf("subscriber %d got %+v; want %+v", i, got, want)
		}
	}
}

// Events published one after another arrive in that order.
func testInOrder(t *testing.T, pub, sub engine.Notifier) {
	ctx := t.Context()
	ch := subscribe(t, ctx, pub, sub)
	for i := range 20 {
		if err := pub.Publish(ctx, event(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if got := next(t, ch); got.Slug != event(i).Slug {
			t.Fatalf("event %d: %s; want %s", i, got.Slug, event(i).Slug)
		}
	}
}

// A subscription's channel closes when its context ends.
func testClosesWithContext(t *testing.T, pub, sub engine.Notifier) {
	ctx, cancel := context.WithCancel(t.Context())
	ch := subscribe(t, ctx, pub, sub)
	cancel()
	timeout := time.After(wait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("the channel is still open %s after its context ended", wait)
		}
	}
}

// A subscriber that reads nothing never holds up the publisher: it may lose events, the
// engine never waits.
func testSlowSubscriber(t *testing.T, pub, sub engine.Notifier) {
	ctx := t.Context()
	_ = subscribe(t, ctx, pub, sub) // never read again
	done := make(chan error, 1)
	go func() {
		for i := range 2000 {
			if err := pub.Publish(ctx, event(i)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("2000 publishes did not finish with a subscriber that reads nothing")
	}
}
