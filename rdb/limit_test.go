package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strconv"
	"testing"
	"time"
)

// lzfListBomb is a DUMP payload of a list (type 18, quicklist v2) of one
// packed node whose listpack (count 0xffff: unknown) holds entries "01 01"
// (the integer 1 and its back-length), LZF-compressed as one literal run and
// m back references of 3 bytes that each expand to 264 bytes (132 entries).
// It returns the payload and how many entries it decodes to: m = 29000 gives
// an 87 KB payload of 3,828,001 entries.
func lzfListBomb(m int) (p []byte, entries int) {
	entries = 132*m + 1
	total := 6 + 2*entries + 1
	var hdr [6]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(total))
	binary.LittleEndian.PutUint16(hdr[4:], 0xffff)
	lzf := []byte{7} // a literal run of 8 bytes: the header and one entry
	lzf = append(lzf, hdr[:]...)
	lzf = append(lzf, 1, 1)
	for range m {
		lzf = append(lzf, 0xe0, 0xff, 0) // copy 264 bytes from 1 back
	}
	lzf = append(lzf, 0, 0xff) // a literal run of 1 byte: the terminator
	body := cat([]byte{typeListQuicklist2}, lenBytes(1), lenBytes(containerPacked),
		[]byte{0xc3}, lenBytes(uint64(len(lzf))), lenBytes(uint64(total)), lzf)
	return payload(body), entries
}

// The reviewer's case: an 87 KB payload that decodes to 3.8 million list
// elements (841 MiB allocated and accepted before the budget) is refused as
// too large once the LZF output (7.7 MB) is charged and the listpack counted,
// before a single element is made.
func TestDecodeDumpLimitRefusesLZFBomb(t *testing.T) {
	p, entries := lzfListBomb(29000)
	const limit = 64 << 20
	var err error
	var used int64
	start := time.Now()
	n := allocated(func() { _, used, err = DecodeDumpLimit(p, limit) })
	elapsed := time.Since(start)
	t.Logf("%d-byte payload of %d entries: %v in %v, %d bytes allocated, %d charged", len(p), entries, err, elapsed, n, used)
	if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrBadFormat) {
		t.Fatalf("DecodeDumpLimit = %v, want ErrTooLarge (and not Bad data format)", err)
	}
	if want := "rdb: value too large: over " + strconv.Itoa(limit) + " bytes decoded"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	// The payload's clone and the LZF output: 2*entries+7 bytes.
	if n > 16<<20 {
		t.Errorf("allocated %d bytes before refusing", n)
	}
	if used > 16<<20 {
		t.Errorf("charged %d bytes before refusing", used)
	}
	if elapsed > 5*time.Second {
		t.Errorf("took %v to refuse", elapsed)
	}
}

// A small bomb decodes to what it holds, limited or not, and charges 64
// bytes an entry on top of its bytes.
func TestDecodeDumpLimitSmallBomb(t *testing.T) {
	p, entries := lzfListBomb(100)
	v, err := DecodeDump(p)
	if err != nil || v.Type != List || len(v.List) != entries {
		t.Fatalf("DecodeDump = %d elements, %v; want %d", len(v.List), err, entries)
	}
	for _, e := range v.List {
		if string(e) != "1" {
			t.Fatalf("element %q", e)
		}
	}
	lv, used, err := DecodeDumpLimit(p, 10<<20)
	if err != nil || !sameValue(lv, v) {
		t.Fatalf("DecodeDumpLimit: %v", err)
	}
	if min := int64(elementCost*entries + 2*entries); used < min {
		t.Errorf("charged %d, want at least %d", used, min)
	}
}

// elements is how many elements the budget counts in v.
func elements(v Value) int64 {
	return int64(len(v.List) + len(v.Set) + 2*len(v.ZSet) + 2*len(v.Hash))
}

// limitCases are payloads of every encoding: the fuzz seeds, the legacy
// encodings, and the values dumped against Redis.
func limitCases() [][]byte {
	ps := fuzzSeeds()
	for _, tc := range legacyCases() {
		ps = append(ps, payload(tc.body))
	}
	for _, dc := range dumpCases() {
		ps = append(ps, EncodeDump(dc.want))
	}
	p, _ := lzfListBomb(10)
	return append(ps, p)
}

// The budget is exact: a payload decodes under a limit of what it was
// charged and is refused as too large under one byte less; what it decodes
// to is DecodeDump's value, and it was charged at least 64 bytes an element.
func TestDecodeDumpLimitExact(t *testing.T) {
	for i, p := range limitCases() {
		want, werr := DecodeDump(p)
		if werr != nil {
			if _, ok := IsUnsupported(werr); !ok {
				t.Errorf("case %d: DecodeDump: %v", i, werr)
				continue
			}
		}
		v, used, err := DecodeDumpLimit(p, math.MaxInt64)
		if (err == nil) != (werr == nil) || err == nil && !sameValue(v, want) {
			t.Errorf("case %d: unlimited DecodeDumpLimit = %v, DecodeDump %v", i, err, werr)
			continue
		}
		if err == nil && used < elementCost*elements(v)+int64(len(v.Str)) {
			t.Errorf("case %d: %s charged %d", i, show(v), used)
		}
		v, again, err := DecodeDumpLimit(p, used)
		if (err == nil) != (werr == nil) || err == nil && !sameValue(v, want) || again != used {
			t.Errorf("case %d: under a limit of %d: %v, charged %d", i, used, err, again)
		}
		if used == 0 {
			continue
		}
		if _, less, err := DecodeDumpLimit(p, used-1); !errors.Is(err, ErrTooLarge) || less >= used {
			t.Errorf("case %d: under a limit of %d (one less than it costs): %v, charged %d", i, used-1, err, less)
		}
	}
}

// The footer is checked before the budget: a wrong one is still the
// version/checksum error under a zero limit.
func TestDecodeDumpLimitFooterFirst(t *testing.T) {
	p := EncodeDump(Value{Type: String, Str: []byte("hello")})
	p[len(p)-1] ^= 1
	if _, _, err := DecodeDumpLimit(p, 0); err != ErrVersionOrChecksum {
		t.Errorf("DecodeDumpLimit of a bad checksum = %v", err)
	}
	if _, _, err := DecodeDumpLimit(p[:len(p)-1], -5); err != ErrVersionOrChecksum {
		t.Errorf("DecodeDumpLimit of a short payload = %v", err)
	}
}

// Decoding allocates no more than twice what it charges, for big values of
// each kind: the 64 bytes an element are realistic.
func TestDecodeAllocWithinBudget(t *testing.T) {
	const n = 100000
	ints := make([][]byte, n)
	strs := make([][]byte, n)
	ms := make([]Member, n)
	fs := make([]Field, n)
	for i := range ints {
		ints[i] = []byte(strconv.Itoa(i))
		strs[i] = []byte("elem-" + strconv.Itoa(i))
		ms[i] = Member{strs[i], float64(i)}
		fs[i] = Field{strs[i], ints[i]}
	}
	for _, c := range []struct {
		name string
		v    Value
	}{
		{"list of integers", Value{Type: List, List: ints}},
		{"list of strings", Value{Type: List, List: strs}},
		{"set", Value{Type: Set, Set: strs}},
		{"sorted set", Value{Type: ZSet, ZSet: ms}},
		{"hash", Value{Type: Hash, Hash: fs}},
	} {
		p := EncodeDump(c.v)
		var used int64
		var err error
		a := allocated(func() { _, used, err = DecodeDumpLimit(p, math.MaxInt64) })
		t.Logf("%s: %d-byte payload, charged %d (%.0f an element), allocated %d (%.0f an element)",
			c.name, len(p), used, float64(used)/n, a, float64(a)/n)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if a > 2*uint64(used) {
			t.Errorf("%s: allocated %d, more than twice the %d charged", c.name, a, used)
		}
	}
}

// rdbOf is an RDB stream of the given keys and values.
func rdbOf(kv ...any) []byte {
	var f rdbFile
	f.header(10)
	f.aux("redis-ver", "7.0.15")
	for i := 0; i < len(kv); i += 2 {
		body := kv[i+1].([]byte) // a DUMP payload
		body = body[:len(body)-10]
		f.raw(body[:1], rawStr(kv[i].(string)), body[1:])
	}
	return f.end(true)
}

// NewReaderLimit's budget is per record: keys each under it load however
// many there are; a key over it stops the Reader with ErrTooLarge, at once
// and for good, having allocated little.
func TestReaderLimit(t *testing.T) {
	list := EncodeDump(Value{Type: List, List: bs("a", "b", "c", "1", "2", "3")})
	_, cost, err := DecodeDumpLimit(list, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	data := rdbOf("k1", list, "k2", list, "k3", list)
	limit := cost + 8 // the key's name and a few length bytes
	rd := NewReaderLimit(bytes.NewReader(data), limit)
	for i := range 3 {
		if e, err := rd.Next(); err != nil || len(e.Value.List) != 6 {
			t.Fatalf("key %d under a limit of %d: %v", i, limit, err)
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("after the keys: %v", err)
	}

	rd = NewReaderLimit(bytes.NewReader(data), cost/2)
	if _, err := rd.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a key over the limit: %v", err)
	}
	if _, err := rd.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Next after the error: %v", err)
	}

	bomb, _ := lzfListBomb(29000)
	data = rdbOf("bomb", bomb)
	n := allocated(func() {
		_, err = NewReaderLimit(bytes.NewReader(data), 64<<20).Next()
	})
	if !errors.Is(err, ErrTooLarge) || n > 16<<20 {
		t.Errorf("the LZF bomb in a stream: %v, %d bytes allocated", err, n)
	}
	// Without a limit Reader reads it as before (NewReader's behaviour is
	// unchanged); a small one keeps the test quick.
	small, entries := lzfListBomb(100)
	e, err := NewReader(bytes.NewReader(rdbOf("b", small))).Next()
	if err != nil || len(e.Value.List) != entries {
		t.Errorf("NewReader: %d elements, %v", len(e.Value.List), err)
	}
	if ReplicaValueLimit != 512<<20 {
		t.Errorf("ReplicaValueLimit = %d", ReplicaValueLimit)
	}
}
