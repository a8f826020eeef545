package cpurate

import (
	"testing"
	"time"
)

func TestRate(t *testing.T) {
	var s Sampler
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, ok := s.Rate("a", t0, time.Second); ok {
		t.Fatal("a first reading gave a rate")
	}
	if !s.Has("a", t0.Add(time.Second)) || s.Has("a", t0.Add(10*time.Millisecond)) || s.Has("b", t0) {
		t.Fatal("Has: want a reading of a at 1 s only (10 ms is too soon for a rate, b has none)")
	}
	if _, ok := s.Rate("a", t0.Add(10*time.Millisecond), time.Second); ok {
		t.Fatal("a reading 10 ms after a first one gave a rate")
	}
	// Half a core over 2 s.
	if c, ok := s.Rate("a", t0.Add(2*time.Second), 2*time.Second); !ok || c != 0.5 {
		t.Fatalf("rate = %v, %v; want 0.5, true", c, ok)
	}
	// Too soon after: the last rate again, and the base stays the reading at 2 s.
	if c, ok := s.Rate("a", t0.Add(2*time.Second+50*time.Millisecond), 3*time.Second); !ok || c != 0.5 {
		t.Fatalf("a reading 50 ms after the last gave %v, %v; want the last rate, 0.5", c, ok)
	}
	if c, ok := s.Rate("a", t0.Add(4*time.Second), 6*time.Second); !ok || c != 2 {
		t.Fatalf("rate = %v, %v; want 2 (4 s of CPU in 2 s since the kept reading), true", c, ok)
	}
	// A counter that went back reads as idle.
	if c, ok := s.Rate("a", t0.Add(5*time.Second), time.Second); !ok || c != 0 {
		t.Fatalf("rate after the counter went back = %v, %v; want 0, true", c, ok)
	}
	// Keys are apart; a reading older than MaxAge is forgotten.
	if _, ok := s.Rate("b", t0.Add(5*time.Second), time.Second); ok {
		t.Fatal("key b got a rate from key a's readings")
	}
	if s.Has("a", t0.Add(5*time.Second+MaxAge+time.Second)) {
		t.Fatal("Has: a reading older than MaxAge")
	}
	if _, ok := s.Rate("a", t0.Add(5*time.Second+MaxAge+time.Second), 2*time.Second); ok {
		t.Fatal("a reading older than MaxAge served as a base")
	}
}
