package archivetest

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Entries decodes a snapshot archive (zstd-compressed tar) and calls visit with each entry and
// its contents, for tests that look at what an archive holds.
func Entries(tb testing.TB, archive []byte, visit func(h *tar.Header, data []byte)) {
	tb.Helper()
	zr, err := zstd.NewReader(bytes.NewReader(archive))
	if err != nil {
		tb.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			tb.Fatalf("decode archive: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			tb.Fatalf("decode archive: %q: %v", h.Name, err)
		}
		visit(h, data)
	}
}
