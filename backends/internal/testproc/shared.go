package testproc

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Shared is the one test server of a test binary whose TestMain runs Main: started by the
// first test that asks for it (Get) and stopped when the tests are done. A failed start is not
// retried: every test that asks reports it. Helper processes that re-exec the test binary never
// ask, so they start no server.
type Shared[S any] struct {
	mu      sync.Mutex
	enabled bool
	started bool
	srv     S
	err     error
}

// Main runs m's tests, then stops the server if one was started; a failed stop fails the run.
func (s *Shared[S]) Main(m *testing.M, stop func(S) error) int {
	s.mu.Lock()
	s.enabled = true
	s.mu.Unlock()
	code := m.Run()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started && s.err == nil {
		if err := stop(s.srv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Get returns the shared server, starting it with start on first use, and fails tb when it
// could not start. ok is false without Main: the caller then starts a server of its own.
func (s *Shared[S]) Get(tb testing.TB, start func() (S, error)) (srv S, ok bool) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabled {
		return srv, false
	}
	if !s.started {
		s.srv, s.err = start()
		s.started = true
	}
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.srv, true
}
