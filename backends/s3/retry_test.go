package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/s3/s3test"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// faultProxy stands between a Store and the S3 server and answers some requests itself with an
// S3 error, as a throttling or failing server does; the rest go through.
type faultProxy struct {
	url string
	// fault names the error to answer a request with (status and S3 code), or returns 0.
	fault func(r *http.Request, attempt int) (status int, code string)

	mu       sync.Mutex
	attempts map[string]int // request (method, part, upload) → times seen
	injected []string
}

func startFaultProxy(t *testing.T, srv *s3test.Server, fault func(r *http.Request, attempt int) (int, string)) *faultProxy {
	t.Helper()
	p := &faultProxy{fault: fault, attempts: map[string]int{}}
	p.url = startProxy(t, srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		q := r.URL.Query()
		id := fmt.Sprintf("%s %s part=%s uploads=%t upload=%t", r.Method, r.URL.Path, q.Get("partNumber"), q.Has("uploads"), q.Has("uploadId"))
		p.mu.Lock()
		p.attempts[id]++
		attempt := p.attempts[id]
		p.mu.Unlock()
		if status, code := p.fault(r, attempt); status != 0 {
			// Drain the body as a server would before answering.
			_, _ = io.Copy(io.Discard, r.Body)
			p.mu.Lock()
			p.injected = append(p.injected, fmt.Sprintf("%s #%d: %d %s", id, attempt, status, code))
			p.mu.Unlock()
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by the test</Message></Error>`, code)
			return
		}
		next.ServeHTTP(w, r)
	})
	return p
}

func (p *faultProxy) faults() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.injected...)
}

// Throttling (503 SlowDown) and server errors (500) on the first attempt of parts, of the
// completion and of the download are ridden out: the object arrives whole and reads back
// byte for byte.
func TestRetriesThrottlingAndServerErrors(t *testing.T) {
	srv := s3test.Start(t)
	proxy := startFaultProxy(t, srv, func(r *http.Request, attempt int) (int, string) {
		if attempt > 1 {
			return 0, ""
		}
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodPut && q.Get("partNumber") == "2":
			return http.StatusServiceUnavailable, "SlowDown"
		case r.Method == http.MethodPut && q.Get("partNumber") == "3":
			return http.StatusInternalServerError, "InternalError"
		case r.Method == http.MethodPost && q.Has("uploadId"):
			return http.StatusServiceUnavailable, "SlowDown"
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/retried.bin"):
			return http.StatusServiceUnavailable, "ServiceUnavailable"
		}
		return 0, ""
	})
	s := openVia(t, srv, proxy.url)
	ctx := context.Background()
	gen := newGen(2*DefaultPartSize + 12345)
	if _, err := s.Put(ctx, "retried.bin", gen); err != nil {
		t.Fatalf("Put through throttling and 500s: %v (faults: %v)", err, proxy.faults())
	}
	rc, err := s.Get(ctx, "retried.bin")
	if err != nil {
		t.Fatalf("Get through a 503: %v", err)
	}
	defer rc.Close()
	if n, sum, err := archivetest.HashAll(rc); err != nil || !gen.Matches(n, sum) {
		t.Fatalf("read back %d bytes (%v) that differ from the %d put", n, err, gen.Size)
	}
	if got := proxy.faults(); len(got) != 4 {
		t.Errorf("faults injected: %v; want one on part 2, part 3, the completion and the GET", got)
	}
}

// A server that keeps throttling fails the Put within the retry budget (no hang), with an
// error that says what the server answered, and nothing is left: no object, no parts.
func TestPersistentThrottlingFails(t *testing.T) {
	srv := s3test.Start(t)
	proxy := startFaultProxy(t, srv, func(r *http.Request, _ int) (int, string) {
		if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "2" {
			return http.StatusServiceUnavailable, "SlowDown"
		}
		return 0, ""
	})
	s := openVia(t, srv, proxy.url)
	start := time.Now()
	_, err := s.Put(context.Background(), "throttled.bin", newGen(3*DefaultPartSize))
	if err == nil || !strings.Contains(err.Error(), "SlowDown") {
		t.Fatalf("Put against a server that always throttles part 2: %v; want an error naming SlowDown", err)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("the failing Put took %v", d)
	}
	if n := len(proxy.faults()); n != maxAttempts {
		t.Errorf("part 2 was tried %d times, want %d (maxAttempts)", n, maxAttempts)
	}
	if _, err := s.Head(context.Background(), "throttled.bin"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Head after the failed Put: %v", err)
	}
	assertNoUploads(t, srv)
}
