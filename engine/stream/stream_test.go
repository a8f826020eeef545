package stream

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// chunkReader hands out data k bytes at a time and ends with a read of (0, io.EOF), so tests
// know exactly which reads happen.
type chunkReader struct {
	data []byte
	k    int
}

func (c *chunkReader) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), c.k)], c.data)
	c.data = c.data[n:]
	return n, nil
}

// endless never runs out, so only cancellation can stop a copy from it. It calls stop once,
// after read number stopAt has been served. It gives up after many more reads, so that a
// reader ignoring the context fails the test instead of hanging it.
type endless struct {
	reads, stopAt int
	stop          func()
}

var errIgnored = errors.New("the context was ignored")

func (e *endless) Read(b []byte) (int, error) {
	e.reads++
	if e.reads > 100*e.stopAt {
		return 0, errIgnored
	}
	for i := range b {
		b[i] = 'x'
	}
	if e.reads == e.stopAt {
		e.stop()
	}
	return len(b), nil
}

// payload is deterministic data of n bytes that is not all one value.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func sum256(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func TestWithContextStopsMidStream(t *testing.T) {
	cause := errors.New("operator gave up")
	for _, tc := range []struct {
		name string
		// start returns the context and what ends it.
		start func() (context.Context, func())
		want  error
	}{
		{"cancel", func() (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			return ctx, cancel
		}, context.Canceled},
		// A cause must not replace the error: callers test for context.Canceled.
		{"cancel with cause", func() (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.Background())
			t.Cleanup(func() { cancel(nil) })
			return ctx, func() { cancel(cause) }
		}, context.Canceled},
		{"deadline", func() (context.Context, func()) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			t.Cleanup(cancel)
			return ctx, func() { <-ctx.Done() }
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, stop := tc.start()
			src := &endless{stopAt: 3, stop: stop}
			buf := make([]byte, 1000)
			n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, WithContext(ctx, src), buf)
			if !errors.Is(err, tc.want) || errors.Is(err, cause) {
				t.Fatalf("copy ended with %v, want %v", err, tc.want)
			}
			// The read that ended the context still counts; the source is not read again.
			if src.reads != 3 || n != 3000 {
				t.Fatalf("source read %d times, %d bytes copied; want 3 reads, 3000 bytes", src.reads, n)
			}
		})
	}
}

func TestWithContextPassesReadsThrough(t *testing.T) {
	data := payload(100_000)
	got, err := io.ReadAll(WithContext(context.Background(), iotest.HalfReader(bytes.NewReader(data))))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v; want the %d bytes given", len(got), err, len(data))
	}
	// Cancelled between two reads: the first read's bytes are kept, the next read fails.
	ctx, cancel := context.WithCancel(context.Background())
	r := WithContext(ctx, bytes.NewReader(data))
	buf := make([]byte, 10)
	if n, err := r.Read(buf); n != 10 || err != nil {
		t.Fatalf("first read = %d, %v", n, err)
	}
	cancel()
	if n, err := r.Read(buf); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel = %d, %v", n, err)
	}
}

// shortWriter accepts at most room bytes, then fails like a full disk.
type shortWriter struct {
	room int
	got  []byte
}

var errFull = errors.New("no space left")

func (w *shortWriter) Write(b []byte) (int, error) {
	n := min(len(b), w.room)
	w.room -= n
	w.got = append(w.got, b[:n]...)
	if n < len(b) {
		return n, errFull
	}
	return n, nil
}

func TestHashWriterCountsWhatWasAccepted(t *testing.T) {
	data := payload(50_000)
	for _, tc := range []struct {
		name    string
		room    int
		wantErr error
	}{
		{"all accepted", len(data), nil},
		{"nothing accepted", 0, errFull},
		{"stops part way", 12_345, errFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := &shortWriter{room: tc.room}
			w := NewHashWriter(dst, sha256.New())
			// Several writes, so a hash of only the last one would show.
			_, err := io.Copy(w, iotest.HalfReader(bytes.NewReader(data)))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("copy = %v, want %v", err, tc.wantErr)
			}
			if w.N() != int64(len(dst.got)) || w.N() != int64(tc.room) {
				t.Fatalf("N = %d, destination took %d, room %d", w.N(), len(dst.got), tc.room)
			}
			if !bytes.Equal(w.Sum(), sum256(data[:tc.room])) {
				t.Fatal("Sum is not the SHA-256 of the accepted bytes")
			}
		})
	}
}

var errFlaky = errors.New("connection reset")

// errOnce is a reader whose read number at fails with err, having read nothing, and which then
// goes on as if nothing happened: a retrying body that lost bytes could look like this.
type errOnce struct {
	r     io.Reader
	at, i int
	err   error
}

func (e *errOnce) Read(b []byte) (int, error) {
	e.i++
	if e.i == e.at {
		return 0, e.err
	}
	return e.r.Read(b)
}

func TestHashReaderResult(t *testing.T) {
	data := payload(300_000)
	second := errors.New("second failure")
	for _, tc := range []struct {
		name    string
		src     func() io.Reader
		wantEOF bool
		wantErr error
	}{
		{"clean end", func() io.Reader { return bytes.NewReader(data) }, true, nil},
		{"small reads", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }, true, nil},
		{"last data with EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }, true, nil},
		{"wrapped EOF", func() io.Reader {
			return io.MultiReader(bytes.NewReader(data), iotest.ErrReader(fmt.Errorf("body: %w", io.EOF)))
		}, true, nil},
		{"error then end", func() io.Reader { return &errOnce{r: bytes.NewReader(data), at: 2, err: errFlaky} }, false, errFlaky},
		{"first error kept", func() io.Reader {
			return &errOnce{r: &errOnce{r: bytes.NewReader(data), at: 4, err: second}, at: 2, err: errFlaky}
		}, false, errFlaky},
		{"timeout", func() io.Reader { return iotest.TimeoutReader(bytes.NewReader(data)) }, false, iotest.ErrTimeout},
		{"only errors", func() io.Reader { return iotest.ErrReader(errFlaky) }, false, errFlaky},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewHashReader(tc.src(), sha256.New(), 0, nil)
			// Read on past errors, as the restores do to drain an object (one byte at a time
			// at worst; a source that only fails is given up on after as many reads).
			var got []byte
			buf := make([]byte, 4096)
			for range len(data) + 10 {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if errors.Is(err, io.EOF) {
					break
				}
			}
			eof, sum, err := r.Result()
			if eof != tc.wantEOF || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Result = eof %v, err %v; want eof %v, err %v", eof, err, tc.wantEOF, tc.wantErr)
			}
			if !bytes.Equal(sum, sum256(got)) || r.N() != int64(len(got)) {
				t.Fatalf("hash or count (%d) do not match the %d bytes read", r.N(), len(got))
			}
			if tc.wantEOF && !bytes.Equal(sum, sum256(data)) {
				t.Fatal("eof, but the hash is not that of the whole source")
			}
		})
	}
}

func TestHashReaderProgress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   func() io.Reader
		every int64
		want  []int64
	}{
		// Reads end at 3, 6, 9, 10, then (0, EOF).
		{"every 4", func() io.Reader { return &chunkReader{payload(10), 3} }, 4, []int64{6, 10}},
		{"every 5, rest at the end", func() io.Reader { return &chunkReader{payload(10), 3} }, 5, []int64{6, 10}},
		{"every 5, last step exact", func() io.Reader { return &chunkReader{payload(11), 3} }, 5, []int64{6, 11}},
		{"step larger than the stream", func() io.Reader { return &chunkReader{payload(10), 3} }, 100, []int64{10}},
		{"every read", func() io.Reader { return &chunkReader{payload(10), 3} }, 0, []int64{3, 6, 9, 10}},
		{"last data with EOF", func() io.Reader { return iotest.DataErrReader(&chunkReader{payload(10), 4}) }, 5, []int64{8, 10}},
		{"empty", func() io.Reader { return &chunkReader{nil, 3} }, 4, nil},
		{"MiB steps", func() io.Reader { return &chunkReader{payload(9<<20 + 5), 64 << 10} }, 4 << 20, []int64{4 << 20, 8 << 20, 9<<20 + 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			var r *HashReader
			r = NewHashReader(tc.src(), sha256.New(), tc.every, func(done int64) {
				// Called outside the lock: asking for the count here must not deadlock.
				if n := r.N(); n != done {
					t.Errorf("progress(%d) while N() = %d", done, n)
				}
				got = append(got, done)
			})
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("progress calls %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHashReaderConcurrentResult(t *testing.T) {
	data := payload(4 << 20)
	r := NewHashReader(&chunkReader{data, 1000}, sha256.New(), 64<<10, func(int64) {})
	var wg sync.WaitGroup
	var copyErr error
	wg.Go(func() { _, copyErr = io.Copy(io.Discard, r) })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var last int64
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		default:
		}
		eof, _, err := r.Result()
		n := r.N()
		if err != nil || n < last || (eof && n != int64(len(data))) {
			t.Fatalf("while reading: eof %v, err %v, N %d after %d", eof, err, n, last)
		}
		last = n
	}
	if copyErr != nil {
		t.Fatal(copyErr)
	}
	eof, sum, err := r.Result()
	if !eof || err != nil || !bytes.Equal(sum, sum256(data)) {
		t.Fatalf("after reading: eof %v, err %v, hash matches %v", eof, err, bytes.Equal(sum, sum256(data)))
	}
}

func TestEOFReader(t *testing.T) {
	data := payload(100)
	for _, tc := range []struct {
		name string
		src  func() io.Reader
		// want is HitEOF after each read of 64 bytes.
		want []bool
	}{
		{"end on its own read", func() io.Reader { return bytes.NewReader(data) }, []bool{false, false, true}},
		// The last bytes may hold the tar end marker: data with io.EOF is not yet the end.
		{"last data with EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }, []bool{false, false, true}},
		{"wrapped EOF", func() io.Reader { return iotest.ErrReader(fmt.Errorf("body: %w", io.EOF)) }, []bool{true}},
		{"other error", func() io.Reader { return iotest.ErrReader(errFlaky) }, []bool{false, false}},
		{"unexpected EOF", func() io.Reader { return iotest.ErrReader(io.ErrUnexpectedEOF) }, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewEOFReader(tc.src())
			buf := make([]byte, 64)
			var got []bool
			for range tc.want {
				_, _ = r.Read(buf)
				got = append(got, r.HitEOF())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("HitEOF after each read %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEOFReaderTellsTruncatedTar is the reason EOFReader exists: tar.Reader says io.EOF both at
// the end marker and when the stream stops between two entries.
func TestEOFReaderTellsTruncatedTar(t *testing.T) {
	var full bytes.Buffer
	tw := tar.NewWriter(&full)
	var cut int
	for i, name := range []string{"a", "b"} {
		body := payload(700 + i)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			cut = full.Len()
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		stream    []byte
		truncated bool
	}{
		{"complete", full.Bytes(), false},
		{"without the end marker", full.Bytes()[:full.Len()-1024], true},
		{"stops between entries", full.Bytes()[:cut], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewEOFReader(bytes.NewReader(tc.stream))
			tr := tar.NewReader(r)
			for {
				_, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if r.HitEOF() != tc.truncated {
				t.Fatalf("HitEOF = %v, want %v", r.HitEOF(), tc.truncated)
			}
		})
	}
}
