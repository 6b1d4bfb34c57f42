package resp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// The binary codec below carries a Value from node to node (a follower relays
// the leader's replies). It is not RESP: RESP3 would merge KindNull and
// KindNullArray, which a RESP2 client sees as different replies, and both
// protocols lose a Double's NaN payload and any field outside a Kind's own.
//
// Encoding (version 1): one version byte, then the value tree.
//
//	value   = compact | full
//	compact = kind (1 byte, a known Kind) fields-of-kind
//	full    = 0xFF kind (1 byte, any) str int float elems
//	str     = uvarint(len) bytes          Simple, Error, Bulk, Verbatim
//	int     = varint (zig-zag)            Int, Bool
//	float   = 8 bytes, IEEE 754 bits LE   Double
//	elems   = uvarint(count) value...     Array, Map, Set, Push
//
// Null and NullArray have no fields. The encoder uses the full form only when
// the compact one would lose something: a Kind it does not know, or a field
// set outside its Kind (say a Str on a KindInt). The encoding is canonical:
// the decoder accepts only what the encoder writes (minimal varints, the full
// form only where needed), so AppendValue(nil, v) reproduces the exact bytes
// that ReadValue consumed.

// codecVersion is the first byte of every encoded Value.
const codecVersion = 1

// tagFull introduces a Value encoded with all four fields.
const tagFull = 0xFF

// MaxDepth is the deepest nesting ReadValue accepts: the top-level Value is at
// depth 1, its Elems at depth 2, and so on. It is above the nesting a script
// reply can reach (1000 levels); AppendValue does not check it, so a deeper
// Value encodes but does not decode.
const MaxDepth = 4096

// ErrBadValue is the error, wrapped with the reason and offset, of ReadValue on
// input that is not a complete, canonical encoding of one Value.
var ErrBadValue = errors.New("resp: malformed binary value")

// field names the one field a known Kind carries.
type field uint8

const (
	fieldNone field = iota
	fieldStr
	fieldInt
	fieldFloat
	fieldElems
)

// fieldOf returns the field that k carries, and false for an unknown Kind.
func fieldOf(k Kind) (field, bool) {
	switch k {
	case KindNull, KindNullArray:
		return fieldNone, true
	case KindSimple, KindError, KindBulk, KindVerbatim:
		return fieldStr, true
	case KindInt, KindBool:
		return fieldInt, true
	case KindDouble:
		return fieldFloat, true
	case KindArray, KindMap, KindSet, KindPush:
		return fieldElems, true
	}
	return fieldNone, false
}

// needsFull reports whether a Value with these fields must use the full form.
func needsFull(k Kind, strLen int, i int64, floatBits uint64, elems int) bool {
	f, known := fieldOf(k)
	return !known ||
		(f != fieldStr && strLen != 0) ||
		(f != fieldInt && i != 0) ||
		(f != fieldFloat && floatBits != 0) ||
		(f != fieldElems && elems != 0)
}

// AppendValue appends the binary encoding of v to buf and returns the extended
// buffer. Every Kind (known or not) and every field round-trips through
// ReadValue bit for bit, Float's NaN payloads and -0 included, with one
// exception: an empty Str or Elems decodes as nil, whether it was nil or empty.
func AppendValue(buf []byte, v Value) []byte {
	buf = append(buf, codecVersion)
	return appendValue(buf, &v)
}

func appendValue(buf []byte, v *Value) []byte {
	fb := math.Float64bits(v.Float)
	if needsFull(v.Kind, len(v.Str), v.Int, fb, len(v.Elems)) {
		buf = append(buf, tagFull, byte(v.Kind))
		buf = appendStr(buf, v.Str)
		buf = binary.AppendVarint(buf, v.Int)
		buf = binary.LittleEndian.AppendUint64(buf, fb)
		return appendElems(buf, v.Elems)
	}
	buf = append(buf, byte(v.Kind))
	switch f, _ := fieldOf(v.Kind); f {
	case fieldStr:
		buf = appendStr(buf, v.Str)
	case fieldInt:
		buf = binary.AppendVarint(buf, v.Int)
	case fieldFloat:
		buf = binary.LittleEndian.AppendUint64(buf, fb)
	case fieldElems:
		buf = appendElems(buf, v.Elems)
	}
	return buf
}

func appendStr(buf, s []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendElems(buf []byte, elems []Value) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(elems)))
	for i := range elems {
		buf = appendValue(buf, &elems[i])
	}
	return buf
}

// ReadValue decodes the Value at the start of b and returns it with the number
// of bytes it took; bytes after them are not looked at. The Value does not
// alias b: its strings share one new buffer and its Elems one new array (so
// keeping any part of the Value keeps all of it in memory).
//
// Input is checked in full before anything is allocated: a truncated,
// non-canonical or unknown encoding, a length beyond the input, or nesting
// deeper than MaxDepth is an error wrapping ErrBadValue. Memory is bounded by
// the input: each string byte costs one byte and each encoded element (at
// least one input byte) one Value.
func ReadValue(b []byte) (Value, int, error) {
	if len(b) == 0 {
		return Value{}, 0, fmt.Errorf("%w: empty input", ErrBadValue)
	}
	if b[0] != codecVersion {
		return Value{}, 0, fmt.Errorf("%w: unsupported version %d", ErrBadValue, b[0])
	}
	s := scanner{b: b, off: 1}
	if err := s.value(1); err != nil {
		return Value{}, 0, err
	}
	d := builder{b: b, off: 1}
	if s.elems > 0 {
		d.elems = make([]Value, s.elems)
	}
	if s.strBytes > 0 {
		d.strs = make([]byte, s.strBytes)
	}
	var v Value
	d.value(&v)
	return v, s.off, nil
}

// scanner is ReadValue's first pass: it validates the encoding and counts
// what the second pass will allocate.
type scanner struct {
	b        []byte
	off      int
	elems    int // Values inside Elems, over the whole tree
	strBytes int // bytes of Str, over the whole tree
}

func (s *scanner) errf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", ErrBadValue, fmt.Sprintf(format, args...), s.off)
}

func (s *scanner) value(depth int) error {
	if depth > MaxDepth {
		return s.errf("nesting deeper than %d", MaxDepth)
	}
	if s.off >= len(s.b) {
		return s.errf("truncated value")
	}
	tag := s.b[s.off]
	s.off++
	if tag == tagFull {
		if s.off >= len(s.b) {
			return s.errf("truncated value")
		}
		kind := Kind(s.b[s.off])
		s.off++
		strLen, err := s.str()
		if err != nil {
			return err
		}
		i, err := s.varint()
		if err != nil {
			return err
		}
		fb, err := s.float()
		if err != nil {
			return err
		}
		n, err := s.elemsOf(depth)
		if err != nil {
			return err
		}
		if !needsFull(kind, strLen, i, fb, n) {
			return s.errf("full form for a value of kind %d that has a compact one", kind)
		}
		return nil
	}
	f, known := fieldOf(Kind(tag))
	if !known {
		return s.errf("unknown tag %#x", tag)
	}
	var err error
	switch f {
	case fieldStr:
		_, err = s.str()
	case fieldInt:
		_, err = s.varint()
	case fieldFloat:
		_, err = s.float()
	case fieldElems:
		_, err = s.elemsOf(depth)
	}
	return err
}

// length reads a uvarint that counts things of at least one byte each, so it
// cannot exceed the bytes left.
func (s *scanner) length() (int, error) {
	u, n := binary.Uvarint(s.b[s.off:])
	if n <= 0 {
		return 0, s.errf("bad length")
	}
	if n != uvarintLen(u) {
		return 0, s.errf("non-minimal length")
	}
	s.off += n
	if u > uint64(len(s.b)-s.off) {
		return 0, s.errf("length %d beyond the %d bytes left", u, len(s.b)-s.off)
	}
	return int(u), nil
}

func (s *scanner) str() (int, error) {
	n, err := s.length()
	if err != nil {
		return 0, err
	}
	s.off += n
	s.strBytes += n
	return n, nil
}

func (s *scanner) varint() (int64, error) {
	i, n := binary.Varint(s.b[s.off:])
	if n <= 0 {
		return 0, s.errf("bad integer")
	}
	if n != uvarintLen(uint64(i)<<1^uint64(i>>63)) {
		return 0, s.errf("non-minimal integer")
	}
	s.off += n
	return i, nil
}

func (s *scanner) float() (uint64, error) {
	if len(s.b)-s.off < 8 {
		return 0, s.errf("truncated double")
	}
	fb := binary.LittleEndian.Uint64(s.b[s.off:])
	s.off += 8
	return fb, nil
}

func (s *scanner) elemsOf(depth int) (int, error) {
	n, err := s.length()
	if err != nil {
		return 0, err
	}
	s.elems += n
	for range n {
		if err := s.value(depth + 1); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// uvarintLen is the length of the minimal uvarint encoding of u.
func uvarintLen(u uint64) int {
	return (bits.Len64(u|1) + 6) / 7
}

// builder is ReadValue's second pass over input the scanner accepted: it
// fills Values from two arenas sized by the scanner.
type builder struct {
	b     []byte
	off   int
	elems []Value
	strs  []byte
}

func (d *builder) value(v *Value) {
	tag := d.b[d.off]
	d.off++
	if tag == tagFull {
		v.Kind = Kind(d.b[d.off])
		d.off++
		v.Str = d.str()
		v.Int = d.varint()
		v.Float = d.float()
		v.Elems = d.elemsOf()
		return
	}
	v.Kind = Kind(tag)
	switch f, _ := fieldOf(v.Kind); f {
	case fieldStr:
		v.Str = d.str()
	case fieldInt:
		v.Int = d.varint()
	case fieldFloat:
		v.Float = d.float()
	case fieldElems:
		v.Elems = d.elemsOf()
	}
}

func (d *builder) length() int {
	u, n := binary.Uvarint(d.b[d.off:])
	d.off += n
	return int(u)
}

func (d *builder) str() []byte {
	n := d.length()
	if n == 0 {
		return nil
	}
	s := d.strs[:n:n]
	d.strs = d.strs[n:]
	copy(s, d.b[d.off:d.off+n])
	d.off += n
	return s
}

func (d *builder) varint() int64 {
	i, n := binary.Varint(d.b[d.off:])
	d.off += n
	return i
}

func (d *builder) float() float64 {
	fb := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return math.Float64frombits(fb)
}

func (d *builder) elemsOf() []Value {
	n := d.length()
	if n == 0 {
		return nil
	}
	elems := d.elems[:n:n]
	d.elems = d.elems[n:]
	for i := range elems {
		d.value(&elems[i])
	}
	return elems
}
