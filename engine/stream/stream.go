// Package stream holds readers and writers that the archive code and the object stores share:
// cancellation, hashing, end-of-stream detection.
package stream

import (
	"context"
	"errors"
	"hash"
	"io"
	"sync"
)

// WithContext returns a reader that fails with ctx.Err() once ctx is done, so that a copy loop
// stops at cancellation even when r itself (a file, a pipe, a store's body) never looks at a
// context. A read already in progress is not interrupted: the check is made before each one.
// The error is ctx.Err(), not context.Cause, so callers can keep testing for context.Canceled
// and context.DeadlineExceeded.
func WithContext(ctx context.Context, r io.Reader) io.Reader {
	return ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// HashWriter passes writes on to another writer while hashing and counting them, so that the
// size and checksum recorded for an object are those of what the destination accepted, not of
// what was offered to it. Sum and N are meant for after the writing has ended (a channel or
// WaitGroup between the writing goroutine and the reader of the results is enough).
type HashWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

// NewHashWriter returns a HashWriter writing to w and hashing with h, which it owns from then on.
func NewHashWriter(w io.Writer, h hash.Hash) *HashWriter {
	return &HashWriter{w: w, h: h}
}

// Write writes b to the underlying writer and hashes the part of it that was accepted, even
// when the write failed part way, so that Sum and N always agree with what the writer took.
func (c *HashWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.h.Write(b[:n])
	c.n += int64(n)
	return n, err
}

// Sum is the hash of the bytes accepted so far.
func (c *HashWriter) Sum() []byte { return c.h.Sum(nil) }

// N is the number of bytes accepted so far.
func (c *HashWriter) N() int64 { return c.n }

// HashReader hashes and counts what is read through it and reports progress as it goes. Its hash
// speaks for a whole object only when Result says eof: the source was read to its end without
// any error before, so no byte can be missing from the hash.
//
// Results may be asked for from another goroutine than the one reading (a decoder may read in
// the background): a Read holds a lock for its whole length, so Result never sees bytes taken
// from the source but not yet hashed, and waits for a read in progress to finish.
type HashReader struct {
	r             io.Reader
	progressEvery int64
	progress      func(done int64)

	mu       sync.Mutex
	h        hash.Hash
	n        int64
	reported int64
	err      error
	eof      bool
}

// NewHashReader returns a HashReader reading r and hashing with h, which it owns from then on.
// When progress is not nil it is called with the number of bytes read so far each time at least
// progressEvery more have been read (after every read that brought bytes when progressEvery
// is not positive), and once more at the end of the stream if anything was read since the last
// call, so the last report is the full size. It is called outside the lock, so it may call N,
// but by the reading goroutine, so it should be quick.
func NewHashReader(r io.Reader, h hash.Hash, progressEvery int64, progress func(done int64)) *HashReader {
	return &HashReader{r: r, h: h, progressEvery: progressEvery, progress: progress}
}

func (c *HashReader) Read(b []byte) (int, error) {
	c.mu.Lock()
	n, err := c.r.Read(b)
	c.h.Write(b[:n])
	c.n += int64(n)
	end := errors.Is(err, io.EOF)
	switch {
	case err == nil:
	case end:
		// An end after an error proves nothing: the bytes before the error may be missing.
		c.eof = c.err == nil
	case c.err == nil:
		c.err = err
	}
	done, report := c.n, false
	if c.progress != nil && c.n != c.reported && (c.n-c.reported >= c.progressEvery || end) {
		c.reported, report = c.n, true
	}
	c.mu.Unlock()
	if report {
		c.progress(done)
	}
	return n, err
}

// N is the number of bytes read so far.
func (c *HashReader) N() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Result is what has been read so far: whether the end was reached with no error before it,
// the hash of every byte read, and the first error other than io.EOF (the one that explains why
// eof is false, where later ones are often only its consequences).
func (c *HashReader) Result() (eof bool, sum []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eof, c.h.Sum(nil), c.err
}

// EOFReader notes when its source ran out. archive/tar reports a stream that stops cleanly
// between two entries exactly like one that ends with the end-of-archive marker; only the marker
// proves an archive complete, and reading it never needs the stream's end, so a reader that
// reached the end before tar saw the marker has been given a truncated archive.
type EOFReader struct {
	r   io.Reader
	eof bool
}

// NewEOFReader returns an EOFReader reading r.
func NewEOFReader(r io.Reader) *EOFReader { return &EOFReader{r: r} }

func (e *EOFReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	// Only an end that brought no data counts: a reader may return its last bytes with io.EOF,
	// and those may still hold the marker.
	if n == 0 && errors.Is(err, io.EOF) {
		e.eof = true
	}
	return n, err
}

// HitEOF reports whether a read returned no data and io.EOF. It is for the reading goroutine
// (or after reading has ended), like the reader itself.
func (e *EOFReader) HitEOF() bool { return e.eof }
