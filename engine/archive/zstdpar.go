package archive

import (
	"errors"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// frameSize is how much input goes into one zstd frame. Frames are compressed independently,
// which is what lets every core work at once; at this size the history lost at each frame
// boundary costs under 1% of output, and the frames in flight stay at a few MiB.
const frameSize = 1 << 20

// parallelEncoder compresses a stream as a sequence of independent zstd frames, several at a
// time, and writes them out in order. Any zstd decoder reads the result as one stream. The
// klauspost stream encoder overlaps only one block with the caller; this keeps every CPU busy,
// which is what it takes to keep up with `zstd -T0` while the same process reads the files.
type parallelEncoder struct {
	w       io.Writer
	enc     *zstd.Encoder
	filling []byte
	// queue holds dispatched frames in stream order; its capacity bounds the memory in flight.
	queue chan *frameJob
	done  chan struct{}
	// free recycles frame buffers. A fixed free list rather than a sync.Pool: the pool is
	// emptied by every GC, and the garbage that leaves behind would double the peak heap.
	free    chan []byte
	outCap  int
	mu      sync.Mutex
	err     error
	aborted bool
	closed  bool
}

type frameJob struct {
	in, out []byte
	ready   chan struct{}
}

func newParallelEncoder(w io.Writer) (*parallelEncoder, error) {
	n := runtime.GOMAXPROCS(0)
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(n),
		// A frame is all the history a match can use, so a larger window would only cost
		// memory (each encoder keeps two windows of it).
		zstd.WithWindowSize(frameSize),
	)
	if err != nil {
		return nil, err
	}
	depth := n + 1
	pe := &parallelEncoder{
		w:      w,
		enc:    enc,
		queue:  make(chan *frameJob, depth),
		done:   make(chan struct{}),
		free:   make(chan []byte, 2*(depth+2)),
		outCap: enc.MaxEncodedSize(frameSize),
	}
	pe.filling = pe.buffer(frameSize)
	go pe.writeLoop()
	return pe, nil
}

// buffer returns an empty buffer with room for at least size bytes.
func (pe *parallelEncoder) buffer(size int) []byte {
	select {
	case b := <-pe.free:
		if cap(b) >= size {
			return b[:0]
		}
	default:
	}
	return make([]byte, 0, max(size, pe.outCap))
}

func (pe *parallelEncoder) release(b []byte) {
	select {
	case pe.free <- b:
	default:
	}
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
	if err := pe.failed(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), frameSize-len(pe.filling))
		pe.filling = append(pe.filling, p[:k]...)
		p = p[k:]
		n += k
		if len(pe.filling) == frameSize {
			pe.dispatch()
		}
	}
	return n, nil
}

// dispatch starts compressing the filled buffer. Sending blocks while the queue is full, which
// is the back-pressure keeping memory bounded when the output is slower than the input.
func (pe *parallelEncoder) dispatch() {
	job := &frameJob{in: pe.filling, out: pe.buffer(pe.outCap), ready: make(chan struct{})}
	pe.filling = pe.buffer(frameSize)
	go func() {
		job.out = pe.enc.EncodeAll(job.in, job.out)
		close(job.ready)
	}()
	pe.queue <- job
}

func (pe *parallelEncoder) writeLoop() {
	defer close(pe.done)
	for job := range pe.queue {
		<-job.ready
		pe.release(job.in)
		if pe.failed() == nil {
			if _, err := pe.w.Write(job.out); err != nil {
				pe.fail(err)
			}
		}
		pe.release(job.out)
	}
}

// Close compresses what is left, waits until every frame is written and returns the first error.
func (pe *parallelEncoder) Close() error {
	if pe.closed {
		return pe.failed()
	}
	pe.closed = true
	if !pe.aborted && len(pe.filling) > 0 {
		pe.dispatch()
	}
	close(pe.queue)
	<-pe.done
	_ = pe.enc.Close()
	return pe.failed()
}

// Abort stops the stream without writing what is still buffered, so that a failed archive does
// not end in a well-formed frame, and releases the workers.
func (pe *parallelEncoder) Abort() {
	pe.fail(errAborted)
	pe.aborted = true
	_ = pe.Close()
}

var errAborted = errors.New("archive: stream aborted")
