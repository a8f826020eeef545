// Package offheap hands out large, long-lived byte buffers that live outside the Go heap.
//
// The garbage collector lets the heap grow to about twice what was live after the last
// collection (GOGC=100). A streaming archiver or uploader holds most of its memory in a few big
// buffers that stay live for the whole operation: on the heap they would double, in the peak
// resident set, as the collector's headroom. Kept outside it, they cost exactly their size, the
// heap stays small, and so does its headroom, whatever GOGC or GOMEMLIMIT say. The memory goes
// back to the system as soon as a buffer is freed.
//
// A buffer must be freed exactly once, and neither it nor any slice of it may be used after
// that: on Linux the memory is unmapped, and a stray access faults.
package offheap

import "sync/atomic"

// Buffer is a byte buffer outside the Go heap (on the heap where that is not available).
type Buffer struct {
	b      []byte
	mapped bool
}

var inUse atomic.Int64

// New returns a zeroed buffer of n bytes. Its pages take memory only once written to.
func New(n int) *Buffer {
	if n <= 0 {
		return &Buffer{}
	}
	b, mapped := alloc(n)
	inUse.Add(int64(len(b)))
	return &Buffer{b: b, mapped: mapped}
}

// Bytes returns the buffer's memory; nil once freed.
func (b *Buffer) Bytes() []byte { return b.b }

// Free gives the memory back. Freeing twice, or a nil Buffer, does nothing.
func (b *Buffer) Free() {
	if b == nil || b.b == nil {
		return
	}
	inUse.Add(-int64(len(b.b)))
	if b.mapped {
		release(b.b)
	}
	b.b = nil
}

// InUse reports the bytes held by buffers not yet freed, for tests and benchmarks that bound
// a process's memory: the Go runtime's statistics do not see them.
func InUse() int64 { return inUse.Load() }
