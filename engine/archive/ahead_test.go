package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// watchedReader reports reads made after returned is set.
type watchedReader struct {
	r        io.Reader
	mu       sync.Mutex
	returned atomic.Bool
	late     atomic.Int32
}

func (w *watchedReader) Read(p []byte) (int, error) {
	if w.returned.Load() {
		w.late.Add(1)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Small reads, so the read-ahead has more to do after the refused entry.
	return w.r.Read(p[:min(len(p), 512)])
}

// TestFilterReadsNoMoreOnceReturned refuses an entry early in a long archive: Filter returns
// with the refusal, and its read-ahead goroutine reads the source no more afterwards (a
// restore reads the rest itself, for the checksum).
func TestFilterReadsNoMoreOnceReturned(t *testing.T) {
	entries := []tarEntry{reg("../evil", []byte("x"))}
	for i := range 200 {
		entries = append(entries, reg("f"+string(rune('a'+i%26))+string(rune('a'+i/26)), bytes.Repeat([]byte{byte(i)}, 4096)))
	}
	w := &watchedReader{r: bytes.NewReader(compress(makeTar(t, entries)))}
	err := Filter(context.Background(), w, Limits{}, Rules{}, func(Entry, io.Reader) error { return nil })
	w.returned.Store(true)
	if !errors.Is(err, engine.ErrBadPath) {
		t.Fatalf("Filter error = %v, want ErrBadPath", err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := w.late.Load(); n != 0 {
		t.Errorf("%d reads of the source after Filter returned", n)
	}
	// What Filter left is still there for the caller, from where the read-ahead stopped.
	if _, err := io.Copy(io.Discard, w); err != nil {
		t.Fatal(err)
	}
}

// TestReadAheadPassesErrors hands out the data before an error, then the error, in order.
func TestReadAheadPassesErrors(t *testing.T) {
	boom := errors.New("boom")
	ra := newReadAhead(io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), 3*aheadSize+5)), &errReader{boom}))
	defer ra.stop()
	n, err := io.Copy(io.Discard, ra)
	if n != 3*aheadSize+5 || !errors.Is(err, boom) {
		t.Fatalf("read %d bytes, %v; want %d and %v", n, err, 3*aheadSize+5, boom)
	}
	if _, err := ra.Read(make([]byte, 1)); !errors.Is(err, boom) {
		t.Errorf("read after the error = %v", err)
	}
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }
