package archive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// zstdMagic starts every zstd frame; fuzz inputs that begin with it are fed to Extract as they
// are, so the fuzzer explores the decoder too, and all others are compressed first, so it
// spends its effort on the tar layer where the path checks live.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// FuzzExtract asserts that no input makes Extract write outside its target, leave a symlink
// that resolves outside, or create anything but files, directories and symlinks.
func FuzzExtract(f *testing.F) {
	for _, tc := range hostileCorpus() {
		// The expansion bombs are covered by the unit tests; megabytes of zeros would only
		// slow every mutation and minimisation down.
		if seed := makeTar(f, tc.entries("/fuzz-base")); len(seed) <= 64<<10 {
			f.Add(seed)
		}
	}
	f.Add(makeTar(f, []tarEntry{dir("a/"), reg("a/b", []byte("hello")), symlink("a/l", "b"), symlink("up", "a/../a")}))
	f.Add(compress(makeTar(f, []tarEntry{reg("x", []byte("zstd seed"))})))

	f.Fuzz(func(t *testing.T, data []byte) {
		base, target := sandbox(t)
		// A symlink out of the target planted beside it, as a real storage directory's
		// neighbour could be: a name resolving through it would land in base/outside.
		if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(base, "escape")); err != nil {
			t.Fatal(err)
		}
		before := outsideSnapshot(t, base, target)
		arc := data
		if !bytes.HasPrefix(data, zstdMagic) {
			arc = compress(data)
		}
		lim := Limits{MaxBytes: 1 << 20, MaxFiles: 200}
		_, _ = Extract(context.Background(), bytes.NewReader(arc), target, lim)
		if after := outsideSnapshot(t, base, target); after != before {
			t.Fatalf("Extract wrote outside its target:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		checkInside(t, target)
		checkWithinLimits(t, target, lim)
	})
}
