package engine

import (
	"context"
	"sync"
)

// Bus is the in-process Notifier: the embedded default, and the fan-out inside a process for
// notifiers that receive from elsewhere.
type Bus struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

// NewBus returns an empty Bus.
func NewBus() *Bus { return &Bus{subs: map[chan Event]struct{}{}} }

// Publish delivers e to every subscriber. A subscriber that does not keep up loses events rather
// than stalling the engine; views re-read the store on their next refresh anyway.
func (b *Bus) Publish(_ context.Context, e Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
		}
	}
	return nil
}

// Subscribe delivers events until ctx ends.
func (b *Bus) Subscribe(ctx context.Context) (<-chan Event, error) {
	ch := make(chan Event, 256)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	go func() {
		<-ctx.Done()
		b.mu.Lock()
		delete(b.subs, ch)
		close(ch)
		b.mu.Unlock()
	}()
	return ch, nil
}
