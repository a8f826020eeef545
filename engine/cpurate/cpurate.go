// Package cpurate turns readings of a container's cumulative CPU time into the cores it used
// between them. It keeps the last reading of each container, so a caller that reads at its own
// pace (the console's refresh) gets a rate from every reading but the first, and needs no
// second reading of its own.
package cpurate

import (
	"sync"
	"time"
)

const (
	// MinWindow is the shortest span a rate is taken over: CPU time is counted in clock ticks
	// (10 ms for /proc), so a shorter span is mostly rounding.
	MinWindow = 200 * time.Millisecond
	// MaxAge is how long a reading serves as the base of the next one; an older one says
	// little about now and is forgotten.
	MaxAge = 2 * time.Minute
)

// Sampler keeps the last reading per key. It is safe for concurrent use; the zero value is
// ready.
type Sampler struct {
	mu   sync.Mutex
	last map[string]reading
}

type reading struct {
	cpu time.Duration
	at  time.Time
	// rate is the one this reading gave (ok when it gave one), the answer to a reading that
	// follows too soon.
	rate float64
	ok   bool
}

// Rate records cpu, the cumulative CPU time of key read at at, and returns the cores used
// since the previous reading of key when there is one from MinWindow to MaxAge before. A
// reading less than MinWindow after the previous one is not kept, so that quick calls do not
// narrow the window of the next: it gets the rate the previous reading gave, if any. A
// counter that went back (a process of the group ended and took its time with it) gives 0,
// not a negative rate.
func (s *Sampler) Rate(key string, at time.Time, cpu time.Duration) (cores float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]reading{}
	}
	for k, r := range s.last {
		if at.Sub(r.at) > MaxAge {
			delete(s.last, k)
		}
	}
	prev, had := s.last[key]
	dt := at.Sub(prev.at)
	if had && dt < MinWindow && dt >= 0 {
		return prev.rate, prev.ok
	}
	r := reading{cpu: cpu, at: at}
	if had && dt > 0 {
		r.rate, r.ok = max(float64(cpu-prev.cpu), 0)/float64(dt), true
	}
	s.last[key] = r
	return r.rate, r.ok
}

// Has reports whether a reading of key is kept that the next one can take a rate from at now
// (a caller with none can ask its source for a pair of readings at once).
func (s *Sampler) Has(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.last[key]
	return ok && now.Sub(r.at) <= MaxAge && (r.ok || now.Sub(r.at) >= MinWindow)
}
