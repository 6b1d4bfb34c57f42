package rdb

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

var huge = lenBytes(1 << 40)

// hostileBodies claim far more than they hold.
func hostileBodies() map[string][]byte {
	return map[string][]byte{
		"string 2^40":          cat([]byte{typeString}, huge, []byte("abc")),
		"lzf 2^40 out":         cat([]byte{typeString, 0xc3}, lenBytes(4), huge, []byte{0, 'a', 0xe0, 0xff}),
		"lzf 2^40 in":          cat([]byte{typeString, 0xc3}, huge, lenBytes(10), []byte{0, 'a'}),
		"list 2^40":            cat([]byte{typeList}, huge, rawStr("a")),
		"set 2^40":             cat([]byte{typeSet}, huge, rawStr("a")),
		"zset 2^40":            cat([]byte{typeZSet2}, huge, rawStr("a")),
		"zset1 2^40":           cat([]byte{typeZSet}, huge, rawStr("a")),
		"hash 2^40":            cat([]byte{typeHash}, huge, rawStr("a")),
		"quicklist 2^40":       cat([]byte{typeListQuicklist2}, huge, lenBytes(2)),
		"quicklist1 2^40":      cat([]byte{typeListQuicklist}, huge),
		"stream 2^40 nodes":    cat([]byte{typeStreamListpacks2}, huge),
		"stream 2^40 groups":   cat([]byte{typeStreamListpacks2}, lenBytes(0), bytes.Repeat([]byte{0}, 8), huge),
		"listpack claims 2^31": cat([]byte{typeHashListpack}, rawStr("\xff\xff\xff\x7f\x02\x00\x81a\x02\x81b\x02\xff")),
		"intset claims 2^31":   cat([]byte{typeSetIntset}, rawStr("\x08\x00\x00\x00\xff\xff\xff\x7f\x01\x00\x00\x00\x00\x00\x00\x00")),
		"ziplist claims 2^31":  cat([]byte{typeListZiplist}, rawStr("\xff\xff\xff\x7f\x0a\x00\x00\x00\x01\x00\x00\xf2\xff")),
	}
}

// A payload that claims 2^40 of anything is refused without allocating
// more than a few kilobytes.
func TestHostilePayloadsBounded(t *testing.T) {
	for name, body := range hostileBodies() {
		p := payload(body)
		var err error
		n := allocated(func() { _, err = DecodeDump(p) })
		if !errors.Is(err, ErrBadFormat) {
			t.Errorf("%s: DecodeDump = %v, want a Bad data format error", name, err)
		}
		if n > 64<<10 {
			t.Errorf("%s: DecodeDump allocated %d bytes", name, n)
		}
	}
}

// The same claims inside an RDB stream, whose length Reader cannot know,
// cost no more than the stream holds.
func TestHostileStreamBounded(t *testing.T) {
	for name, body := range hostileBodies() {
		var f rdbFile
		f.header(10)
		f.raw(body[:1], rawStr("key"), body[1:])
		data := f.end(true)
		var err error
		n := allocated(func() { err = readAll(data) })
		if !errors.Is(err, ErrBadFormat) {
			t.Errorf("%s: Reader = %v, want a Bad data format error", name, err)
		}
		if n > 256<<10 {
			t.Errorf("%s: Reader allocated %d bytes", name, n)
		}
	}
}

func TestLZF(t *testing.T) {
	out := make([]byte, 9)
	if n := lzfDecompress([]byte{0, 'a', 0xc0, 0}, out); n != 9 || string(out) != "aaaaaaaaa" {
		t.Fatalf("lzf = %d %q", n, out)
	}
	for name, in := range map[string][]byte{
		"ref before start":        {0xc0, 0},
		"literal past input":      {5, 'a'},
		"ref without offset":      {0, 'a', 0xc0},
		"long ref without length": {0, 'a', 0xe0},
	} {
		if n := lzfDecompress(in, make([]byte, 100)); n != 0 {
			t.Errorf("%s: %d", name, n)
		}
	}
	if n := lzfDecompress([]byte{0, 'a', 0xc0, 0}, make([]byte, 5)); n != 0 {
		t.Errorf("overflow: %d", n)
	}
}

// Malformed bodies are Bad data format errors, never panics.
func TestMalformedBodies(t *testing.T) {
	for name, body := range map[string][]byte{
		"no type":              {},
		"unknown type":         {8},
		"type 22":              {22, 0},
		"bad length form":      {typeString, 0x82},
		"bad string encoding":  {typeString, 0xc4},
		"empty list":           {typeList, 0},
		"empty hash listpack":  cat([]byte{typeHashListpack}, rawStr(string(lpOf()))),
		"odd hash listpack":    cat([]byte{typeHashListpack}, rawStr(string(lpOf("a")))),
		"dup hash field":       cat([]byte{typeHash}, lenBytes(2), rawStr("a"), rawStr("1"), rawStr("a"), rawStr("2")),
		"dup set member":       cat([]byte{typeSet}, lenBytes(2), rawStr("a"), rawStr("a")),
		"dup zset member":      cat([]byte{typeZSetListpack}, rawStr(string(lpOf("a", "1", "a", "2")))),
		"nan score":            cat([]byte{typeZSet}, lenBytes(1), rawStr("a"), []byte{253}),
		"text score":           cat([]byte{typeZSetListpack}, rawStr(string(lpOf("a", "x")))),
		"intset unordered":     cat([]byte{typeSetIntset}, rawStr("\x02\x00\x00\x00\x02\x00\x00\x00\x05\x00\x01\x00")),
		"intset width 3":       cat([]byte{typeSetIntset}, rawStr("\x03\x00\x00\x00\x01\x00\x00\x00\x05\x00\x01")),
		"listpack no end":      cat([]byte{typeListQuicklist2}, lenBytes(1), lenBytes(2), rawStr("\x07\x00\x00\x00\x00\x00\x00")),
		"listpack bad count":   cat([]byte{typeListQuicklist2}, lenBytes(1), lenBytes(2), rawStr("\x0a\x00\x00\x00\x02\x00\x01\x01\xff\xff"[:10])),
		"quicklist container":  cat([]byte{typeListQuicklist2}, lenBytes(1), lenBytes(3), rawStr("x")),
		"ziplist bad prevlen":  cat([]byte{typeListZiplist}, rawStr("\x0f\x00\x00\x00\x0c\x00\x00\x00\x02\x00\x00\xf2\x05\xf3\xff")),
		"zipmap no end":        cat([]byte{typeHashZipmap}, rawStr("\x01\x01a\x01\x00b")),
		"stream node key size": cat([]byte{typeStreamListpacks2}, lenBytes(1), rawStr("short"), rawStr("lp")),
		"module opcode":        cat([]byte{typeModule2}, lenBytes(5), lenBytes(9)),
	} {
		_, err := DecodeDump(payload(body))
		if !errors.Is(err, ErrBadFormat) {
			t.Errorf("%s: DecodeDump = %v", name, err)
		}
	}
}

// fuzzSeeds are payloads of every encoding this package reads.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, v := range []Value{
		{Type: String, Str: []byte("hello")},
		{Type: String, Str: []byte("-123456")},
		{Type: List, List: bs("a", "1", "-70000", strings.Repeat("x", 70), "")},
		{Type: Set, Set: bs("1", "2", "-40000")},
		{Type: Set, Set: bs("a", "b")},
		{Type: ZSet, ZSet: []Member{{[]byte("a"), 1.5}, {[]byte("b"), math.Inf(1)}, {[]byte("7"), 3}}},
		{Type: ZSet, ZSet: []Member{{[]byte(strings.Repeat("m", 65)), 1}}},
		{Type: Hash, Hash: []Field{{[]byte("f"), []byte("1")}, {[]byte("g"), []byte("v")}}},
		{Type: Hash, Hash: []Field{{[]byte("f"), []byte(strings.Repeat("v", 65))}}},
	} {
		seeds = append(seeds, EncodeDump(v))
	}
	for _, tc := range legacyCases() {
		seeds = append(seeds, payload(tc.body))
	}
	seeds = append(seeds,
		payload(cat([]byte{typeString, 0xc3}, lenBytes(4), lenBytes(9), []byte{0, 'a', 0xc0, 0})),
		payload(cat([]byte{typeStreamListpacks}, lenBytes(1), rawStr(strings.Repeat("\x00", 16)), rawStr("lp"),
			lenBytes(1), lenBytes(2), lenBytes(0), lenBytes(1), rawStr("g"), lenBytes(1), lenBytes(0),
			lenBytes(1), make([]byte, 24), lenBytes(1), lenBytes(1), rawStr("c"), make([]byte, 8), lenBytes(1), make([]byte, 16))),
		payload(cat([]byte{typeModule2}, lenBytes(moduleID("abcdefghi", 1)), lenBytes(moduleOpString), rawStr("x"), lenBytes(0))),
	)
	return seeds
}

// Every seed decodes (or is unsupported); this keeps the seeds meaningful.
func TestFuzzSeedsDecode(t *testing.T) {
	for i, s := range fuzzSeeds() {
		if _, err := DecodeDump(s); err != nil {
			if _, ok := IsUnsupported(err); !ok {
				t.Errorf("seed %d: %v", i, err)
			}
		}
	}
}

// DecodeDump never panics, and what it decodes EncodeDump writes back to a
// payload that decodes to the same value.
func FuzzDecodeDump(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		// Most mutations break the checksum: also decode the body as if
		// the footer were right.
		for _, q := range [][]byte{p, fixFooter(p)} {
			v, err := DecodeDump(q)
			checkLimited(t, q, v, err)
			if err != nil {
				if !errors.Is(err, ErrBadFormat) && err != ErrVersionOrChecksum {
					if _, ok := IsUnsupported(err); !ok {
						t.Fatalf("error of no known kind: %v", err)
					}
				}
				continue
			}
			again, err := DecodeDump(EncodeDump(v))
			if err != nil || !sameValue(again, v) {
				t.Fatalf("round trip: %v, %s != %s", err, show(again), show(v))
			}
		}
		_ = readAll(append([]byte("REDIS0010"), p...))
		rd := NewReaderLimit(bytes.NewReader(append([]byte("REDIS0010"), p...)), fuzzLimit)
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
	})
}

// fuzzLimit is the budget FuzzDecodeDump gives DecodeDumpLimit and
// NewReaderLimit: small, so that mutations run past it.
const fuzzLimit = 4096

// checkLimited checks DecodeDumpLimit against DecodeDump's answer (v, err)
// for q: never more than fuzzLimit charged; the same value or error, or
// ErrTooLarge, which a value that decodes without a limit (or a malformation
// found only past the budget) may give.
func checkLimited(t *testing.T, q []byte, v Value, err error) {
	t.Helper()
	lv, used, lerr := DecodeDumpLimit(q, fuzzLimit)
	if used < 0 || used > fuzzLimit {
		t.Fatalf("DecodeDumpLimit charged %d, limit %d", used, fuzzLimit)
	}
	switch {
	case errors.Is(lerr, ErrTooLarge):
		if errors.Is(lerr, ErrBadFormat) || err == ErrVersionOrChecksum {
			t.Fatalf("DecodeDumpLimit = %v where DecodeDump = %v", lerr, err)
		}
	case (lerr == nil) != (err == nil):
		t.Fatalf("DecodeDumpLimit = %v, DecodeDump = %v", lerr, err)
	case lerr == nil && !sameValue(lv, v):
		t.Fatalf("DecodeDumpLimit = %s, DecodeDump = %s", show(lv), show(v))
	}
}

// fixFooter replaces p's footer (if it has one) with version 10 and the
// right checksum.
func fixFooter(p []byte) []byte {
	if len(p) < 10 {
		return p
	}
	return payload(p[:len(p)-10])
}
