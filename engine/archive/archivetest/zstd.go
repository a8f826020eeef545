package archivetest

import "testing"

// WideWindow wraps b (at most 128 KiB) in a zstd frame, built by hand as a hostile object
// would be, whose header asks for a window of 1<<windowLog bytes.
func WideWindow(t testing.TB, b []byte, windowLog int) []byte {
	t.Helper()
	if len(b) > 128<<10 {
		t.Fatal("WideWindow: one raw block holds at most 128 KiB")
	}
	out := []byte{0x28, 0xb5, 0x2f, 0xfd, // magic
		0x00,                    // no content size, not single-segment, no checksum, no dictionary
		byte(windowLog-10) << 3} // window descriptor: exponent, mantissa 0
	hdr := 1 | len(b)<<3 // last block, raw
	out = append(out, byte(hdr), byte(hdr>>8), byte(hdr>>16))
	return append(out, b...)
}
