// Package webhook tells a platform what the engine publishes about its users' projects: each
// idle warning and each status change is POSTed as JSON to one URL, signed, so the platform can
// tell the person ("your environment stops in 5 minutes") without polling sailtui.
//
// It wraps the engine's Notifier: an event reaches the webhook once, from the process that
// published it (PostgreSQL's LISTEN/NOTIFY carries it to the others, which do not resend it).
// Delivery is in the background with retries, so a receiver that is slow or down never holds
// up the operation or the sweep that caused the event; Close gives what is left a bounded time.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sailtui/sailtui/engine"
)

// Header names. The signature is GitHub's scheme ("sha256=" + hex HMAC-SHA256 of the body with
// the shared secret), so a receiver can check it with the code it already has for GitHub's.
const (
	HeaderSignature = "X-Sailtui-Signature-256"
	HeaderEvent     = "X-Sailtui-Event"
	HeaderDelivery  = "X-Sailtui-Delivery"
)

// Payload is the JSON body of one delivery.
type Payload struct {
	// Delivery is unique per event (kept across retries), so a receiver can drop a duplicate.
	Delivery string `json:"delivery"`
	// Type is "idle_warning" or "status".
	Type      string    `json:"type"`
	Time      time.Time `json:"time"`
	ProjectID string    `json:"project_id"`
	Slug      string    `json:"slug"`
	From      string    `json:"from,omitempty"`
	To        string    `json:"to,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// Options configures the sender. Zero fields take the defaults below.
type Options struct {
	URL    string
	Secret string
	// Attempts is how many times one event is tried (default 6: about 30 s of backoff).
	Attempts int
	// Backoff is the wait before the first retry, doubled after each (default 1 s).
	Backoff time.Duration
	// Timeout bounds one attempt (default 5 s).
	Timeout time.Duration
	// Queue is how many events may wait; past it new events are dropped and counted (default 1024).
	Queue  int
	Client *http.Client
	Logger *slog.Logger
}

// Check says what is wrong with the webhook settings, in the words of their variables.
func Check(rawURL, secret string) error {
	if rawURL == "" {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("SAILTUI_WEBHOOK_URL=%q: want an http or https URL such as https://platform.example/hooks/sailtui", rawURL)
	}
	if u.User != nil {
		return fmt.Errorf("SAILTUI_WEBHOOK_URL: credentials in the URL would be shown by sailtui config and sent in the clear over http; the receiver checks SAILTUI_WEBHOOK_SECRET's signature instead")
	}
	if secret == "" {
		return fmt.Errorf("SAILTUI_WEBHOOK_URL is set but SAILTUI_WEBHOOK_SECRET is empty: set a secret the receiver shares, so it can check each delivery's %s (HMAC-SHA256 of the body)", HeaderSignature)
	}
	return nil
}

// Notifier publishes through its inner Notifier and delivers idle warnings and status changes
// to the webhook.
type Notifier struct {
	inner engine.Notifier
	opt   Options
	queue chan Payload

	mu      sync.Mutex
	closed  bool
	dropped int
	failed  int
	done    chan struct{}
	stop    context.CancelFunc
	ctx     context.Context
}

// New starts the sender. inner carries the events as before (nil: an in-process engine.Bus).
func New(inner engine.Notifier, opt Options) (*Notifier, error) {
	if err := Check(opt.URL, opt.Secret); err != nil {
		return nil, err
	}
	if inner == nil {
		inner = engine.NewBus()
	}
	if opt.Attempts <= 0 {
		opt.Attempts = 6
	}
	if opt.Backoff <= 0 {
		opt.Backoff = time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Second
	}
	if opt.Queue <= 0 {
		opt.Queue = 1024
	}
	if opt.Client == nil {
		// No redirects: a receiver that moved should be configured again, and a redirect
		// would carry the signed body to a host nobody named.
		opt.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	n := &Notifier{inner: inner, opt: opt, queue: make(chan Payload, opt.Queue), done: make(chan struct{}), ctx: ctx, stop: stop}
	go n.run()
	return n, nil
}

// Publish passes e on, then queues it for the webhook when a platform wants to hear of it.
// It never waits for the receiver.
func (n *Notifier) Publish(ctx context.Context, e engine.Event) error {
	err := n.inner.Publish(ctx, e)
	if p, ok := payloadOf(e); ok {
		n.mu.Lock()
		if !n.closed {
			select {
			case n.queue <- p:
			default:
				n.dropped++
			}
		}
		n.mu.Unlock()
	}
	return err
}

// Subscribe is the inner Notifier's.
func (n *Notifier) Subscribe(ctx context.Context) (<-chan engine.Event, error) {
	return n.inner.Subscribe(ctx)
}

// payloadOf picks the events a platform is told of: a warning and a status change.
func payloadOf(e engine.Event) (Payload, bool) {
	switch e.Kind {
	case engine.EventIdleWarning, "status", "":
	default:
		return Payload{}, false
	}
	typ := e.Kind
	if typ == "" {
		typ = "status"
	}
	return Payload{Delivery: uuid.NewString(), Type: typ, Time: e.Time, ProjectID: e.ProjectID, Slug: e.Slug,
		From: string(e.From), To: string(e.To), Reason: e.Reason}, true
}

// Close stops taking events and gives the queued ones until ctx ends to be delivered; what is
// still undelivered then is logged and counted in the error.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	select {
	case <-n.done:
	case <-ctx.Done():
		n.stop()
		<-n.done
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failed+n.dropped > 0 {
		return fmt.Errorf("webhook %s: %d event(s) not delivered (%d given up after retries or at exit, %d dropped with the queue full); the receiver did not answer with 2xx",
			Redact(n.opt.URL), n.failed+n.dropped, n.failed, n.dropped)
	}
	return nil
}

func (n *Notifier) run() {
	defer close(n.done)
	for p := range n.queue {
		if err := n.deliver(p); err != nil {
			n.mu.Lock()
			n.failed++
			n.mu.Unlock()
			n.opt.Logger.Warn("webhook delivery failed", "url", Redact(n.opt.URL), "type", p.Type, "project", p.Slug, "delivery", p.Delivery, "err", err)
		}
	}
}

// errPermanent marks an answer a retry cannot change (a 4xx other than 408 and 429).
var errPermanent = errors.New("refused by the receiver")

// deliver tries p until the receiver takes it, refuses it for good, or the attempts or the
// sender's life run out.
func (n *Notifier) deliver(p Payload) error {
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	wait := n.opt.Backoff
	var last error
	for attempt := 1; attempt <= n.opt.Attempts; attempt++ {
		last = n.post(p, body)
		if last == nil || errors.Is(last, errPermanent) {
			return last
		}
		if attempt == n.opt.Attempts {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-n.ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up at exit after %d attempt(s))", last, attempt)
		}
		wait *= 2
	}
	return fmt.Errorf("%w (after %d attempts)", last, n.opt.Attempts)
}

func (n *Notifier) post(p Payload, body []byte) error {
	ctx, cancel := context.WithTimeout(n.ctx, n.opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.opt.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("make request: %w: %w", err, errPermanent)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sailtui-webhook")
	req.Header.Set(HeaderEvent, p.Type)
	req.Header.Set(HeaderDelivery, p.Delivery)
	req.Header.Set(HeaderSignature, Sign(n.opt.Secret, body))
	resp, err := n.opt.Client.Do(req)
	if err != nil {
		return fmt.Errorf("POST: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("POST: %s", resp.Status)
	default:
		return fmt.Errorf("POST: %s: %w", resp.Status, errPermanent)
	}
}

// Sign is the value of HeaderSignature for body.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify is what a receiver does: true when signature is body's under secret.
func Verify(secret string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(signature))
}

// Redact keeps the URL's scheme, host and path: a query may carry a token.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	s := u.Scheme + "://" + u.Host + u.Path
	if u.RawQuery != "" {
		s += "?…(" + strconv.Itoa(len(u.RawQuery)) + " chars)"
	}
	return s
}
