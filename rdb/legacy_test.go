package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// This file checks the encodings Redis 7.0 no longer writes but reads (and
// so must Reader, for older masters): ziplists, zipmaps, plain lists, string
// scores, quicklists of ziplists, non-minimal lengths, stream and module
// types. The payloads are built here; each one Redis 7.0.15 can load is
// RESTOREd there first, proving it is what Redis reads.

// payload wraps an RDB object (type byte and body) in a DUMP footer.
func payload(body []byte) []byte {
	p := append(bytes.Clone(body), Version, 0)
	return binaryCRC(p)
}

func rawStr(s string) []byte {
	var w writer
	w.len(uint64(len(s)))
	return append(w.b, s...)
}

func lenBytes(n uint64) []byte {
	var w writer
	w.len(n)
	return w.b
}

// ziplist builds a ziplist of entries, integers in ziplist integer forms.
func ziplist(entries ...string) []byte {
	var body []byte
	prev, last := 0, 10
	for _, e := range entries {
		start := 10 + len(body)
		var en []byte
		if prev < 254 {
			en = append(en, byte(prev))
		} else {
			en = append(en, 0xfe)
			en = binary.LittleEndian.AppendUint32(en, uint32(prev))
		}
		if i, ok := string2ll([]byte(e)); ok {
			switch {
			case i >= 0 && i <= 12:
				en = append(en, 0xf1+byte(i))
			case i >= math.MinInt8 && i <= math.MaxInt8:
				en = append(en, 0xfe, byte(i))
			case i >= math.MinInt16 && i <= math.MaxInt16:
				en = binary.LittleEndian.AppendUint16(append(en, 0xc0), uint16(i))
			case i >= -1<<23 && i < 1<<23:
				en = append(en, 0xf0, byte(i), byte(i>>8), byte(i>>16))
			case i >= math.MinInt32 && i <= math.MaxInt32:
				en = binary.LittleEndian.AppendUint32(append(en, 0xd0), uint32(i))
			default:
				en = binary.LittleEndian.AppendUint64(append(en, 0xe0), uint64(i))
			}
		} else {
			switch n := len(e); {
			case n < 64:
				en = append(en, byte(n))
			case n < 16384:
				en = append(en, 0x40|byte(n>>8), byte(n))
			default:
				en = binary.BigEndian.AppendUint32(append(en, 0x80), uint32(n))
			}
			en = append(en, e...)
		}
		body = append(body, en...)
		prev, last = len(en), start
	}
	zl := binary.LittleEndian.AppendUint32(nil, uint32(10+len(body)+1))
	zl = binary.LittleEndian.AppendUint32(zl, uint32(last))
	zl = binary.LittleEndian.AppendUint16(zl, uint16(min(len(entries), 0xffff)))
	return append(append(zl, body...), 0xff)
}

// zipmap builds a zipmap of pairs (k1, v1, k2, v2 …), each value with one
// free byte after it.
func zipmap(pairs ...string) []byte {
	zm := []byte{byte(len(pairs) / 2)}
	zlen := func(n int) {
		if n < 254 {
			zm = append(zm, byte(n))
		} else {
			zm = binary.LittleEndian.AppendUint32(append(zm, 254), uint32(n))
		}
	}
	for i := 0; i < len(pairs); i += 2 {
		zlen(len(pairs[i]))
		zm = append(zm, pairs[i]...)
		zlen(len(pairs[i+1]))
		zm = append(zm, 1)
		zm = append(zm, pairs[i+1]...)
		zm = append(zm, 'X') // the free byte
	}
	return append(zm, 0xff)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

type legacyCase struct {
	name  string
	body  []byte // type byte and object
	want  Value
	redis bool // Redis 7.0.15 RESTOREs it
}

func legacyCases() []legacyCase {
	long := strings.Repeat("L", 300)
	hashWant := Value{Type: Hash, Hash: []Field{{[]byte("a"), []byte("1")}, {[]byte("bb"), []byte("hello")},
		{[]byte("-70000"), []byte(long)}}}
	zsWant := Value{Type: ZSet, ZSet: []Member{{[]byte("m"), math.Inf(-1)}, {[]byte("x"), -1.5}, {[]byte("7"), 3},
		{[]byte("y"), 1e20}, {[]byte("n"), math.Inf(1)}}}
	listElems := []string{"a", "0", "12", "13", "-1", "127", "-128", "300", "-40000", "8388607",
		"100000000", "-5000000000", "", long, strings.Repeat("w", 20000)}
	var listArgs []byte
	for _, e := range listElems {
		listArgs = append(listArgs, rawStr(e)...)
	}
	// ZSET (type 3): string scores, 254/255 for ±inf.
	zset3 := cat([]byte{typeZSet}, lenBytes(5),
		rawStr("x"), []byte{4}, []byte("-1.5"),
		rawStr("7"), []byte{1}, []byte("3"),
		rawStr("y"), []byte{5}, []byte("1e+20"),
		rawStr("m"), []byte{255},
		rawStr("n"), []byte{254})
	zset2 := cat([]byte{typeZSet2}, lenBytes(5))
	for _, m := range zsWant.ZSet {
		zset2 = binary.LittleEndian.AppendUint64(append(zset2, rawStr(string(m.Member))...), math.Float64bits(m.Score))
	}
	wideLen := func(s string, form byte) []byte {
		b := []byte{form}
		if form == len32 {
			return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
		}
		return append(binary.BigEndian.AppendUint64(b, uint64(len(s))), s...)
	}
	return []legacyCase{
		{"list ziplist", cat([]byte{typeListZiplist}, rawStr(string(ziplist(listElems...)))),
			Value{Type: List, List: bs(listElems...)}, true},
		{"list plain", cat([]byte{typeList}, lenBytes(uint64(len(listElems))), listArgs),
			Value{Type: List, List: bs(listElems...)}, true},
		{"quicklist of ziplists", cat([]byte{typeListQuicklist}, lenBytes(3),
			rawStr(string(ziplist(listElems[:5]...))), rawStr(string(ziplist())), rawStr(string(ziplist(listElems[5:]...)))),
			Value{Type: List, List: bs(listElems...)}, true},
		{"quicklist2 plain node", cat([]byte{typeListQuicklist2}, lenBytes(3),
			lenBytes(containerPacked), rawStr(string(lpOf("a", "1"))),
			lenBytes(containerPlain), rawStr(long),
			lenBytes(containerPacked), rawStr(string(lpOf("z")))),
			Value{Type: List, List: bs("a", "1", long, "z")}, true},
		{"hash zipmap", cat([]byte{typeHashZipmap}, rawStr(string(zipmap("a", "1", "bb", "hello", "-70000", long)))), hashWant, true},
		{"hash ziplist", cat([]byte{typeHashZiplist}, rawStr(string(ziplist("a", "1", "bb", "hello", "-70000", long)))), hashWant, true},
		{"hash plain", cat([]byte{typeHash}, lenBytes(3), rawStr("a"), rawStr("1"), rawStr("bb"), rawStr("hello"),
			rawStr("-70000"), rawStr(long)), hashWant, true},
		{"zset ziplist", cat([]byte{typeZSetZiplist}, rawStr(string(ziplist("m", "-inf", "x", "-1.5", "7", "3", "y", "1e+20", "n", "inf")))), zsWant, true},
		{"zset string scores", zset3, zsWant, true},
		{"zset binary scores", zset2, zsWant, true},
		{"set plain", cat([]byte{typeSet}, lenBytes(3), rawStr("1"), rawStr("x"), rawStr(long)),
			Value{Type: Set, Set: bs("1", "x", long)}, true},
		{"set plain ints", cat([]byte{typeSet}, lenBytes(3), rawStr("1"), rawStr("-2"), rawStr("300")),
			Value{Type: Set, Set: bs("1", "-2", "300")}, true},
		{"intset64", cat([]byte{typeSetIntset}, rawStr(string(intsetBlob(bs("9", strconv.Itoa(-1<<40)))))),
			Value{Type: Set, Set: bs("-1099511627776", "9")}, true},
		{"set listpack (7.2)", cat([]byte{typeSetListpack}, rawStr(string(lpOf("a", "1", "-5", long)))),
			Value{Type: Set, Set: bs("a", "1", "-5", long)}, false},
		{"string len32", cat([]byte{typeString}, wideLen("abc", len32)), Value{Type: String, Str: []byte("abc")}, true},
		{"string len64", cat([]byte{typeString}, wideLen("abcd", len64)), Value{Type: String, Str: []byte("abcd")}, true},
		{"string len14", cat([]byte{typeString}, []byte{0x40, 2}, []byte("ab")), Value{Type: String, Str: []byte("ab")}, true},
		{"int8 -1", []byte{typeString, 0xc0, 0xff}, Value{Type: String, Str: []byte("-1")}, true},
		{"int16", []byte{typeString, 0xc1, 0x00, 0x80}, Value{Type: String, Str: []byte("-32768")}, true},
		{"int32", []byte{typeString, 0xc2, 0xff, 0xff, 0xff, 0x7f}, Value{Type: String, Str: []byte("2147483647")}, true},
	}
}

// lpOf is the listpack of entries.
func lpOf(entries ...string) []byte {
	var lp listpack
	for _, e := range entries {
		lp.append([]byte(e))
	}
	return lp.bytes()
}

func TestLegacyEncodings(t *testing.T) {
	r := startRedis(t)
	c := r.connect(t)
	for i, tc := range legacyCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := payload(tc.body)
			if tc.redis {
				key := "legacy" + strconv.Itoa(i)
				c.must(t, "RESTORE", key, 0, p)
				if got := fetch(t, c, key); !sameValue(got, tc.want) {
					t.Fatalf("Redis loaded %s, the case means %s", show(got), show(tc.want))
				}
			}
			got, err := DecodeDump(p)
			if err != nil {
				t.Fatalf("DecodeDump: %v", err)
			}
			if !sameValue(got, tc.want) {
				t.Fatalf("DecodeDump = %s, want %s", show(got), show(tc.want))
			}
		})
	}
}

// streamBodies returns stream values as Redis 7.0 DUMPs them (type 19), and
// the same streams rewritten as types 15 (Redis 5/6) and 21 (Redis 7.2).
func streamBodies(t *testing.T, c *resp) (t19, t15, t21 []byte) {
	t.Helper()
	c.must(t, "CONFIG", "SET", "rdbcompression", "no")
	defer c.must(t, "CONFIG", "SET", "rdbcompression", "yes")
	for i := range 3 {
		c.must(t, "XADD", "sA", strconv.Itoa(i+1)+"-0", "f", i)
	}
	dumpA := []byte(c.must(t, "DUMP", "sA").(string))
	// Type 15 of sA (no groups): drop first ID, max deleted ID and entries
	// added (5 lengths after the last ID).
	s := &bytesSource{b: dumpA[:len(dumpA)-10]}
	s.off = 1
	n, _, _ := readLen(s)
	for range n {
		skipString(s)
		skipString(s)
	}
	for range 3 {
		readLen(s)
	}
	cut := s.off
	for range 5 {
		readLen(s)
	}
	t15 = cat([]byte{typeStreamListpacks}, dumpA[1:cut], dumpA[s.off:len(dumpA)-10])

	c.must(t, "XADD", "sB", "1-1", "f", "v")
	c.must(t, "XADD", "sB", "1-2", "f", "w")
	c.must(t, "XGROUP", "CREATE", "sB", "grp", "0")
	c.must(t, "XREADGROUP", "GROUP", "grp", "consumer-xyz", "COUNT", 1, "STREAMS", "sB", ">")
	dumpB := []byte(c.must(t, "DUMP", "sB").(string))
	t19 = dumpB[:len(dumpB)-10]
	// Type 21: the consumer's seen time (8 bytes after its name) is
	// followed by an active time.
	name := rawStr("consumer-xyz")
	at := bytes.Index(t19, name)
	if at < 0 || bytes.Count(t19, name) != 1 {
		t.Fatal("consumer name not found once in the stream DUMP")
	}
	at += len(name) + 8
	t21 = cat([]byte{typeStreamListpacks3}, t19[1:at], make([]byte, 8), t19[at:])
	c.must(t, "DEL", "sA", "sB")
	return t19, t15, t21
}

// Streams of all three types and v2 module values are read to their end
// and reported as Unsupported; a pre-GA module value cannot be.
func TestUnsupportedTypes(t *testing.T) {
	r := startRedis(t)
	c := r.connect(t)
	t19, t15, t21 := streamBodies(t, c)
	c.must(t, "RESTORE", "s15", 0, payload(t15)) // Redis 7.0 reads type 15
	if got := c.must(t, "XLEN", "s15"); got != int64(3) {
		t.Fatalf("XLEN of the type 15 stream = %v", got)
	}
	for name, body := range map[string][]byte{"15": t15, "19": t19, "21": t21} {
		_, err := DecodeDump(payload(body))
		if u, ok := IsUnsupported(err); !ok || u.Name != "stream" {
			t.Errorf("type %s: DecodeDump = %v", name, err)
		}
		// One byte short is malformed, not unsupported.
		short := payload(body[:len(body)-1])
		if _, err := DecodeDump(short); !errors.Is(err, ErrBadFormat) {
			t.Errorf("type %s truncated: DecodeDump = %v", name, err)
		}
	}
	modID := moduleID("mymodtype", 3)
	mod2 := cat([]byte{typeModule2}, lenBytes(modID),
		lenBytes(moduleOpUInt), lenBytes(77), lenBytes(moduleOpSInt), lenBytes(5),
		lenBytes(moduleOpString), rawStr("payload"), lenBytes(moduleOpFloat), make([]byte, 4),
		lenBytes(moduleOpDouble), make([]byte, 8), lenBytes(moduleOpEOF))
	if _, err := DecodeDump(payload(mod2)); err == nil || err.(*Unsupported).Name != "module:mymodtype" {
		t.Errorf("module v2: %v", err)
	}
	mod1 := cat([]byte{typeModule}, lenBytes(modID), []byte("opaque"))
	_, err := DecodeDump(payload(mod1))
	if u, ok := IsUnsupported(err); !ok || u.Name != "module:mymodtype" || !errors.Is(err, ErrBadFormat) ||
		!strings.Contains(err.Error(), "module:mymodtype") {
		t.Errorf("module v1: %v", err)
	}
	t.Run("Reader", func(t *testing.T) {
		var f rdbFile
		f.header(11)
		f.aux("redis-ver", "7.2.4")
		f.aux("redis-bits", "\xc0\x40") // int-encoded 64
		f.raw([]byte{opModuleAux}, lenBytes(modID), lenBytes(moduleOpUInt), lenBytes(2),
			lenBytes(moduleOpString), rawStr("aux data"), lenBytes(moduleOpEOF))
		f.raw([]byte{opFunction2}, rawStr("#!lua name=lib\n..."))
		f.raw([]byte{opFunction}, rawStr("lib"), rawStr("LUA"), lenBytes(1), rawStr("desc"), rawStr("code"))
		f.raw([]byte{opSelectDB}, lenBytes(3), []byte{opResizeDB}, lenBytes(5), lenBytes(1))
		f.raw([]byte{opExpireTime}, binary.LittleEndian.AppendUint32(nil, 2000000000))
		f.raw([]byte{opIdle}, lenBytes(1000), []byte{opFreq, 9})
		f.raw(t21[:1], rawStr("stream21"), t21[1:])
		f.raw(t15[:1], rawStr("stream15"), t15[1:])
		f.raw(mod2[:1], rawStr("mod"), mod2[1:])
		f.raw([]byte{typeList}, rawStr("empty"), lenBytes(0)) // passed over, as Redis does
		f.raw([]byte{opExpireTimeMs}, binary.LittleEndian.AppendUint64(nil, 1700000000123))
		f.raw([]byte{typeSetListpack}, rawStr("set20"), rawStr(string(lpOf("a", "b"))))
		f.raw([]byte{opSelectDB}, lenBytes(0))
		f.raw([]byte{typeString}, rawStr("k"), rawStr("v"))
		data := f.end(true)
		want := []Entry{
			{DB: 3, Key: []byte("stream21"), ExpireMs: 2000000000000, Skipped: "stream"},
			{DB: 3, Key: []byte("stream15"), Skipped: "stream"},
			{DB: 3, Key: []byte("mod"), Skipped: "module:mymodtype"},
			{DB: 3, Key: []byte("set20"), ExpireMs: 1700000000123, Value: Value{Type: Set, Set: bs("a", "b")}},
			{DB: 0, Key: []byte("k"), Value: Value{Type: String, Str: []byte("v")}},
		}
		rd := NewReader(bytes.NewReader(data))
		for _, w := range want {
			e, err := rd.Next()
			if err != nil {
				t.Fatalf("Next: %v (want %s)", err, w.Key)
			}
			if e.DB != w.DB || string(e.Key) != string(w.Key) || e.ExpireMs != w.ExpireMs ||
				e.Skipped != w.Skipped || (w.Skipped == "" && !sameValue(e.Value, w.Value)) {
				t.Fatalf("Next = %+v, want %+v", e, w)
			}
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("end: %v", err)
		}
		if a := rd.Aux(); a["redis-ver"] != "7.2.4" || a["redis-bits"] != "64" {
			t.Errorf("aux %v", a)
		}
		// A pre-GA module value stops the Reader with an error naming it.
		var g rdbFile
		g.header(9)
		g.raw(mod1[:1], rawStr("m1"), mod1[1:])
		_, err := NewReader(bytes.NewReader(g.end(true))).Next()
		if u, ok := IsUnsupported(err); !ok || u.Name != "module:mymodtype" {
			t.Errorf("pre-GA module: %v", err)
		}
		// Version 12 is refused; version 3 has no checksum.
		var h rdbFile
		h.header(12)
		if _, err := NewReader(bytes.NewReader(h.end(true))).Next(); !errors.Is(err, ErrBadFormat) {
			t.Errorf("version 12: %v", err)
		}
		var o rdbFile
		o.header(3)
		o.raw([]byte{typeHashZipmap}, rawStr("old"), rawStr(string(zipmap("f", "v"))))
		rd = NewReader(bytes.NewReader(o.end(false)))
		if e, err := rd.Next(); err != nil || !sameValue(e.Value, Value{Type: Hash, Hash: []Field{{[]byte("f"), []byte("v")}}}) {
			t.Fatalf("version 3: %+v %v", e, err)
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("version 3 end: %v", err)
		}
	})
}

// moduleID packs a 9-character module type name and an encoding version as
// Redis's moduleTypeEncodeId does.
func moduleID(name string, ver uint64) uint64 {
	const cset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var id uint64
	for _, ch := range name {
		id = id<<6 | uint64(strings.IndexRune(cset, ch))
	}
	return id<<10 | ver
}

// rdbFile builds an RDB stream by hand.
type rdbFile struct{ b []byte }

func (f *rdbFile) header(v int) { f.b = append(f.b, "REDIS"+leftPad(v)...) }
func leftPad(v int) string      { s := strconv.Itoa(v); return strings.Repeat("0", 4-len(s)) + s }
func (f *rdbFile) raw(parts ...[]byte) {
	f.b = append(f.b, cat(parts...)...)
}
func (f *rdbFile) aux(k, v string) {
	f.b = append(f.b, opAux)
	f.b = append(f.b, rawStr(k)...)
	if strings.HasPrefix(v, "\xc0") {
		f.b = append(f.b, v...)
	} else {
		f.b = append(f.b, rawStr(v)...)
	}
}
func (f *rdbFile) end(checksum bool) []byte {
	f.b = append(f.b, opEOF)
	if checksum {
		return binaryCRC(f.b)
	}
	return f.b
}
