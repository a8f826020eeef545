package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/notifiertest"
)

// process is what one sailtui process has: its own pool and its own notifier.
type process struct {
	store    *Store
	notifier *Notifier
	events   <-chan engine.Event
}

func startProcess(t *testing.T, dsn string) process {
	t.Helper()
	s := openDSN(t, dsn)
	n, err := NewNotifier(t.Context(), s.Pool())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	ch, err := n.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return process{store: s, notifier: n, events: ch}
}

func bySlug(slug string) func(engine.Event) bool {
	return func(e engine.Event) bool { return e.Slug == slug }
}

func TestNotifierAcrossProcesses(t *testing.T) {
	dsn := pgtest.Start(t)
	a, b := startProcess(t, dsn), startProcess(t, dsn)

	sent := engine.Event{Time: time.Now().UTC().Truncate(time.Microsecond), ProjectID: "p1", Slug: "shop",
		From: engine.StatusActive, To: engine.StatusHibernating, Kind: "status", Reason: "idle 40m"}
	if err := a.notifier.Publish(t.Context(), sent); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]process{"the other process": b, "the publisher itself": a} {
		got, ok := recv(t, p.events, time.Second, bySlug("shop"))
		if !ok {
			t.Fatalf("event not delivered to %s within 1s", name)
		}
		if !got.Time.Equal(sent.Time) || got.ProjectID != sent.ProjectID || got.From != sent.From ||
			got.To != sent.To || got.Kind != sent.Kind || got.Reason != sent.Reason {
			t.Errorf("%s got %+v, want %+v", name, got, sent)
		}
	}
}

// The listening connection is killed by the server: the notifier says so (a resync event) and
// listens again; events published after that arrive.
func TestNotifierReconnects(t *testing.T) {
	dsn := pgtest.Start(t)
	a, b := startProcess(t, dsn), startProcess(t, dsn)
	old := b.notifier.pid.Load()
	if _, err := a.store.pool.Exec(t.Context(), `SELECT pg_terminate_backend($1)`, int32(old)); err != nil {
		t.Fatal(err)
	}
	resync, ok := recv(t, b.events, 10*time.Second, func(e engine.Event) bool { return e.Kind == KindResync })
	if !ok {
		t.Fatal("no resync event within 10s of the listener's connection being terminated")
	}
	t.Logf("resync: %s", resync.Reason)
	if !b.notifier.Listening() || b.notifier.pid.Load() == old {
		t.Fatalf("after resync: listening=%v on backend %d (was %d)", b.notifier.Listening(), b.notifier.pid.Load(), old)
	}
	if err := a.notifier.Publish(t.Context(), engine.Event{Slug: "after", Kind: "status"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := recv(t, b.events, time.Second, bySlug("after")); !ok {
		t.Fatal("event published after the reconnect not delivered within 1s")
	}
}

func TestNotifierLifecycle(t *testing.T) {
	dsn := pgtest.Start(t)
	s := openDSN(t, dsn)
	n, err := NewNotifier(t.Context(), s.Pool())
	if err != nil {
		t.Fatal(err)
	}
	if n.Listening() {
		t.Error("listening before any Subscribe")
	}
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := n.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Error("event after the subscription ended")
		}
	case <-time.After(time.Second):
		t.Error("channel not closed after its context ended")
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if n.Listening() {
		t.Error("listening after Close")
	}
	if _, err := n.Subscribe(t.Context()); err == nil {
		t.Error("Subscribe after Close succeeded")
	}
	// The backend exits a moment after its client hung up.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var count int
		if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, int32(n.pid.Load())).Scan(&count); err != nil {
			t.Fatal(err)
		}
		if count == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("listening connection still open 5s after Close")
		}
	}
}

// A Reason too long for a NOTIFY payload is cut on a rune boundary; the event still goes out.
func TestPublishTruncatesReason(t *testing.T) {
	p := startProcess(t, pgtest.Start(t))
	long := strings.Repeat("é<ü>", 3000) // 18000 bytes, HTML-escaped to more in JSON
	if err := p.notifier.Publish(t.Context(), engine.Event{Slug: "verbose", Reason: long}); err != nil {
		t.Fatal(err)
	}
	got, ok := recv(t, p.events, time.Second, bySlug("verbose"))
	if !ok {
		t.Fatal("truncated event not delivered")
	}
	cut, found := strings.CutSuffix(got.Reason, "…")
	if !found || !utf8.ValidString(got.Reason) || !strings.HasPrefix(long, cut) || len(cut) < 1000 {
		t.Errorf("reason of %d bytes: not a cut prefix of the original ending in …", len(got.Reason))
	}
}

func TestEncodeEventLimits(t *testing.T) {
	short, err := encodeEvent(engine.Event{Slug: "s", Reason: "fine"})
	if err != nil || !strings.Contains(short, `"reason":"fine"`) {
		t.Errorf("short event: %q, %v", short, err)
	}
	for _, n := range []int{maxPayload - 60, maxPayload - 20, maxPayload, maxPayload + 1, 3 * maxPayload} {
		payload, err := encodeEvent(engine.Event{Slug: "s", Reason: strings.Repeat("x", n)})
		if err != nil || len(payload) > maxPayload {
			t.Errorf("reason of %d bytes: payload %d bytes, err %v", n, len(payload), err)
		}
	}
	_, err = encodeEvent(engine.Event{Slug: strings.Repeat("s", 9000)})
	if !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("event too big without a reason to cut: err = %v, want ErrBadInput", err)
	}
}

// A quiet listening connection is pinged between waits; the waits that time out for it must
// leave the connection listening, not make the notifier reconnect.
func TestNotifierPingsQuietConnection(t *testing.T) {
	dsn := pgtest.Start(t)
	a := startProcess(t, dsn)
	s := openDSN(t, dsn)
	n, err := NewNotifier(t.Context(), s.Pool())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.pingEvery = 10 * time.Millisecond
	ch, err := n.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pid := n.pid.Load()
	if e, ok := recv(t, ch, 500*time.Millisecond, func(engine.Event) bool { return true }); ok {
		t.Fatalf("event while nothing was published: %+v", e)
	}
	if !n.Listening() || n.pid.Load() != pid {
		t.Fatalf("after quiet waits: listening=%v on backend %d (was %d)", n.Listening(), n.pid.Load(), pid)
	}
	if err := a.notifier.Publish(t.Context(), engine.Event{Slug: "wake", Kind: "status"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := recv(t, ch, time.Second, bySlug("wake")); !ok {
		t.Fatal("event not delivered after quiet waits")
	}
}

// The Notifier contract, across two processes' notifiers on one database.
func TestNotifierContract(t *testing.T) {
	dsn := pgtest.Start(t)
	notifiertest.Run(t, func(t *testing.T) (engine.Notifier, engine.Notifier) {
		open := func() *Notifier {
			n, err := NewNotifier(t.Context(), openDSN(t, dsn).Pool())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close() })
			return n
		}
		return open(), open()
	})
}
