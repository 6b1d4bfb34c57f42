package rdb

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
)

// decodeObject reads one value of RDB object type t from s. A type lockd
// does not hold but whose end can be found (streams, v2 module values) is
// passed over and returned as skipped, Redis's name for it; a module value
// in the pre-GA format, whose end cannot be found, is an error wrapping
// *Unsupported. An empty collection is errEmpty.
func decodeObject(s source, t byte) (v Value, skipped string, err error) {
	switch t {
	case typeString:
		str, err := readString(s)
		return Value{Type: String, Str: str}, "", err
	case typeList:
		v, err = decodeList(s)
	case typeSet:
		v, err = decodeSet(s)
	case typeZSet, typeZSet2:
		v, err = decodeZSet(s, t == typeZSet2)
	case typeHash:
		v, err = decodeHash(s)
	case typeListQuicklist, typeListQuicklist2:
		v, err = decodeQuicklist(s, t == typeListQuicklist2)
	case typeHashZipmap, typeListZiplist, typeSetIntset, typeZSetZiplist,
		typeHashZiplist, typeHashListpack, typeZSetListpack, typeSetListpack:
		blob, err := readString(s)
		if err != nil {
			return Value{}, "", err
		}
		v, err = decodeBlob(blob, t, s.meter())
		if err != nil {
			return Value{}, "", err
		}
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return Value{}, "stream", skipStream(s, t)
	case typeModule, typeModule2:
		id, _, err := readLen(s)
		if err != nil {
			return Value{}, "", err
		}
		name := "module:" + moduleName(id)
		if t == typeModule {
			return Value{}, "", &formatError{
				msg:     "value of " + name + " in the pre-GA module format (RDB type 6), whose end cannot be found without the module",
				wrapped: &Unsupported{Name: name},
			}
		}
		return Value{}, name, skipModuleBody(s)
	default:
		return Value{}, "", errf("unknown RDB object type %d", t)
	}
	if err != nil {
		return Value{}, "", err
	}
	if v.len() == 0 {
		return Value{}, "", errEmpty
	}
	return v, "", nil
}

// len is the number of elements of a collection value.
func (v *Value) len() int {
	switch v.Type {
	case List:
		return len(v.List)
	case Set:
		return len(v.Set)
	case ZSet:
		return len(v.ZSet)
	case Hash:
		return len(v.Hash)
	}
	return 1
}

// initialCap is how many elements to reserve for a collection that claims n:
// never more than a modest number, so a lying count costs nothing.
func initialCap(n uint64) int { return int(min(n, 1024)) }

// grow makes room for one more element in s, of a collection that claims
// claimed elements in all: it doubles the capacity, never past claimed
// (append grows a large slice by a quarter, allocating about five times
// its final size on the way; doubling allocates at most twice).
func grow[T any](s []T, claimed uint64) []T {
	if len(s) < cap(s) {
		return s
	}
	c := max(uint64(2*cap(s)), 16)
	c = max(min(c, claimed), uint64(len(s))+1)
	out := make([]T, len(s), c)
	copy(out, s)
	return out
}

func decodeList(s source) (Value, error) {
	out, err := readStrings(s)
	if err != nil {
		return Value{}, err
	}
	return Value{Type: List, List: out}, nil
}

func decodeSet(s source) (Value, error) {
	out, err := readStrings(s)
	if err != nil {
		return Value{}, err
	}
	return setValue(out)
}

// readStrings reads a count and that many strings (a plain list or set),
// each element charged to the meter before it is read.
func readStrings(s source) ([][]byte, error) {
	n, err := readCount(s, 1)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, initialCap(n))
	for ; n > 0; n-- {
		if err := s.meter().chargeElems(1); err != nil {
			return nil, err
		}
		e, err := readString(s)
		if err != nil {
			return nil, err
		}
		out = append(grow(out, n+uint64(len(out))), e)
	}
	return out, nil
}

func decodeZSet(s source, binaryScores bool) (Value, error) {
	minBytes := uint64(2)
	if binaryScores {
		minBytes = 9
	}
	n, err := readCount(s, minBytes)
	if err != nil {
		return Value{}, err
	}
	out := make([]Member, 0, initialCap(n))
	for ; n > 0; n-- {
		if err := s.meter().chargeElems(2); err != nil { // member and score
			return Value{}, err
		}
		m, err := readString(s)
		if err != nil {
			return Value{}, err
		}
		var score float64
		if binaryScores {
			b, err := s.read(8)
			if err != nil {
				return Value{}, err
			}
			score = math.Float64frombits(binary.LittleEndian.Uint64(b))
		} else if score, err = readDoubleString(s); err != nil {
			return Value{}, err
		}
		out = append(grow(out, n+uint64(len(out))), Member{Member: m, Score: score})
	}
	return zsetValue(out)
}

// readDoubleString reads a score of the old ZSET type: a length byte (253
// NaN, 254 +inf, 255 -inf) and that many bytes of decimal text.
func readDoubleString(s source) (float64, error) {
	n, err := s.readByte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	b, err := s.read(uint64(n))
	if err != nil {
		return 0, err
	}
	return parseScore(b)
}

// parseScore parses a score written as text (by %.17g, d2string or a user).
func parseScore(b []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, nil // ±Inf or 0, as strtod gives
		}
		return 0, errf("score %q is not a number", b)
	}
	return f, nil
}

// setValue checks that set members are distinct.
func setValue(es [][]byte) (Value, error) {
	seen := make(map[string]struct{}, len(es))
	for _, e := range es {
		if _, dup := seen[string(e)]; dup {
			return Value{}, errf("duplicate set member")
		}
		seen[string(e)] = struct{}{}
	}
	return Value{Type: Set, Set: es}, nil
}

// zsetValue checks members (distinct, no NaN score) and sorts them in
// Redis's order.
func zsetValue(ms []Member) (Value, error) {
	seen := make(map[string]struct{}, len(ms))
	for _, m := range ms {
		if math.IsNaN(m.Score) {
			return Value{}, errf("sorted set score is NaN")
		}
		if _, dup := seen[string(m.Member)]; dup {
			return Value{}, errf("duplicate sorted set member")
		}
		seen[string(m.Member)] = struct{}{}
	}
	sortZSet(ms)
	return Value{Type: ZSet, ZSet: ms}, nil
}

// sortZSet orders members as Redis does: by score, then by member bytes.
func sortZSet(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int {
		if a.Score < b.Score {
			return -1
		}
		if a.Score > b.Score {
			return 1
		}
		return bytes.Compare(a.Member, b.Member)
	})
}

func decodeHash(s source) (Value, error) {
	n, err := readCount(s, 2)
	if err != nil {
		return Value{}, err
	}
	out := make([]Field, 0, initialCap(n))
	for ; n > 0; n-- {
		if err := s.meter().chargeElems(2); err != nil { // field and value
			return Value{}, err
		}
		f, err := readString(s)
		if err != nil {
			return Value{}, err
		}
		v, err := readString(s)
		if err != nil {
			return Value{}, err
		}
		out = append(grow(out, n+uint64(len(out))), Field{Field: f, Value: v})
	}
	return hashValue(out)
}

// hashValue checks that fields are distinct.
func hashValue(fs []Field) (Value, error) {
	seen := make(map[string]struct{}, len(fs))
	for _, f := range fs {
		if _, dup := seen[string(f.Field)]; dup {
			return Value{}, errf("duplicate hash field")
		}
		seen[string(f.Field)] = struct{}{}
	}
	return Value{Type: Hash, Hash: fs}, nil
}

// decodeQuicklist reads a list of ziplist nodes (v1) or of listpack and
// plain nodes (v2). Empty nodes are passed over, as Redis does. Every node
// is read, checked and charged (one element for the node, one for each of
// its entries) before any entry is made, and the entries go into one slice
// of the exact size: a value over the budget costs its nodes' bytes only.
func decodeQuicklist(s source, v2 bool) (Value, error) {
	n, err := readCount(s, 2)
	if err != nil {
		return Value{}, err
	}
	walk := walkZiplist
	if v2 {
		walk = walkListpack
	}
	type node struct {
		blob  []byte
		plain bool
	}
	nodes := make([]node, 0, initialCap(n))
	total := 0
	for ; n > 0; n-- {
		container := uint64(containerPacked)
		if v2 {
			if container, _, err = readLen(s); err != nil {
				return Value{}, err
			}
			if container != containerPacked && container != containerPlain {
				return Value{}, errf("quicklist node container %d", container)
			}
		}
		blob, err := readString(s)
		if err != nil {
			return Value{}, err
		}
		if len(blob) == 0 {
			return Value{}, errf("empty quicklist node")
		}
		entries := 1
		if container != containerPlain {
			if entries, err = walk(blob, nil); err != nil {
				return Value{}, err
			}
		}
		if err := s.meter().chargeElems(1 + uint64(entries)); err != nil {
			return Value{}, err
		}
		nodes = grow(nodes, n+uint64(len(nodes)))
		nodes = append(nodes, node{blob: blob, plain: container == containerPlain})
		total += entries
	}
	out := make([][]byte, 0, total)
	for _, nd := range nodes {
		if nd.plain {
			out = append(out, nd.blob)
		} else {
			out = appendEntries(out, nd.blob, walk)
		}
	}
	return Value{Type: List, List: out}, nil
}

// decodeBlob turns an encoding held in one string (ziplist, listpack,
// intset, zipmap) into a Value, charging m for its elements.
func decodeBlob(blob []byte, t byte, m *meter) (Value, error) {
	switch t {
	case typeSetIntset:
		es, err := intsetEntries(blob, m)
		return Value{Type: Set, Set: es}, err
	case typeHashZipmap:
		fs, err := zipmapFields(blob, m)
		if err != nil {
			return Value{}, err
		}
		return hashValue(fs)
	}
	var es [][]byte
	var err error
	switch t {
	case typeListZiplist, typeZSetZiplist, typeHashZiplist:
		es, err = ziplistEntries(blob, m)
	default:
		es, err = listpackEntries(blob, m)
	}
	if err != nil {
		return Value{}, err
	}
	switch t {
	case typeListZiplist:
		return Value{Type: List, List: es}, nil
	case typeSetListpack:
		return setValue(es)
	}
	if len(es)%2 != 0 {
		return Value{}, errf("odd number of entries (%d) in a pairs encoding", len(es))
	}
	if t == typeZSetZiplist || t == typeZSetListpack {
		ms := make([]Member, 0, len(es)/2)
		for i := 0; i < len(es); i += 2 {
			score, err := parseScore(es[i+1])
			if err != nil {
				return Value{}, err
			}
			ms = append(ms, Member{Member: es[i], Score: score})
		}
		return zsetValue(ms)
	}
	fs := make([]Field, 0, len(es)/2)
	for i := 0; i < len(es); i += 2 {
		fs = append(fs, Field{Field: es[i], Value: es[i+1]})
	}
	return hashValue(fs)
}

// listpackEntries returns a listpack's entries, integers in decimal (see
// packedEntries).
func listpackEntries(lp []byte, m *meter) ([][]byte, error) {
	return packedEntries(lp, walkListpack, m)
}

// walker checks a listpack or ziplist whole and calls f, unless nil, with
// each entry: walkListpack or walkZiplist.
type walker func(blob []byte, f func(str []byte, v int64, isInt bool)) (int, error)

// packedEntries returns the entries of a listpack or ziplist, integers in
// decimal. It checks the whole blob first, then charges m for the entries
// and only then makes them, so a blob of more entries than the budget
// allows costs no allocation.
func packedEntries(blob []byte, walk walker, m *meter) ([][]byte, error) {
	n, err := walk(blob, nil)
	if err != nil {
		return nil, err
	}
	if err := m.chargeElems(uint64(n)); err != nil {
		return nil, err
	}
	return appendEntries(make([][]byte, 0, n), blob, walk), nil
}

// appendEntries appends the entries of blob, which walk has already
// checked, to out: strings as slices of blob, integers in decimal.
func appendEntries(out [][]byte, blob []byte, walk walker) [][]byte {
	_, _ = walk(blob, func(str []byte, v int64, isInt bool) {
		if isInt {
			str = strconv.AppendInt(nil, v, 10)
		}
		out = append(out, str)
	})
	return out
}

// walkListpack checks a listpack whole (header size and count, every
// entry's bounds and back-length, the terminator at the very end), calling
// f, unless nil, with each entry (a string within lp, or an integer) in
// order, and returns how many entries it holds.
func walkListpack(lp []byte, f func(str []byte, v int64, isInt bool)) (int, error) {
	const hdr = 6
	if len(lp) < hdr+1 {
		return 0, errf("listpack of %d bytes", len(lp))
	}
	if int(binary.LittleEndian.Uint32(lp)) != len(lp) {
		return 0, errf("listpack header size %d, blob %d", binary.LittleEndian.Uint32(lp), len(lp))
	}
	if lp[len(lp)-1] != 0xff {
		return 0, errf("listpack without terminator")
	}
	count := int(binary.LittleEndian.Uint16(lp[4:]))
	entries := 0
	p := hdr
	end := len(lp) - 1
	for p < end {
		c := lp[p]
		var size, data int // entry size (encoding+data) and data offset
		var intVal int64
		isInt := true
		need := func(n int) bool { return p+n <= end }
		switch {
		case c&0x80 == 0: // 7-bit uint
			size, intVal = 1, int64(c)
		case c&0xc0 == 0x80: // 6-bit string length
			isInt = false
			data, size = 1, 1+int(c&0x3f)
		case c&0xe0 == 0xc0: // 13-bit int
			if !need(2) {
				return 0, errTruncated
			}
			u := uint64(c&0x1f)<<8 | uint64(lp[p+1])
			size, intVal = 2, signExtend(u, 13)
		case c&0xf0 == 0xe0: // 12-bit string length
			if !need(2) {
				return 0, errTruncated
			}
			isInt = false
			data, size = 2, 2+(int(c&0x0f)<<8|int(lp[p+1]))
		case c == 0xf0: // 32-bit string length
			if !need(5) {
				return 0, errTruncated
			}
			isInt = false
			n := binary.LittleEndian.Uint32(lp[p+1:])
			if uint64(n) > uint64(end-p) {
				return 0, errTruncated
			}
			data, size = 5, 5+int(n)
		case c >= 0xf1 && c <= 0xf4: // 16/24/32/64-bit int
			nb := [...]int{2, 3, 4, 8}[c-0xf1]
			if !need(1 + nb) {
				return 0, errTruncated
			}
			var u uint64
			for i := nb - 1; i >= 0; i-- {
				u = u<<8 | uint64(lp[p+1+i])
			}
			size, intVal = 1+nb, signExtend(u, uint(nb*8))
		default:
			return 0, errf("listpack entry encoding 0x%02x", c)
		}
		bl := backlenSize(uint64(size))
		if !need(size + bl) {
			return 0, errTruncated
		}
		if decodeBacklen(lp[p+size:p+size+bl]) != uint64(size) {
			return 0, errf("listpack entry back-length mismatch")
		}
		if f != nil {
			f(lp[p+data:p+size], intVal, isInt)
		}
		entries++
		p += size + bl
	}
	if count != 0xffff && count != entries {
		return 0, errf("listpack header counts %d entries, holds %d", count, entries)
	}
	return entries, nil
}

// signExtend reads the low n bits of u as a two's complement number.
func signExtend(u uint64, n uint) int64 {
	shift := 64 - n
	return int64(u<<shift) >> shift
}

// backlenSize is how many bytes a listpack back-length of l takes.
func backlenSize(l uint64) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// decodeBacklen reads a back-length stored in b (most significant 7 bits
// first, every byte but the first with the high bit set).
func decodeBacklen(b []byte) uint64 {
	var v uint64
	for i, c := range b {
		if (i == 0) != (c&0x80 == 0) {
			return math.MaxUint64
		}
		v = v<<7 | uint64(c&0x7f)
	}
	return v
}

// ziplistEntries returns a ziplist's entries, integers in decimal (see
// packedEntries).
func ziplistEntries(zl []byte, m *meter) ([][]byte, error) {
	return packedEntries(zl, walkZiplist, m)
}

// walkZiplist checks a ziplist whole (header size, tail offset, each
// entry's bounds and previous-entry length, count, terminator), calling f,
// unless nil, with each entry (a string within zl, or an integer) in order,
// and returns how many entries it holds.
func walkZiplist(zl []byte, f func(str []byte, v int64, isInt bool)) (int, error) {
	const hdr = 10
	if len(zl) < hdr+1 {
		return 0, errf("ziplist of %d bytes", len(zl))
	}
	if int(binary.LittleEndian.Uint32(zl)) != len(zl) {
		return 0, errf("ziplist header size %d, blob %d", binary.LittleEndian.Uint32(zl), len(zl))
	}
	if zl[len(zl)-1] != 0xff {
		return 0, errf("ziplist without terminator")
	}
	tail := int(binary.LittleEndian.Uint32(zl[4:]))
	count := int(binary.LittleEndian.Uint16(zl[8:]))
	entries := 0
	p, prev, last := hdr, 0, hdr
	end := len(zl) - 1
	for p < end {
		start := p
		// Previous entry's length: 1 byte, or 0xfe and 4 bytes.
		pl := int(zl[p])
		p++
		if pl == 0xfe {
			if p+4 > end {
				return 0, errTruncated
			}
			pl = int(binary.LittleEndian.Uint32(zl[p:]))
			p += 4
		} else if pl == 0xff {
			return 0, errf("ziplist prevlen 0xff")
		}
		if pl != prev {
			return 0, errf("ziplist prevlen %d, previous entry %d", pl, prev)
		}
		if p >= end {
			return 0, errTruncated
		}
		c := zl[p]
		var strLen, intSize int
		switch c >> 6 {
		case 0:
			strLen = int(c & 0x3f)
			p++
		case 1:
			if p+2 > end {
				return 0, errTruncated
			}
			strLen = int(c&0x3f)<<8 | int(zl[p+1])
			p += 2
		case 2:
			if c != 0x80 || p+5 > end {
				return 0, errf("ziplist string encoding 0x%02x", c)
			}
			n := binary.BigEndian.Uint32(zl[p+1:])
			if uint64(n) > uint64(end) {
				return 0, errTruncated
			}
			strLen = int(n)
			p += 5
		default:
			p++
			switch {
			case c == 0xc0:
				intSize = 2
			case c == 0xd0:
				intSize = 4
			case c == 0xe0:
				intSize = 8
			case c == 0xf0:
				intSize = 3
			case c == 0xfe:
				intSize = 1
			case c >= 0xf1 && c <= 0xfd:
				intSize = 0
			default:
				return 0, errf("ziplist entry encoding 0x%02x", c)
			}
		}
		if c>>6 != 3 {
			if p+strLen > end {
				return 0, errTruncated
			}
			if f != nil {
				f(zl[p:p+strLen], 0, false)
			}
			p += strLen
		} else {
			if p+intSize > end {
				return 0, errTruncated
			}
			var v int64
			if intSize == 0 {
				v = int64(c&0x0f) - 1
			} else {
				var u uint64
				for i := intSize - 1; i >= 0; i-- {
					u = u<<8 | uint64(zl[p+i])
				}
				v = signExtend(u, uint(intSize*8))
			}
			if f != nil {
				f(nil, v, true)
			}
			p += intSize
		}
		prev, last = p-start, start
		entries++
	}
	if entries > 0 && tail != last || entries == 0 && tail != hdr {
		return 0, errf("ziplist tail offset %d, last entry at %d", tail, last)
	}
	if count != 0xffff && count != entries {
		return 0, errf("ziplist header counts %d entries, holds %d", count, entries)
	}
	return entries, nil
}

// intsetEntries returns an intset's members in decimal, checking the
// encoding width, size, and that members strictly ascend; m is charged for
// the members before they are made.
func intsetEntries(b []byte, m *meter) ([][]byte, error) {
	if len(b) < 8 {
		return nil, errf("intset of %d bytes", len(b))
	}
	width := binary.LittleEndian.Uint32(b)
	n := binary.LittleEndian.Uint32(b[4:])
	if width != 2 && width != 4 && width != 8 {
		return nil, errf("intset encoding %d", width)
	}
	if uint64(len(b)-8) != uint64(n)*uint64(width) {
		return nil, errf("intset of %d members of %d bytes in %d bytes", n, width, len(b))
	}
	if n == 0 {
		return nil, errEmpty
	}
	if err := m.chargeElems(uint64(n)); err != nil {
		return nil, err
	}
	out := make([][]byte, 0, n)
	var prev int64
	for i := 0; i < int(n); i++ {
		p := b[8+i*int(width):]
		var v int64
		switch width {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		if i > 0 && v <= prev {
			return nil, errf("intset members out of order")
		}
		prev = v
		out = append(out, strconv.AppendInt(nil, v, 10))
	}
	return out, nil
}

// zipmapFields returns the pairs of a zipmap (Redis ≤ 2.4 hashes): a count
// byte, then per pair a length, key, length, free byte, value, free space;
// 0xff ends it. m is charged for each pair (two elements) before it is
// made.
func zipmapFields(b []byte, m *meter) ([]Field, error) {
	if len(b) < 2 {
		return nil, errf("zipmap of %d bytes", len(b))
	}
	p := 1
	zlen := func() (int, error) {
		if p >= len(b) {
			return 0, errTruncated
		}
		n := int(b[p])
		if n == 0xff {
			return 0, errf("zipmap ends inside an entry")
		}
		if n < 0xfe {
			p++
			return n, nil
		}
		if p+5 > len(b) {
			return 0, errTruncated
		}
		u := binary.LittleEndian.Uint32(b[p+1:])
		p += 5
		if uint64(u) > uint64(len(b)) {
			return 0, errTruncated
		}
		return int(u), nil
	}
	var out []Field
	for {
		if p >= len(b) {
			return nil, errTruncated
		}
		if b[p] == 0xff {
			if p != len(b)-1 {
				return nil, errf("zipmap terminator before its end")
			}
			return out, nil
		}
		kl, err := zlen()
		if err != nil {
			return nil, err
		}
		if p+kl > len(b) {
			return nil, errTruncated
		}
		k := b[p : p+kl]
		p += kl
		vl, err := zlen()
		if err != nil {
			return nil, err
		}
		if p >= len(b) {
			return nil, errTruncated
		}
		free := int(b[p])
		p++
		if p+vl+free > len(b) {
			return nil, errTruncated
		}
		if err := m.chargeElems(2); err != nil {
			return nil, err
		}
		out = append(out, Field{Field: k, Value: b[p : p+vl]})
		p += vl + free
	}
}

// skipStream passes over a stream value of RDB type t (15, 19 or 21),
// reading its structure to find its end.
func skipStream(s source, t byte) error {
	lens := func(n int) error {
		for ; n > 0; n-- {
			if _, _, err := readLen(s); err != nil {
				return err
			}
		}
		return nil
	}
	nodes, err := readCount(s, 2)
	if err != nil {
		return err
	}
	for ; nodes > 0; nodes-- {
		key, err := readString(s)
		if err != nil {
			return err
		}
		if len(key) != 16 {
			return errf("stream node key of %d bytes", len(key))
		}
		if err := skipString(s); err != nil {
			return err
		}
	}
	// Length and last ID; since type 19 also first ID, max deleted ID and
	// entries added.
	meta := 3
	if t >= typeStreamListpacks2 {
		meta = 8
	}
	if err := lens(meta); err != nil {
		return err
	}
	groups, err := readCount(s, 4)
	if err != nil {
		return err
	}
	for ; groups > 0; groups-- {
		if err := skipString(s); err != nil { // group name
			return err
		}
		ids := 2 // last delivered ID
		if t >= typeStreamListpacks2 {
			ids = 3 // and entries read
		}
		if err := lens(ids); err != nil {
			return err
		}
		pel, err := readCount(s, 16+8+1)
		if err != nil {
			return err
		}
		for ; pel > 0; pel-- { // raw ID, delivery time, delivery count
			if err := s.discard(16 + 8); err != nil {
				return err
			}
			if err := lens(1); err != nil {
				return err
			}
		}
		consumers, err := readCount(s, 1+8+1)
		if err != nil {
			return err
		}
		for ; consumers > 0; consumers-- {
			if err := skipString(s); err != nil { // name
				return err
			}
			times := uint64(8) // seen time; type 21 adds active time
			if t >= typeStreamListpacks3 {
				times = 16
			}
			if err := s.discard(times); err != nil {
				return err
			}
			pel, err := readCount(s, 16)
			if err != nil {
				return err
			}
			if err := s.discard(pel * 16); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipModuleBody passes over the annotated body of a v2 module value or
// module aux record, up to and including its EOF opcode.
func skipModuleBody(s source) error {
	for {
		op, _, err := readLen(s)
		if err != nil {
			return err
		}
		switch op {
		case moduleOpEOF:
			return nil
		case moduleOpSInt, moduleOpUInt:
			_, _, err = readLen(s)
		case moduleOpFloat:
			err = s.discard(4)
		case moduleOpDouble:
			err = s.discard(8)
		case moduleOpString:
			err = skipString(s)
		default:
			return errf("unknown module value opcode %d", op)
		}
		if err != nil {
			return err
		}
	}
}
