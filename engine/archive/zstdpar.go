package archive

import (
	"errors"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine/archive/offheap"
)

// frameSize is how much input goes into one zstd frame. Frames are compressed independently,
// which is what lets every core work at once; at this size the history lost at each frame
// boundary costs under 1% of output, and the frames in flight stay at a few MiB.
const frameSize = 1 << 20

// maxEncoders caps the frames compressed at once: beyond four, the single goroutine reading
// the files cannot keep them busy, and each one costs two frames of memory.
const maxEncoders = 4

// parallelEncoder compresses a stream as a sequence of independent zstd frames, several at a
// time, and writes them out in order. Any zstd decoder reads the result as one stream. The
// klauspost stream encoder overlaps only one block with the caller; this keeps every CPU busy,
// which is what it takes to keep up with `zstd -T0` while the same process reads the files.
//
// Its memory is a fixed set of frame slots (input plus compressed output) outside the Go heap
// (see package offheap): enough for every encoder to work while one slot fills and one is
// written out. A full slot waits for a free one, which is the back-pressure that keeps memory
// bounded when the output is slower than the input.
type parallelEncoder struct {
	w   io.Writer
	enc *zstd.Encoder
	mem *offheap.Buffer
	cur *frameSlot // being filled
	// queue holds dispatched frames in stream order; free the slots not in use.
	queue   chan *frameSlot
	free    chan *frameSlot
	done    chan struct{}
	mu      sync.Mutex
	err     error
	aborted bool
	closed  bool
}

// frameSlot is the memory of one frame: in is filled with up to frameSize bytes of input, out
// receives the compressed frame (outBase is its memory, cap MaxEncodedSize(frameSize)).
type frameSlot struct {
	in, out, outBase []byte
	ready            chan struct{}
}

func newParallelEncoder(w io.Writer) (*parallelEncoder, error) {
	n := min(runtime.GOMAXPROCS(0), maxEncoders)
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(n),
		// A frame is all the history a match can use, so a larger window would only cost
		// memory. Lower memory keeps each encoder's history at one window (plus a block)
		// instead of two; a frame never needs more.
		zstd.WithWindowSize(frameSize),
		zstd.WithLowerEncoderMem(true),
		// No per-frame xxhash: every reader of a snapshot checks the SHA-256 of the whole
		// archive (VerifyObject) before a restored tree replaces anything, which covers what
		// the frame checksums would and more; skipping them saves ~3% of the compression CPU
		// here and the same again on every restore.
		zstd.WithEncoderCRC(false),
	)
	if err != nil {
		return nil, err
	}
	slots := n + 2
	outCap := enc.MaxEncodedSize(frameSize)
	stride := frameSize + outCap
	pe := &parallelEncoder{
		w:     w,
		enc:   enc,
		mem:   offheap.New(slots * stride),
		queue: make(chan *frameSlot, slots),
		free:  make(chan *frameSlot, slots),
		done:  make(chan struct{}),
	}
	mem := pe.mem.Bytes()
	for i := range slots {
		b := mem[i*stride : (i+1)*stride : (i+1)*stride]
		pe.free <- &frameSlot{in: b[:0:frameSize], outBase: b[frameSize:frameSize:stride]}
	}
	pe.cur = <-pe.free
	go pe.writeLoop()
	return pe, nil
}

func (pe *parallelEncoder) failed() error {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	return pe.err
}

func (pe *parallelEncoder) fail(err error) {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	if pe.err == nil {
		pe.err = err
	}
}

// Write implements io.Writer.
func (pe *parallelEncoder) Write(p []byte) (int, error) {
	if pe.closed {
		return 0, errClosed
	}
	if err := pe.failed(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), frameSize-len(pe.cur.in))
		pe.cur.in = append(pe.cur.in, p[:k]...)
		p = p[k:]
		n += k
		if len(pe.cur.in) == frameSize {
			pe.dispatch()
			pe.cur = <-pe.free
		}
	}
	return n, nil
}

// dispatch starts compressing the current slot and queues it for writing.
func (pe *parallelEncoder) dispatch() {
	s := pe.cur
	pe.cur = nil
	s.ready = make(chan struct{})
	go func() {
		s.out = pe.enc.EncodeAll(s.in, s.outBase[:0])
		close(s.ready)
	}()
	pe.queue <- s
}

func (pe *parallelEncoder) writeLoop() {
	defer close(pe.done)
	for s := range pe.queue {
		<-s.ready
		if pe.failed() == nil {
			if _, err := pe.w.Write(s.out); err != nil {
				pe.fail(err)
			}
		}
		s.in, s.out = s.in[:0], nil
		pe.free <- s
	}
}

// Close compresses what is left, waits until every frame is written and returns the first
// error. The slots' memory is given back: the encoder is unusable afterwards.
func (pe *parallelEncoder) Close() error {
	if pe.closed {
		return pe.failed()
	}
	pe.closed = true
	if !pe.aborted && len(pe.cur.in) > 0 {
		pe.dispatch()
	}
	close(pe.queue)
	// Once the writer is done, every dispatched frame has been compressed and written:
	// nothing refers to the slots any more.
	<-pe.done
	_ = pe.enc.Close()
	pe.cur = nil
	pe.mem.Free()
	return pe.failed()
}

// Abort stops the stream without writing what is still buffered, so that a failed archive does
// not end in a well-formed frame, and releases the workers.
func (pe *parallelEncoder) Abort() {
	pe.fail(errAborted)
	pe.aborted = true
	_ = pe.Close()
}

var (
	errAborted = errors.New("archive: stream aborted")
	errClosed  = errors.New("archive: write after close")
)
