package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/notifiertest"
)

// receiver records what a platform's endpoint is sent; answer picks each reply's status.
type receiver struct {
	mu       sync.Mutex
	got      []Payload
	sigOK    []bool
	attempts int
	answer   func(attempt int) int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.attempts++
	status := http.StatusNoContent
	if r.answer != nil {
		status = r.answer(r.attempts)
	}
	if status < 300 {
		var p Payload
		_ = json.Unmarshal(body, &p)
		r.got = append(r.got, p)
		r.sigOK = append(r.sigOK, Verify("s3cret", body, req.Header.Get(HeaderSignature)) && req.Header.Get(HeaderEvent) == p.Type && req.Header.Get(HeaderDelivery) == p.Delivery)
	}
	r.mu.Unlock()
	w.WriteHeader(status)
}

func (r *receiver) snapshot() ([]Payload, []bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Payload(nil), r.got...), append([]bool(nil), r.sigOK...), r.attempts
}

func newNotifier(t *testing.T, url string, opt Options) *Notifier {
	t.Helper()
	opt.URL, opt.Secret = url, "s3cret"
	if opt.Backoff == 0 {
		opt.Backoff = 10 * time.Millisecond
	}
	n, err := New(nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDeliversWarningsAndStatusChangesSigned(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	n := newNotifier(t, srv.URL+"/hook", Options{})
	ctx := context.Background()
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	n.Publish(ctx, engine.Event{Time: at, ProjectID: "p1", Slug: "shop", Kind: engine.EventIdleWarning, Reason: "idle 25m; hibernates in 5m"})
	n.Publish(ctx, engine.Event{Time: at, ProjectID: "p1", Slug: "shop", Kind: "status", From: engine.StatusActive, To: engine.StatusHibernated, Reason: "hibernate"})
	// Container and snapshot events are the console's business, not the platform's.
	n.Publish(ctx, engine.Event{Time: at, ProjectID: "p1", Slug: "shop", Kind: "container", Reason: "started web"})
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, sigOK, _ := rcv.snapshot()
	if len(got) != 2 || got[0].Type != "idle_warning" || got[1].Type != "status" || got[1].To != "hibernated" || got[0].Slug != "shop" || !got[0].Time.Equal(at) {
		t.Fatalf("delivered %+v; want the warning then the status change", got)
	}
	for i, ok := range sigOK {
		if !ok {
			t.Errorf("delivery %d: signature or headers do not check", i)
		}
	}
	if got[0].Delivery == got[1].Delivery || got[0].Delivery == "" {
		t.Errorf("delivery ids %q %q: want distinct", got[0].Delivery, got[1].Delivery)
	}
}

func TestRetriesUntilTheReceiverTakesIt(t *testing.T) {
	rcv := &receiver{answer: func(a int) int {
		if a < 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	n := newNotifier(t, srv.URL, Options{})
	n.Publish(context.Background(), engine.Event{ProjectID: "p", Slug: "a", To: engine.StatusHibernated})
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _, attempts := rcv.snapshot()
	if len(got) != 1 || attempts != 3 {
		t.Fatalf("got %d deliveries in %d attempts; want 1 in 3", len(got), attempts)
	}
}

func TestRefusalIsNotRetried(t *testing.T) {
	rcv := &receiver{answer: func(int) int { return http.StatusUnauthorized }}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	n := newNotifier(t, srv.URL, Options{})
	n.Publish(context.Background(), engine.Event{ProjectID: "p", Slug: "a", To: engine.StatusHibernated})
	err := n.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "1 event(s) not delivered") {
		t.Fatalf("Close: %v; want one undelivered event reported", err)
	}
	if _, _, attempts := rcv.snapshot(); attempts != 1 {
		t.Fatalf("%d attempts; a 401 cannot change on retry: want 1", attempts)
	}
}

// A receiver that hangs never holds up the publisher, and Close gives up when told to.
func TestHangingReceiverNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	n := newNotifier(t, srv.URL, Options{Timeout: time.Minute, Queue: 4})
	start := time.Now()
	for range 100 {
		n.Publish(context.Background(), engine.Event{ProjectID: "p", Slug: "a", Kind: engine.EventIdleWarning})
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("100 publishes took %s with the receiver hanging", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := n.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "dropped with the queue full") {
		t.Fatalf("Close: %v; want the undelivered and dropped events counted", err)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct{ url, secret, want string }{
		{"", "", ""},
		{"https://p.example/h", "k", ""},
		{"ftp://p.example/h", "k", "want an http or https URL"},
		{"p.example/h", "k", "want an http or https URL"},
		{"https://u:pw@p.example/h", "k", "credentials in the URL"},
		{"https://p.example/h", "", "SAILTUI_WEBHOOK_SECRET is empty"},
	} {
		err := Check(c.url, c.secret)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%q, %q) = %v; want %q", c.url, c.secret, err, c.want)
		}
	}
}

// The wrapper keeps the Notifier contract of what it wraps (here the in-process Bus), with a
// receiver that takes everything.
func TestNotifierContract(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	notifiertest.Run(t, func(t *testing.T) (engine.Notifier, engine.Notifier) {
		n := newNotifier(t, srv.URL, Options{})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = n.Close(ctx)
		})
		return n, n
	})
}
