package rdb

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
)

// Redis 7.0's default encoding thresholds (config.c), which EncodeDump
// follows so that its choice of encoding is Redis's. hash-max-listpack-entries
// is 512 in 7.0 (CONFIG GET on 7.0.15 says so), not 128 like the sorted sets'.
const (
	hashMaxListpackEntries = 512
	hashMaxListpackValue   = 64
	zsetMaxListpackEntries = 128
	zsetMaxListpackValue   = 64
	setMaxIntsetEntries    = 512
	// listMaxListpackSize -2: a quicklist node's listpack stays within 8 KB.
	listNodeMaxBytes = 8192
	// A quicklist node's size estimate adds this per entry (quicklist.c
	// SIZE_ESTIMATE_OVERHEAD).
	listEntryOverhead = 8
	// Elements from this size on get a PLAIN node of their own.
	listPackedThreshold = 1 << 30
)

// EncodeDump returns a DUMP payload of v that Redis 7.0.15's RESTORE
// accepts, in the encoding Redis 7.0 would pick for a value built from
// empty with its default configuration: strings as integers where Redis
// stores them so; hashes as listpacks within 512 fields and sorted sets
// within 128 members, of at most 64 bytes each, else as plain hashes and
// ZSET_2 (binary scores,
// highest first); lists as quicklist v2 nodes filled as RPUSH fills them
// (each listpack within 8 KB); sets as intsets when every member is an
// integer and there are at most 512, else as plain sets. Strings are never
// LZF-compressed (RESTORE reads both forms); with rdbcompression off the
// bytes equal Redis's own DUMP of such a value wherever its order is
// Redis's (hashes and sets in hash-table form come out in v's order).
//
// v must hold what Value documents (distinct members and fields); a sorted
// set is written in Redis's order whatever v's order. A collection with no
// elements yields a payload RESTORE refuses, as Redis never dumps one.
// EncodeDump panics on a Type outside the five.
func EncodeDump(v Value) []byte {
	var w writer
	switch v.Type {
	case String:
		w.byte(typeString)
		w.rawString(v.Str)
	case List:
		w.byte(typeListQuicklist2)
		w.quicklist(v.List)
	case Set:
		if isIntset(v.Set) {
			w.byte(typeSetIntset)
			w.rawString(intsetBlob(v.Set))
		} else {
			w.byte(typeSet)
			w.len(uint64(len(v.Set)))
			for _, m := range v.Set {
				w.rawString(m)
			}
		}
	case ZSet:
		ms := slices.Clone(v.ZSet)
		sortZSet(ms)
		if zsetFitsListpack(ms) {
			var lp listpack
			for _, m := range ms {
				lp.append(m.Member)
				if i, ok := double2ll(m.Score); ok {
					lp.appendInt(i)
				} else {
					lp.append(d2string(m.Score))
				}
			}
			w.byte(typeZSetListpack)
			w.rawString(lp.bytes())
		} else {
			w.byte(typeZSet2)
			w.len(uint64(len(ms)))
			for i := len(ms) - 1; i >= 0; i-- {
				w.rawString(ms[i].Member)
				w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(ms[i].Score))
			}
		}
	case Hash:
		if hashFitsListpack(v.Hash) {
			var lp listpack
			for _, f := range v.Hash {
				lp.append(f.Field)
				lp.append(f.Value)
			}
			w.byte(typeHashListpack)
			w.rawString(lp.bytes())
		} else {
			w.byte(typeHash)
			w.len(uint64(len(v.Hash)))
			for _, f := range v.Hash {
				w.rawString(f.Field)
				w.rawString(f.Value)
			}
		}
	default:
		panic("rdb: EncodeDump of " + v.Type.String())
	}
	return AppendFooter(w.b, Version)
}

// AppendFooter appends the footer Redis ends a DUMP payload with to body (a
// value's serialization): the RDB version, then the CRC64 of everything
// before the checksum. For payloads built by hand (tests, tools).
func AppendFooter(body []byte, version uint16) []byte {
	body = binary.LittleEndian.AppendUint16(body, version)
	return binary.LittleEndian.AppendUint64(body, crc(0, body))
}

func zsetFitsListpack(ms []Member) bool {
	if len(ms) > zsetMaxListpackEntries {
		return false
	}
	for _, m := range ms {
		if len(m.Member) > zsetMaxListpackValue {
			return false
		}
	}
	return true
}

func hashFitsListpack(fs []Field) bool {
	if len(fs) > hashMaxListpackEntries {
		return false
	}
	for _, f := range fs {
		if len(f.Field) > hashMaxListpackValue || len(f.Value) > hashMaxListpackValue {
			return false
		}
	}
	return true
}

func isIntset(ms [][]byte) bool {
	if len(ms) == 0 || len(ms) > setMaxIntsetEntries {
		return false
	}
	for _, m := range ms {
		if _, ok := string2ll(m); !ok {
			return false
		}
	}
	return true
}

// intsetBlob is the intset of ms (all integers): the narrowest width that
// holds every member, members ascending, duplicates once.
func intsetBlob(ms [][]byte) []byte {
	vs := make([]int64, 0, len(ms))
	width := uint32(2)
	for _, m := range ms {
		i, _ := string2ll(m)
		vs = append(vs, i)
		switch {
		case i < math.MinInt32 || i > math.MaxInt32:
			width = 8
		case (i < math.MinInt16 || i > math.MaxInt16) && width < 4:
			width = 4
		}
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	b := make([]byte, 8, 8+len(vs)*int(width))
	binary.LittleEndian.PutUint32(b, width)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(vs)))
	for _, i := range vs {
		switch width {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(i))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(i))
		default:
			b = binary.LittleEndian.AppendUint64(b, uint64(i))
		}
	}
	return b
}

// writer accumulates RDB bytes.
type writer struct{ b []byte }

func (w *writer) byte(c byte) { w.b = append(w.b, c) }

// len writes an RDB length in the shortest of its forms, as rdbSaveLen does.
func (w *writer) len(n uint64) {
	switch {
	case n < 1<<6:
		w.b = append(w.b, byte(n))
	case n < 1<<14:
		w.b = append(w.b, byte(n>>8)|len14<<6, byte(n))
	case n <= math.MaxUint32:
		w.b = append(w.b, len32)
		w.b = binary.BigEndian.AppendUint32(w.b, uint32(n))
	default:
		w.b = append(w.b, len64)
		w.b = binary.BigEndian.AppendUint64(w.b, n)
	}
}

// rawString writes s as rdbSaveRawString does with compression off: as an
// 8/16/32-bit integer when s is the canonical decimal of one, else verbatim.
func (w *writer) rawString(s []byte) {
	if len(s) <= 11 {
		if i, ok := string2ll(s); ok {
			switch {
			case i >= math.MinInt8 && i <= math.MaxInt8:
				w.b = append(w.b, lenEnc<<6|encInt8, byte(i))
				return
			case i >= math.MinInt16 && i <= math.MaxInt16:
				w.b = append(w.b, lenEnc<<6|encInt16)
				w.b = binary.LittleEndian.AppendUint16(w.b, uint16(i))
				return
			case i >= math.MinInt32 && i <= math.MaxInt32:
				w.b = append(w.b, lenEnc<<6|encInt32)
				w.b = binary.LittleEndian.AppendUint32(w.b, uint32(i))
				return
			}
		}
	}
	w.len(uint64(len(s)))
	w.b = append(w.b, s...)
}

// quicklist writes a list as quicklist v2 nodes, filled as RPUSH fills them
// under list-max-listpack-size -2: an element joins the tail node while the
// node's listpack size plus the element plus 8 stays within 8192 bytes.
func (w *writer) quicklist(elems [][]byte) {
	type node struct {
		plain []byte
		lp    *listpack
	}
	var nodes []node
	for _, e := range elems {
		if len(e) >= listPackedThreshold {
			nodes = append(nodes, node{plain: e})
			continue
		}
		if n := len(nodes); n > 0 && nodes[n-1].lp != nil &&
			nodes[n-1].lp.size()+len(e)+listEntryOverhead <= listNodeMaxBytes {
			nodes[n-1].lp.append(e)
			continue
		}
		lp := &listpack{}
		lp.append(e)
		nodes = append(nodes, node{lp: lp})
	}
	w.len(uint64(len(nodes)))
	for _, n := range nodes {
		if n.lp == nil {
			w.len(containerPlain)
			w.rawString(n.plain)
		} else {
			w.len(containerPacked)
			w.rawString(n.lp.bytes())
		}
	}
}

// listpack builds a listpack's entries; bytes adds header and terminator.
type listpack struct {
	body  []byte
	count int
}

// size is the listpack's total size in bytes (lpBytes).
func (lp *listpack) size() int { return 6 + len(lp.body) + 1 }

func (lp *listpack) bytes() []byte {
	b := make([]byte, 6, lp.size())
	binary.LittleEndian.PutUint32(b, uint32(lp.size()))
	binary.LittleEndian.PutUint16(b[4:], uint16(min(lp.count, 0xffff)))
	b = append(b, lp.body...)
	return append(b, 0xff)
}

// append adds s as lpAppend does: as an integer entry when s is the
// canonical decimal of an int64, else as a string entry.
func (lp *listpack) append(s []byte) {
	if i, ok := string2ll(s); ok {
		lp.appendInt(i)
		return
	}
	start := len(lp.body)
	n := len(s)
	switch {
	case n < 64:
		lp.body = append(lp.body, 0x80|byte(n))
	case n < 4096:
		lp.body = append(lp.body, 0xe0|byte(n>>8), byte(n))
	default:
		lp.body = append(lp.body, 0xf0)
		lp.body = binary.LittleEndian.AppendUint32(lp.body, uint32(n))
	}
	lp.body = append(lp.body, s...)
	lp.backlen(len(lp.body) - start)
}

// appendInt adds an integer entry in the narrowest of the listpack forms.
func (lp *listpack) appendInt(i int64) {
	start := len(lp.body)
	switch {
	case i >= 0 && i <= 127:
		lp.body = append(lp.body, byte(i))
	case i >= -4096 && i <= 4095:
		u := uint64(i) & (1<<13 - 1)
		lp.body = append(lp.body, 0xc0|byte(u>>8), byte(u))
	case i >= math.MinInt16 && i <= math.MaxInt16:
		lp.body = append(lp.body, 0xf1)
		lp.body = binary.LittleEndian.AppendUint16(lp.body, uint16(i))
	case i >= -1<<23 && i < 1<<23:
		u := uint32(i)
		lp.body = append(lp.body, 0xf2, byte(u), byte(u>>8), byte(u>>16))
	case i >= math.MinInt32 && i <= math.MaxInt32:
		lp.body = append(lp.body, 0xf3)
		lp.body = binary.LittleEndian.AppendUint32(lp.body, uint32(i))
	default:
		lp.body = append(lp.body, 0xf4)
		lp.body = binary.LittleEndian.AppendUint64(lp.body, uint64(i))
	}
	lp.backlen(len(lp.body) - start)
}

// backlen appends the entry's back-length: its size in 7-bit groups, most
// significant first, every byte after the first with the high bit set; and
// counts the entry.
func (lp *listpack) backlen(size int) {
	n := backlenSize(uint64(size))
	for k := n - 1; k >= 0; k-- {
		c := byte(size>>(7*k)) & 0x7f
		if k != n-1 {
			c |= 0x80
		}
		lp.body = append(lp.body, c)
	}
	lp.count++
}

// string2ll parses s as Redis's string2ll does: only the canonical decimal
// form of an int64 (no sign but '-', no leading zeros, no "-0", under 21
// bytes) is an integer.
func string2ll(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) >= 21 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	p := s
	if p[0] == '-' {
		p = p[1:]
		if len(p) == 0 {
			return 0, false
		}
	}
	if p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(string(s), 10, 64)
	return i, err == nil
}

// double2ll reports whether d is an integer within ±2^62, where Redis stores
// a sorted-set score in a listpack as an integer entry.
func double2ll(d float64) (int64, bool) {
	const limit = float64(math.MaxInt64 / 2)
	if d < -limit || d > limit {
		return 0, false
	}
	i := int64(d)
	return i, float64(i) == d
}

// d2string formats a score that is not an integer as Redis's d2string does
// ("%.17g", "inf", "-inf").
func d2string(d float64) []byte {
	switch {
	case math.IsInf(d, 1):
		return []byte("inf")
	case math.IsInf(d, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, d, 'g', 17, 64)
}
