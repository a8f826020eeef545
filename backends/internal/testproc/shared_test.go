package testproc

import (
	"errors"
	"testing"
)

func TestSharedWithoutMain(t *testing.T) {
	var s Shared[int]
	if _, ok := s.Get(t, func() (int, error) { t.Fatal("started without Main"); return 0, nil }); ok {
		t.Fatal("Get without Main reported a shared server")
	}
}

func TestSharedStartsOnceAndStops(t *testing.T) {
	var s Shared[int]
	s.enabled = true // as Main does before the tests run
	starts := 0
	for range 3 {
		srv, ok := s.Get(t, func() (int, error) { starts++; return 42, nil })
		if !ok || srv != 42 {
			t.Fatalf("Get = %d, %v; want the shared 42", srv, ok)
		}
	}
	if starts != 1 {
		t.Errorf("started %d times, want once", starts)
	}
}

func TestSharedFailedStartIsNotRetried(t *testing.T) {
	var s Shared[int]
	s.enabled = true
	starts := 0
	for range 2 {
		ft := &fatalT{TB: t}
		func() {
			defer func() { _ = recover() }()
			s.Get(ft, func() (int, error) { starts++; return 0, errors.New("no server") })
		}()
		if !ft.failed {
			t.Error("a failed start did not fail the test")
		}
	}
	if starts != 1 {
		t.Errorf("started %d times, want once", starts)
	}
}

// fatalT records Fatal instead of ending the test.
type fatalT struct {
	testing.TB
	failed bool
}

func (f *fatalT) Helper() {}

func (f *fatalT) Fatal(args ...any) {
	f.failed = true
	panic("fatal")
}
