package archivetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"math/rand/v2"
)

// Gen reads Size pseudo-random bytes (ChaCha8 from a seed: the same seed, the same bytes)
// without holding them, and hashes what it hands out: a large object for tests and benchmarks
// that must not keep it in memory.
type Gen struct {
	Size int64
	// N is how many bytes have been read so far.
	N int64
	// AfterRead, when set, is called after every read with N.
	AfterRead func(n int64)
	// FailAt, when not negative, makes every read from that offset on fail with ErrInjected.
	FailAt int64

	rng *rand.ChaCha8
	h   hash.Hash
}

// ErrInjected is the read error of a Gen past its FailAt.
var ErrInjected = errors.New("archivetest: injected read error")

// NewGen returns a Gen of size bytes from seed that never fails.
func NewGen(seed [32]byte, size int64) *Gen {
	return &Gen{Size: size, FailAt: -1, rng: rand.NewChaCha8(seed), h: sha256.New()}
}

func (g *Gen) Read(p []byte) (int, error) {
	if g.FailAt >= 0 && g.N >= g.FailAt {
		return 0, ErrInjected
	}
	if g.N >= g.Size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.Size-g.N)]
	_, _ = g.rng.Read(p)
	g.h.Write(p)
	g.N += int64(len(p))
	if g.AfterRead != nil {
		g.AfterRead(g.N)
	}
	return len(p), nil
}

// Sum is the SHA-256 of the bytes read so far.
func (g *Gen) Sum() []byte { return g.h.Sum(nil) }

// Matches reports whether n bytes with SHA-256 sum are what g generated, all Size of them:
// an object read back whole.
func (g *Gen) Matches(n int64, sum []byte) bool { return n == g.Size && bytes.Equal(sum, g.Sum()) }

// HashAll reads r to its end, returning how many bytes it read and their SHA-256.
func HashAll(r io.Reader) (int64, []byte, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return n, h.Sum(nil), err
}
