// Package storetest is the contract suite every engine.Store implementation passes. It uses only
// the engine.Store interface, so the same tests hold the embedded SQLite store and a server
// database to the same semantics.
package storetest

import (
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// test is one contract test against a fresh, empty store.
type test struct {
	name string
	fn   func(t *testing.T, s engine.Store)
}

// Run runs the contract suite. open returns a fresh, empty store for each test; Run closes it.
func Run(t *testing.T, open func(t *testing.T) engine.Store) {
	var tests []test
	tests = append(tests, projectTests...)
	tests = append(tests, claimTests...)
	tests = append(tests, containerTests...)
	tests = append(tests, snapshotTests...)
	tests = append(tests, journalTests...)
	tests = append(tests, useTests...)
	tests = append(tests, changeTests...)
	tests = append(tests, idleTests...)
	tests = append(tests, historyTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close %s: %v", s.Describe(), err)
				}
			})
			tc.fn(t, s)
		})
	}
	t.Run("Concurrent", func(t *testing.T) {
		s := open(t)
		t.Cleanup(func() { _ = s.Close() })
		RunConcurrent(t, []engine.Store{s})
	})
}

// RunConcurrent runs the exactly-once tests: goroutines race on one project, spread over
// handles, which must all be views of one store (several pools or processes on one database).
// The store need not be empty. The caller closes the handles.
func RunConcurrent(t *testing.T, handles []engine.Store) {
	if len(handles) == 0 {
		t.Fatal("RunConcurrent: no store handles")
	}
	for _, tc := range concurrentTests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, handles) })
	}
}
