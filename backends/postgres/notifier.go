package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sailtui/sailtui/engine"
)

// Channel is the NOTIFY channel sailtui's events travel on.
const Channel = "sailtui_events"

// KindResync is the Kind of the event a subscriber receives after the notifier's connection was
// lost and made again: events published in between were lost, so views should re-read the store.
const KindResync = "resync"

// maxPayload is the largest NOTIFY payload PostgreSQL accepts (it must be shorter than 8000 bytes).
const maxPayload = 7999

// Reconnect backoff and liveness checks of the listening connection.
const (
	minBackoff       = 100 * time.Millisecond
	maxBackoff       = 5 * time.Second
	defaultPingEvery = 30 * time.Second
	pingTimeout      = 5 * time.Second
)

// Notifier carries engine events between processes with LISTEN/NOTIFY. Publish sends through
// the pool; one dedicated connection per Notifier listens, started by the first Subscribe, and
// hands events to an in-process Bus that fans them out. Every listener receives every event,
// its own process's included.
type Notifier struct {
	pool      *pgxpool.Pool
	bus       *engine.Bus
	pingEvery time.Duration // a quiet listening connection is pinged this often

	mu     sync.Mutex
	closed bool
	cancel context.CancelFunc // stops the listener; nil until it runs
	done   chan struct{}      // closed when the listener has stopped

	listening atomic.Bool
	pid       atomic.Uint32 // the listening backend, for tests
}

var _ engine.Notifier = (*Notifier)(nil)

// NewNotifier returns a Notifier on the database of pool (typically Store.Pool()). It checks
// that the database answers; the listening connection is made by the first Subscribe. LISTEN
// needs a session of its own: PostgreSQL itself or a session-mode pooler, not a
// transaction-mode PgBouncer.
func NewNotifier(ctx context.Context, pool *pgxpool.Pool) (*Notifier, error) {
	if err := pool.Ping(ctx); err != nil {
		return nil, fmt.Errorf("notifier on %s: %w", describe(pool.Config().ConnConfig), err)
	}
	return &Notifier{pool: pool, bus: engine.NewBus(), pingEvery: defaultPingEvery}, nil
}

// Publish sends e to every subscriber of every process on the database. A Reason too long for
// a NOTIFY payload is cut short.
func (n *Notifier) Publish(ctx context.Context, e engine.Event) error {
	payload, err := encodeEvent(e)
	if err != nil {
		return fmt.Errorf("publish %s event of %s: %w", e.Kind, e.Slug, err)
	}
	if _, err := n.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, payload); err != nil {
		return fmt.Errorf("publish %s event of %s: %w", e.Kind, e.Slug, badInput(err))
	}
	return nil
}

// encodeEvent marshals e to JSON no longer than maxPayload, cutting Reason (on a rune
// boundary, marked with "…") when needed.
func encodeEvent(e engine.Event) (string, error) {
	b, err := marshal(e)
	if err != nil || len(b) <= maxPayload {
		return string(b), err
	}
	reason := e.Reason
	// cut rounds down to a rune boundary; the JSON grows with the kept prefix, so the longest
	// prefix that fits is found by bisection (escaping makes its length hard to predict).
	cut := func(k int) int {
		for k > 0 && k < len(reason) && !utf8.RuneStart(reason[k]) {
			k--
		}
		return k
	}
	fits := func(k int) ([]byte, bool) {
		e.Reason = reason[:cut(k)] + "…"
		b, err := marshal(e)
		return b, err == nil && len(b) <= maxPayload
	}
	best, ok := fits(0)
	if !ok {
		return "", fmt.Errorf("%w: event is %d bytes without its reason, more than a NOTIFY payload takes (%d)",
			engine.ErrBadInput, len(best), maxPayload)
	}
	lo, hi := 0, len(reason) // reason[:lo] fits, reason[:hi] does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if b, ok := fits(mid); ok {
			lo, best = mid, b
		} else {
			hi = mid
		}
	}
	return string(best), nil
}

// marshal is json.Marshal without HTML escaping, which would triple the size of every '<'.
func marshal(e engine.Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Subscribe delivers events until ctx ends; the channel is closed then. The first Subscribe
// makes the listening connection and fails when it cannot. Later, when that connection drops,
// the notifier reconnects with backoff; events published meanwhile are lost, and subscribers
// get a KindResync event once it listens again.
func (n *Notifier) Subscribe(ctx context.Context) (<-chan engine.Event, error) {
	if err := n.listen(ctx); err != nil {
		return nil, fmt.Errorf("subscribe to %s events: %w", Channel, err)
	}
	return n.bus.Subscribe(ctx)
}

// Listening reports whether the listening connection is up (false before the first Subscribe).
func (n *Notifier) Listening() bool { return n.listening.Load() }

// Close stops listening. Subscribers' channels close when their contexts end, as always.
func (n *Notifier) Close() error {
	n.mu.Lock()
	n.closed = true
	cancel, done := n.cancel, n.done
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

// listen starts the listener unless it runs. Holding mu while connecting makes concurrent first
// Subscribes wait for one connection instead of making several.
func (n *Notifier) listen(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return errors.New("notifier is closed")
	case n.cancel != nil:
		return nil
	}
	conn, err := n.connect(ctx)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	go n.run(lctx, conn)
	return nil
}

// connect makes a connection configured like the pool's and LISTENs on it.
func (n *Notifier) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, n.pool.Config().ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{Channel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("listen: %w", err)
	}
	n.pid.Store(conn.PgConn().PID())
	n.listening.Store(true)
	return conn, nil
}

// run receives notifications until ctx ends, reconnecting whenever the connection fails.
func (n *Notifier) run(ctx context.Context, conn *pgx.Conn) {
	defer close(n.done)
	for {
		err := n.receive(ctx, conn)
		n.listening.Store(false)
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		lost := time.Now()
		if conn = n.reconnect(ctx); conn == nil {
			return
		}
		_ = n.bus.Publish(ctx, engine.Event{Time: time.Now().UTC(), Kind: KindResync,
			Reason: fmt.Sprintf("event stream was down for %s (%v); events in between were lost",
				time.Since(lost).Round(time.Millisecond), err)})
	}
}

// receive hands notifications to the bus until the connection fails. A connection that died
// without a word (a partition, a NAT timeout) never fails a wait, so a quiet one is pinged.
func (n *Notifier) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, n.pingEvery)
		msg, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil && ctx.Err() == nil && pgconn.Timeout(err) {
			// A timed-out wait leaves the connection usable.
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		if err != nil {
			return err
		}
		var e engine.Event
		if err := json.Unmarshal([]byte(msg.Payload), &e); err != nil {
			continue // not ours: someone else NOTIFYing on the channel
		}
		_ = n.bus.Publish(ctx, e)
	}
}

// reconnect tries until it listens again or ctx ends (nil then), backing off with jitter so a
// fleet of consoles does not reconnect in lockstep after a database restart.
func (n *Notifier) reconnect(ctx context.Context) *pgx.Conn {
	backoff := minBackoff
	for {
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if conn, err := n.connect(ctx); err == nil {
			return conn
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
