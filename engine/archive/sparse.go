package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"

	"github.com/sailtui/sailtui/engine"
)

// A sparse file (a disk image, a database's preallocated file) is mostly holes: a 6 GiB file
// may hold a few MiB. Reading it as it reads (zeros where the holes are) would make the archive
// pay for the zeros' compression and a restore write them all out, which fills a disk with what
// took no room. So Write stores its data fragments only, as GNU tar's PAX sparse format 1.0
// (GNU.sparse.* records; the data begins with the map of fragments), which GNU tar and Go's
// archive/tar read; and Extract makes a hole of every run of zeros of such a file, by not
// writing it.

// fragment is a run of data of a sparse file: off and len in the file.
type fragment struct{ off, len int64 }

// sparseFile is a file being archived whose holes can be found (Linux: SEEK_DATA and SEEK_HOLE).
type sparseFile interface {
	fileReader
	io.ReaderAt
	dataMap(size int64, maxFrags int) ([]fragment, error)
}

// minHoles is how much of a file's length must be unallocated before its holes are looked for:
// below that the zeros cost next to nothing, and the ordinary file (allocated as long as it is)
// is not asked for a map it does not have.
const minHoles = 64 << 10

// maxFragments bounds the data fragments kept apart in one sparse file: the map goes in the
// archive's data (about 30 bytes a fragment), and a reader holds it whole (Go's archive/tar
// refuses maps over 1 MiB). Past it, the rest of the file is archived as data, zeros included;
// an extraction still makes holes of them. A variable so tests can reach it.
var maxFragments = 8192

// sparseBlock is the unit Extract makes holes of, and in which a sparse file's data is
// counted: a run of zeros that fills an aligned block is not written.
const sparseBlock = 4 << 10

// mayBeSparse is whether the file es describes has room enough unallocated to be worth a map.
func mayBeSparse(es entryStat) bool {
	return es.blocks >= 0 && es.size-es.blocks*512 >= minHoles
}

// payloadOf is what a regular file adds to the progress total: its length, holes included
// (the walk that measures opens nothing to find them; archiving a hole counts it as done).
func payloadOf(es entryStat) int64 { return es.size }

// blocksCovered is the bytes of the sparseBlock-aligned blocks that the fragments cover in a
// file of size bytes: the most an extraction of them writes (a block shared by two fragments
// counts twice, which only errs on the safe side).
func blocksCovered(frags []fragment, size int64) int64 {
	var n int64
	for _, f := range frags {
		if f.len == 0 {
			continue
		}
		start := f.off &^ (sparseBlock - 1)
		end := min((f.off+f.len+sparseBlock-1)&^(sparseBlock-1), size)
		n += end - start
	}
	return n
}

// PAX sparse 1.0's records, and the ustar fields' limits past which a PAX record holds a value.
const (
	paxSparseMajor    = "GNU.sparse.major"
	paxSparseMinor    = "GNU.sparse.minor"
	paxSparseName     = "GNU.sparse.name"
	paxSparseRealSize = "GNU.sparse.realsize"
	maxOctal11        = 1<<33 - 1 // size, mtime
	maxOctal7         = 1<<21 - 1 // uid, gid
)

// sparse archives the regular file f at rel, described by es, of which frags are the data
// fragments (sorted, apart). archive/tar cannot write a sparse entry, so its two headers are
// written here, straight into the stream between two of tw's entries: a PAX extended header
// with the GNU.sparse records, then a ustar header whose size is that of the data that follows
// (the map, padded to a block, then the fragments, back to back).
func (aw *archiveWriter) sparse(rel string, f sparseFile, es entryStat, frags []fragment) error {
	// The map always ends at the file's length, with an empty fragment when the file ends in a
	// hole, as GNU tar writes it: a reader then knows the length from the map alone.
	if n := len(frags); n == 0 || frags[n-1].off+frags[n-1].len < es.size {
		frags = append(frags, fragment{off: es.size})
	}
	var mb []byte
	mb = append(strconv.AppendInt(mb, int64(len(frags)), 10), '\n')
	var data int64
	for _, fr := range frags {
		mb = append(strconv.AppendInt(mb, fr.off, 10), '\n')
		mb = append(strconv.AppendInt(mb, fr.len, 10), '\n')
		data += fr.len
	}
	mb = append(mb, make([]byte, blockPad(int64(len(mb))))...)
	phys := int64(len(mb)) + data

	var uid, gid int
	if aw.owners {
		uid, gid = es.uid, es.gid
	}
	mtime := es.mtime.Unix()
	recs := []string{
		paxRecord(paxSparseMajor, "1"),
		paxRecord(paxSparseMinor, "0"),
		paxRecord(paxSparseName, rel),
		paxRecord(paxSparseRealSize, strconv.FormatInt(es.size, 10)),
	}
	// Values a ustar field cannot hold go in records, and the field holds 0.
	hsize, hmtime, huid, hgid := phys, mtime, int64(uid), int64(gid)
	if phys > maxOctal11 {
		recs, hsize = append(recs, paxRecord("size", strconv.FormatInt(phys, 10))), 0
	}
	if mtime < 0 || mtime > maxOctal11 {
		recs, hmtime = append(recs, paxRecord("mtime", strconv.FormatInt(mtime, 10))), 0
	}
	if uid > maxOctal7 {
		recs, huid = append(recs, paxRecord("uid", strconv.Itoa(uid))), 0
	}
	if gid > maxOctal7 {
		recs, hgid = append(recs, paxRecord("gid", strconv.Itoa(gid))), 0
	}
	var ext []byte
	for _, r := range recs {
		ext = append(ext, r...)
	}
	// The names in the headers are for readers that know nothing of sparse files (they
	// extract the raw data there, under a name that says what it is); GNU.sparse.name is the
	// file's.
	dir, base := path.Split(rel)
	short := func(what string) string {
		if n := dir + what + "/" + base; len(n) <= 100 {
			return n
		}
		return what + "/sparse"
	}
	out := make([]byte, 0, 3*blockSize+len(ext))
	out = ustarHeader(out, short("PaxHeaders.0"), 'x', int64(len(ext)), 0o644, hmtime, 0, 0)
	out = append(out, ext...)
	out = append(out, make([]byte, blockPad(int64(len(ext))))...)
	out = ustarHeader(out, short("GNUSparseFile.0"), tar0, hsize, es.mode, hmtime, huid, hgid)
	out = append(out, mb...)
	// tw pads the previous entry only when asked; nothing of it may follow these bytes.
	if err := aw.tw.Flush(); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	if _, err := aw.raw.Write(out); err != nil {
		return fmt.Errorf("%q: write header: %w", rel, err)
	}
	for _, fr := range frags {
		if err := aw.copyFragment(rel, f, fr); err != nil {
			return err
		}
	}
	// A file that grew past its length since it was mapped is not the file mapped.
	if n, _ := f.ReadAt(aw.buf[:1], es.size); n > 0 {
		return fmt.Errorf("%q: file grew while being archived", rel)
	}
	aw.advance(es.size - data) // the holes, which the measuring walk counted as length
	if _, err := aw.raw.Write(make([]byte, blockPad(phys))); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	aw.st.Files++
	aw.st.Sparse++
	aw.st.Bytes += blocksCovered(frags, es.size)
	return nil
}

// copyFragment streams the fragment fr of f (the file at rel) into the archive.
func (aw *archiveWriter) copyFragment(rel string, f sparseFile, fr fragment) error {
	for off, end := fr.off, fr.off+fr.len; off < end; {
		n, err := f.ReadAt(aw.buf[:min(end-off, int64(len(aw.buf)))], off)
		if n > 0 {
			if _, werr := aw.raw.Write(aw.buf[:n]); werr != nil {
				return fmt.Errorf("%q: %w", rel, werr)
			}
			off += int64(n)
			aw.advance(int64(n))
		}
		switch {
		case errors.Is(err, io.EOF):
			return fmt.Errorf("%q: file shrank while being archived", rel)
		case err != nil:
			return fmt.Errorf("%q: %w", rel, err)
		}
		if err := aw.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

const (
	blockSize = 512
	tar0      = '0' // tar.TypeReg
)

func blockPad(n int64) int64 { return -n & (blockSize - 1) }

// paxRecord formats one PAX record: "<length> <key>=<value>\n", the length counting itself.
func paxRecord(k, v string) string {
	n := len(k) + len(v) + 3 // ' ', '=' and '\n'
	n += len(strconv.Itoa(n))
	rec := strconv.Itoa(n) + " " + k + "=" + v + "\n"
	if len(rec) != n {
		// The length's own digits carried it to one digit more.
		rec = strconv.Itoa(len(rec)) + " " + k + "=" + v + "\n"
	}
	return rec
}

// ustarHeader appends a ustar header block: name (at most 100 bytes), type, and the numeric
// fields, each of which the caller made fit.
func ustarHeader(out []byte, name string, typ byte, size, mode, mtime, uid, gid int64) []byte {
	var b [blockSize]byte
	copy(b[0:100], name)
	octal(b[100:108], mode)
	octal(b[108:116], uid)
	octal(b[116:124], gid)
	octal(b[124:136], size)
	octal(b[136:148], mtime)
	b[156] = typ
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	copy(b[148:156], "        ")
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	octal(b[148:155], sum)
	b[155] = ' '
	return append(out, b[:]...)
}

// octal writes v as zero-padded octal digits filling all of field but its last byte, a NUL.
func octal(field []byte, v int64) {
	s := strconv.FormatInt(v, 8)
	n := len(field) - 1
	copy(field, bytes.Repeat([]byte{'0'}, n-len(s)))
	copy(field[n-len(s):], s)
	field[n] = 0
}

// sparseData is the data of a sparse entry as Filter hands it on: the file's content, holes
// read as zeros (archive/tar expands them). It counts what an extraction of it writes against
// the limit on the payload: every sparseBlock-aligned block with a byte that is not zero,
// once, whoever reads and however. Extract reads it with runs, which writes the blocks with
// data and leaves the rest holes; any other reader gets the content as it is.
type sparseData struct {
	r    io.Reader
	size int64
	pos  int64
	c    *checker
	// block is the index of the last block seen, counted whether it was counted.
	block   int64
	counted bool
}

func newSparseData(r io.Reader, size int64, c *checker) *sparseData {
	return &sparseData{r: r, size: size, c: c, block: -1}
}

// Read implements io.Reader.
func (s *sparseData) Read(b []byte) (int, error) {
	if s.pos >= s.size {
		return 0, io.EOF
	}
	n, err := s.r.Read(b[:min(int64(len(b)), s.size-s.pos)])
	if cerr := s.scan(b[:n], nil); cerr != nil {
		return 0, cerr
	}
	if err == io.EOF && s.pos < s.size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// runs reads the next part of the file into buf (all of it, or what is left) and hands fn
// each run of blocks that hold data, with its offset in the file; io.EOF once all was read.
func (s *sparseData) runs(buf []byte, fn func(off int64, p []byte) error) error {
	if s.pos >= s.size {
		return io.EOF
	}
	n, err := io.ReadFull(s.r, buf[:min(int64(len(buf)), s.size-s.pos)])
	if err != nil {
		return err
	}
	return s.scan(buf[:n], fn)
}

var zeroBlock [sparseBlock]byte

// scan accounts for p, the next bytes of the file, and hands fn (when not nil) the runs of it
// that hold data, in whole blocks as far as p goes.
func (s *sparseData) scan(p []byte, fn func(off int64, p []byte) error) error {
	start := s.pos
	runStart := -1
	for i := 0; i < len(p); {
		at := s.pos + int64(i)
		blk := at / sparseBlock
		end := min(len(p), i+int(sparseBlock-at%sparseBlock))
		zero := bytes.Equal(p[i:end], zeroBlock[:end-i])
		if blk != s.block {
			s.block, s.counted = blk, false
		}
		if !zero && !s.counted {
			s.counted = true
			blockLen := min(int64(sparseBlock), s.size-blk*sparseBlock)
			if s.c.claimed+blockLen > s.c.lim.MaxBytes {
				return fmt.Errorf("archive expands past the limit of %d bytes: %w", s.c.lim.MaxBytes, engine.ErrBadInput)
			}
			s.c.claimed += blockLen
		}
		switch {
		case !zero && runStart < 0:
			runStart = i
		case zero && runStart >= 0 && fn != nil:
			if err := fn(start+int64(runStart), p[runStart:i]); err != nil {
				return err
			}
			runStart = -1
		case zero:
			runStart = -1
		}
		i = end
	}
	if runStart >= 0 && fn != nil {
		if err := fn(start+int64(runStart), p[runStart:]); err != nil {
			return err
		}
	}
	s.pos += int64(len(p))
	return nil
}
