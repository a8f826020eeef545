package archive

import "io"

// Read-ahead buffers: aheadBufs of aheadSize bytes (a zstd block's output at most, which is
// what one Read of the decoder gives), enough that the decoding goroutine keeps going while the
// reader hands out a large file or waits for a writer.
const (
	aheadSize = 128 << 10
	aheadBufs = 8
)

// readAhead reads r in a goroutine of its own, into a few buffers that the reading side takes
// in order: what r costs (decompressing, hashing, the network) then runs beside what the reader
// does with the data (parsing, handing files to the writers) instead of before it, as
// `zstd -d | tar -x` runs in two processes. stop ends the goroutine and waits for it, so r is
// read no more once it has returned.
type readAhead struct {
	full chan aheadBuf
	free chan []byte
	quit chan struct{}
	done chan struct{}
	// cur is the unread rest of the buffer being handed out, buf all of it; err is what came
	// after it.
	cur, buf []byte
	err      error
	stopped  bool
}

type aheadBuf struct {
	b   []byte
	err error
}

func newReadAhead(r io.Reader) *readAhead {
	ra := &readAhead{
		full: make(chan aheadBuf, aheadBufs),
		free: make(chan []byte, aheadBufs),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	for range aheadBufs {
		ra.free <- nil // allocated on first use: a small stream needs one
	}
	go ra.fill(r)
	return ra
}

func (ra *readAhead) fill(r io.Reader) {
	defer close(ra.done)
	for {
		var b []byte
		select {
		case b = <-ra.free:
		case <-ra.quit:
			return
		}
		if b == nil {
			b = make([]byte, aheadSize)
		}
		b = b[:cap(b)]
		// One Read, not a full buffer: what has arrived goes on at once, so a stream that
		// comes slowly (a pipe, the network) is extracted as it comes.
		var n int
		var err error
		for n == 0 && err == nil {
			n, err = r.Read(b)
		}
		select {
		case ra.full <- aheadBuf{b: b[:n], err: err}:
		case <-ra.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read implements io.Reader.
func (ra *readAhead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.err != nil {
			return 0, ra.err
		}
		if ra.buf != nil {
			ra.free <- ra.buf
			ra.buf = nil
		}
		next := <-ra.full
		ra.cur, ra.buf, ra.err = next.b, next.b, next.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// stop ends the reading goroutine and waits until it has returned.
func (ra *readAhead) stop() {
	if !ra.stopped {
		ra.stopped = true
		close(ra.quit)
		<-ra.done
	}
}
