package offheap

import "golang.org/x/sys/unix"

// alloc maps n bytes of private anonymous memory; if the kernel refuses, the heap will do.
func alloc(n int) ([]byte, bool) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return make([]byte, n), false
	}
	return b, true
}

// release unmaps b. Munmap fails only for a slice that is not a live mapping, which Free rules
// out; there is nothing a caller could do about it, so the error is dropped rather than turned
// into a panic across the package line.
func release(b []byte) { _ = unix.Munmap(b) }
