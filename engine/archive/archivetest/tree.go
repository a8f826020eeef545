// Package archivetest generates the benchmark tree every archive benchmark measures (the local
// one against tar|zstd, the S3 one), so they all archive the very same bytes.
package archivetest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// The tree's shape: the acceptance goal's "20k files, about 200 MB".
const (
	Files      = 20_000
	LargeFiles = 20
	TotalBytes = 200 << 20
)

// GenerateTree writes a deterministic tree that looks like a project to a compressor:
// many small text files of code-like tokens with a few random bytes, a skewed size distribution
// (log-normal small files plus a few multi-MB ones, some of them incompressible like images),
// ~20 files per directory, some executables and symlinks.
func GenerateTree(tb testing.TB, root string) (files int, payload int64) {
	tb.Helper()
	r := rand.New(rand.NewPCG(2024, 5))
	vocab := make([]string, 400)
	for i := range vocab {
		n := 2 + r.IntN(10)
		w := make([]byte, n)
		for j := range w {
			w[j] = "abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[r.IntN(63)]
		}
		vocab[i] = string(w)
	}
	vocab = append(vocab, "(", ")", "{", "}", "=", ":=", "return", "if", "for", "func", "const", ";", ",", ".")

	large := make([]int, LargeFiles)
	var largeTotal int
	for i := range large {
		large[i] = (1 + i%6) << 20
		largeTotal += large[i]
	}
	small := make([]float64, Files-LargeFiles)
	var smallTotal float64
	for i := range small {
		small[i] = math.Exp(8 + 1.1*r.NormFloat64())
		smallTotal += small[i]
	}
	scale := float64(TotalBytes-largeTotal) / smallTotal

	var line bytes.Buffer
	text := func(size int) []byte {
		var out bytes.Buffer
		out.Grow(size + 256)
		for out.Len() < size {
			line.Reset()
			for range r.IntN(4) {
				line.WriteByte('\t')
			}
			for range 2 + r.IntN(10) {
				line.WriteString(vocab[r.IntN(len(vocab))])
				line.WriteByte(' ')
			}
			line.WriteByte('\n')
			out.Write(line.Bytes())
			if r.IntN(40) == 0 {
				junk := make([]byte, 16+r.IntN(200))
				for i := range junk {
					junk[i] = byte(r.Uint32())
				}
				out.Write(junk)
			}
		}
		return out.Bytes()[:size]
	}
	random := func(size int) []byte {
		b := make([]byte, size)
		for i := 0; i+8 <= size; i += 8 {
			v := r.Uint64()
			for j := range 8 {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		return b
	}

	write := func(rel string, data []byte, mode os.FileMode) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			tb.Fatal(err)
		}
		files++
		payload += int64(len(data))
	}
	dirFor := func(i int) string {
		return filepath.Join(fmt.Sprintf("pkg%02d", i%10), fmt.Sprintf("mod%02d", (i/10)%10), fmt.Sprintf("part%d", (i/100)%10))
	}
	for i, s := range small {
		size := max(1, int(s*scale))
		mode := os.FileMode(0o644)
		if i%50 == 0 {
			mode = 0o755
		}
		write(filepath.Join(dirFor(i), fmt.Sprintf("file%05d.go", i)), text(size), mode)
	}
	for i, size := range large {
		data := text(size)
		if i%3 == 0 {
			data = random(size) // an image, a wasm blob: incompressible
		}
		write(filepath.Join("assets", fmt.Sprintf("blob%02d.bin", i)), data, 0o644)
	}
	for i := range 50 {
		if err := os.Symlink(fmt.Sprintf("../../../pkg00/mod00/part0/file%05d.go", i*1000), filepath.Join(root, dirFor(i), fmt.Sprintf("link%02d", i))); err != nil {
			tb.Fatal(err)
		}
	}
	return files, payload
}
