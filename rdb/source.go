package rdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc64"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
)

// crcTable is Redis's CRC64 (Jones polynomial 0xad93d23594c935a9, reflected,
// initial value 0, no final xor). hash/crc64 takes the polynomial reversed.
var crcTable = crc64.MakeTable(bits.Reverse64(0xad93d23594c935a9))

// crc continues Redis's CRC64 c over p. hash/crc64 inverts the value before
// and after; inverting around the call cancels that.
func crc(c uint64, p []byte) uint64 {
	return ^crc64.Update(^c, crcTable, p)
}

// source is what the object decoder reads from: a payload in memory
// (bytesSource) or a stream (streamSource). Every method returns a
// formatError (or the stream's read error) when the bytes are not there.
type source interface {
	readByte() (byte, error)
	// read returns the next n bytes in a slice the caller may keep.
	read(n uint64) ([]byte, error)
	discard(n uint64) error
	// fits reports whether n more bytes can be present: for a payload,
	// whether n bytes are left; a stream cannot tell and says yes.
	fits(n uint64) bool
	// meter is the decoded-size budget of the value being decoded: read
	// charges it for every byte it returns, the decoder for what it makes.
	meter() *meter
}

// elementCost is what the decoded-size budget charges for each string a
// collection holds, on top of the string's bytes (which are charged where
// they are allocated: a raw string when read, an LZF string's expansion
// before it is made, a listpack or ziplist blob whole): a hash field and its
// value are two, a sorted-set member and its score two. 64 bytes is what an
// element costs beyond its bytes: decoding allocates a 24-byte slice header
// (up to twice, while the slice of elements grows), an integer's decimal
// text in its own 8- or 16-byte allocation, and for sets, sorted sets and
// hashes the map entry that checks members are distinct (measured, within
// twice the charge for every kind: TestDecodeAllocWithinBudget); and lockd
// keeps about 70 bytes per list element once it holds the value
// (raftstore/fsm's TestRestoreFullBudget).
const elementCost = 64

// ErrTooLarge is matched (errors.Is) by the error of a decoder given a
// limit (DecodeDumpLimit, NewReaderLimit) when the value it decodes would
// cost more than that: the value is refused as soon as the budget runs out,
// before the allocation that would exceed it. It is not a format error.
var ErrTooLarge = errors.New("rdb: value too large")

// tooLargeError is the ErrTooLarge a meter returns, naming its limit.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return "rdb: value too large: over " + strconv.FormatInt(e.limit, 10) + " bytes decoded"
}
func (e *tooLargeError) Is(target error) bool { return target == ErrTooLarge }

// meter is a decoded-size budget: every byte a decoder allocates for a value
// (its strings, LZF output, encoded blobs) and elementCost per element is
// charged before it is allocated. The zero meter has no limit (and counts,
// saturating at MaxInt64).
type meter struct {
	used    int64 // charged so far: what decoding has cost
	limit   int64
	limited bool
}

// charge adds n to the budget used, or, if that would pass the limit,
// returns an ErrTooLarge error and adds nothing.
func (m *meter) charge(n uint64) error {
	if m.limited && n > uint64(m.limit-m.used) {
		return &tooLargeError{limit: m.limit}
	}
	if n > uint64(math.MaxInt64-m.used) {
		m.used = math.MaxInt64
		return nil
	}
	m.used += int64(n)
	return nil
}

// chargeElems charges elementCost for each of n elements.
func (m *meter) chargeElems(n uint64) error {
	if n > math.MaxInt64/elementCost {
		n = math.MaxInt64 / elementCost
	}
	return m.charge(n * elementCost)
}

var errTruncated = &formatError{msg: "unexpected end of data"}

// bytesSource reads a payload held in memory.
type bytesSource struct {
	b   []byte
	off int
	m   meter
}

func (s *bytesSource) meter() *meter { return &s.m }

func (s *bytesSource) left() uint64 { return uint64(len(s.b) - s.off) }

func (s *bytesSource) fits(n uint64) bool { return n <= s.left() }

func (s *bytesSource) readByte() (byte, error) {
	if s.off >= len(s.b) {
		return 0, errTruncated
	}
	c := s.b[s.off]
	s.off++
	return c, nil
}

func (s *bytesSource) read(n uint64) ([]byte, error) {
	if n > s.left() {
		return nil, errTruncated
	}
	if err := s.m.charge(n); err != nil {
		return nil, err
	}
	out := slices.Clone(s.b[s.off : s.off+int(n)])
	s.off += int(n)
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

func (s *bytesSource) discard(n uint64) error {
	if n > s.left() {
		return errTruncated
	}
	s.off += int(n)
	return nil
}

// byteReader is what streamSource reads through: bufio.Reader and
// bytes.Reader are ones.
type byteReader interface {
	io.Reader
	io.ByteReader
}

// streamSource reads a stream and keeps Redis's CRC64 of every byte read.
// It allocates as bytes arrive, so a length that claims more than the
// stream holds costs at most what the stream holds (twice, while growing).
type streamSource struct {
	r   byteReader
	crc uint64
	n   int64 // bytes read
	m   meter // the budget of the record being read (Reader resets it)
}

func (s *streamSource) meter() *meter { return &s.m }

const readChunk = 1 << 20

func newStreamSource(r io.Reader) *streamSource {
	br, ok := r.(byteReader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &streamSource{r: br}
}

func (s *streamSource) fits(uint64) bool { return true }

func streamErr(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return errTruncated
	}
	return err
}

func (s *streamSource) readByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, streamErr(err)
	}
	s.crc = crc(s.crc, []byte{c})
	s.n++
	return c, nil
}

func (s *streamSource) read(n uint64) ([]byte, error) {
	if n > math.MaxInt32*2 {
		return nil, errf("length %d is beyond any Redis value", n)
	}
	if err := s.m.charge(n); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, min(n, readChunk))
	for uint64(len(buf)) < n {
		k := int(min(n-uint64(len(buf)), readChunk))
		start := len(buf)
		buf = slices.Grow(buf, k)[:start+k]
		if _, err := io.ReadFull(s.r, buf[start:]); err != nil {
			return nil, streamErr(err)
		}
		s.crc = crc(s.crc, buf[start:])
		s.n += int64(k)
	}
	return buf, nil
}

func (s *streamSource) discard(n uint64) error {
	var scratch [32 << 10]byte
	for n > 0 {
		k := min(n, uint64(len(scratch)))
		if _, err := io.ReadFull(s.r, scratch[:k]); err != nil {
			return streamErr(err)
		}
		s.crc = crc(s.crc, scratch[:k])
		s.n += int64(k)
		n -= k
	}
	return nil
}

// readLen reads an RDB length. encoded reports the 11xxxxxx form, whose low
// six bits (returned as n) name a special string encoding; where a length is
// expected Redis takes those six bits as the length, and so do callers here.
func readLen(s source) (n uint64, encoded bool, err error) {
	c, err := s.readByte()
	if err != nil {
		return 0, false, err
	}
	switch c >> 6 {
	case lenEnc:
		return uint64(c & 0x3f), true, nil
	case len6:
		return uint64(c & 0x3f), false, nil
	case len14:
		c2, err := s.readByte()
		if err != nil {
			return 0, false, err
		}
		return uint64(c&0x3f)<<8 | uint64(c2), false, nil
	}
	switch c {
	case len32:
		b, err := s.read(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(b)), false, nil
	case len64:
		b, err := s.read(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(b), false, nil
	}
	return 0, false, errf("unknown length encoding 0x%02x", c)
}

// readCount reads a length that counts items of at least minBytes bytes
// each, refusing one the source cannot hold.
func readCount(s source, minBytes uint64) (uint64, error) {
	n, _, err := readLen(s)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt32*2 || (minBytes > 0 && !s.fits(n*minBytes)) {
		return 0, errf("count %d exceeds the data", n)
	}
	return n, nil
}

// lzfMaxRatio bounds how many bytes LZF can produce from one input byte: a
// 3-byte back reference copies at most 7+255+2 = 264 bytes.
const lzfMaxRatio = 88

// readString reads an RDB string in any of its forms: raw, an 8/16/32-bit
// integer (returned in decimal), or LZF-compressed.
func readString(s source) ([]byte, error) {
	n, encoded, err := readLen(s)
	if err != nil {
		return nil, err
	}
	if !encoded {
		return s.read(n)
	}
	switch n {
	case encInt8, encInt16, encInt32:
		size := uint64(1) << n
		b, err := s.read(size)
		if err != nil {
			return nil, err
		}
		var v int64
		switch n {
		case encInt8:
			v = int64(int8(b[0]))
		case encInt16:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		default:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		}
		var buf [20]byte
		text := strconv.AppendInt(buf[:0], v, 10)
		if err := s.meter().charge(uint64(len(text))); err != nil {
			return nil, err
		}
		return slices.Clone(text), nil
	case encLZF:
		clen, _, err := readLen(s)
		if err != nil {
			return nil, err
		}
		ulen, _, err := readLen(s)
		if err != nil {
			return nil, err
		}
		if !s.fits(clen) || clen > math.MaxInt32*2 || ulen > clen*lzfMaxRatio {
			return nil, errf("LZF string of %d bytes claims %d", clen, ulen)
		}
		c, err := s.read(clen)
		if err != nil {
			return nil, err
		}
		if err := s.meter().charge(ulen); err != nil {
			return nil, err
		}
		out := make([]byte, ulen)
		if lzfDecompress(c, out) != len(out) {
			return nil, errf("invalid LZF compressed string")
		}
		return out, nil
	}
	return nil, errf("unknown string encoding %d", n)
}

// skipString passes over an RDB string without keeping it.
func skipString(s source) error {
	n, encoded, err := readLen(s)
	if err != nil {
		return err
	}
	if !encoded {
		return s.discard(n)
	}
	switch n {
	case encInt8, encInt16, encInt32:
		return s.discard(uint64(1) << n)
	case encLZF:
		clen, _, err := readLen(s)
		if err != nil {
			return err
		}
		if _, _, err := readLen(s); err != nil {
			return err
		}
		return s.discard(clen)
	}
	return errf("unknown string encoding %d", n)
}

// lzfDecompress expands the LZF data in into out and returns how many bytes
// it wrote, or 0 when in is malformed or would overflow out (Redis then
// compares that count with the expected length, and so does the caller).
func lzfDecompress(in, out []byte) int {
	ip, op := 0, 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 { // literal run of ctrl+1 bytes
			n := ctrl + 1
			if op+n > len(out) || ip+n > len(in) {
				return 0
			}
			copy(out[op:], in[ip:ip+n])
			op += n
			ip += n
			continue
		}
		// Back reference: length in the top 3 bits (7: one more byte),
		// offset in the low 5 bits and the next byte.
		n := ctrl >> 5
		ref := op - (ctrl&0x1f)<<8 - 1
		if ip >= len(in) {
			return 0
		}
		if n == 7 {
			n += int(in[ip])
			ip++
			if ip >= len(in) {
				return 0
			}
		}
		ref -= int(in[ip])
		ip++
		n += 2
		if op+n > len(out) || ref < 0 {
			return 0
		}
		for i := 0; i < n; i++ { // byte by byte: the ranges may overlap
			out[op+i] = out[ref+i]
		}
		op += n
	}
	return op
}
