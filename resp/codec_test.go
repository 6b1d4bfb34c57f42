package resp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// sameValue reports whether a and b are equal field by field, floats by their
// bits, nil and empty slices alike (the one difference the codec drops).
func sameValue(a, b Value) bool {
	if a.Kind != b.Kind || !bytes.Equal(a.Str, b.Str) || a.Int != b.Int ||
		math.Float64bits(a.Float) != math.Float64bits(b.Float) || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !sameValue(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

// nest returns depth levels of one-element arrays around leaf.
func nest(depth int, leaf Value) Value {
	v := leaf
	for i := 1; i < depth; i++ {
		v = Array(v)
	}
	return v
}

func codecCases() []struct {
	name string
	v    Value
} {
	return []struct {
		name string
		v    Value
	}{
		{"null", Nil},
		{"null array", NilArray},
		{"simple", OK},
		{"simple empty", Simple("")},
		{"error", Error("ERR boom")},
		{"bulk", BulkString("hello\r\nworld\x00\xff")},
		{"bulk nil", Bulk(nil)},
		{"bulk empty", Bulk([]byte{})},
		{"verbatim", Verbatim("some text")},
		{"int zero", Zero},
		{"int one", One},
		{"int -1", Int(-1)},
		{"int max", Int(math.MaxInt64)},
		{"int min", Int(math.MinInt64)},
		{"bool true", Bool(true)},
		{"bool false", Bool(false)},
		{"bool other int", Value{Kind: KindBool, Int: 7}},
		{"double", Double(3.25)},
		{"double zero", Double(0)},
		{"double -0", Double(math.Copysign(0, -1))},
		{"double +inf", Double(math.Inf(1))},
		{"double -inf", Double(math.Inf(-1))},
		{"double nan", Double(math.NaN())},
		{"double nan payload", Double(math.Float64frombits(0x7ff0000000000001))},
		{"double negative nan", Double(math.Float64frombits(0xfff8000000000abc))},
		{"double smallest subnormal", Double(math.SmallestNonzeroFloat64)},
		{"double max", Double(math.MaxFloat64)},
		{"empty list", EmptyList},
		{"array", Array(Int(1), BulkString("a"), Nil, NilArray, Array())},
		{"map", Map(BulkString("k"), Int(1), Simple("k2"), Double(math.NaN()))},
		{"map odd", Map(BulkString("k"))},
		{"set", Value{Kind: KindSet, Elems: []Value{Int(1), Int(2)}}},
		{"push", Value{Kind: KindPush, Elems: []Value{BulkString("message"), Nil}}},
		{"nested", Array(Map(BulkString("a"), Array(Array(NilArray, Nil), Double(-0.5))), Error("WRONGTYPE x"))},
		{"null with stray str", Value{Kind: KindNull, Str: []byte("x")}},
		{"int with stray float", Value{Kind: KindInt, Int: 5, Float: math.Copysign(0, -1)}},
		{"bulk with stray elems", Value{Kind: KindBulk, Str: []byte("b"), Elems: []Value{Int(1)}}},
		{"array with stray int", Value{Kind: KindArray, Int: -3, Elems: []Value{Nil}}},
		{"unknown kind", Value{Kind: 200}},
		{"unknown kind all fields", Value{Kind: 13, Str: []byte("s"), Int: 9, Float: math.Inf(-1), Elems: []Value{NilArray, Value{Kind: 255}}}},
		{"deep", nest(MaxDepth, Error("ERR reached lua stack limit"))},
		{"long bulk", Bulk(bytes.Repeat([]byte{'x'}, 100_000))},
		{"many elems", Array(make([]Value, 10_000)...)},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, tc := range codecCases() {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("prefix")
			enc := AppendValue(prefix, tc.v)
			if !bytes.HasPrefix(enc, []byte("prefix")) {
				t.Fatal("AppendValue clobbered buf")
			}
			enc = enc[len(prefix):]
			got, n, err := ReadValue(append(enc, "trailing"...))
			if err != nil {
				t.Fatalf("ReadValue: %v", err)
			}
			if n != len(enc) {
				t.Fatalf("consumed %d bytes, encoding has %d", n, len(enc))
			}
			if !sameValue(got, tc.v) {
				t.Fatalf("round trip changed the value:\n got %#v\nwant %#v", got, tc.v)
			}
			if re := AppendValue(nil, got); !bytes.Equal(re, enc) {
				t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, enc)
			}
			// Both RESP renderings of the decoded value are those of the original.
			for _, proto := range []int{2, 3} {
				if a, b := Append(nil, got, proto), Append(nil, tc.v, proto); !bytes.Equal(a, b) {
					t.Fatalf("RESP%d rendering differs: %q vs %q", proto, a, b)
				}
			}
		})
	}
}

func TestCodecNullKindsDiffer(t *testing.T) {
	a, b := AppendValue(nil, Nil), AppendValue(nil, NilArray)
	if bytes.Equal(a, b) {
		t.Fatal("Null and NullArray encode alike")
	}
	v, _, err := ReadValue(b)
	if err != nil || v.Kind != KindNullArray {
		t.Fatalf("ReadValue(NilArray) = %v, %v", v, err)
	}
	if got := string(Append(nil, v, 2)); got != "*-1\r\n" {
		t.Fatalf("RESP2 of decoded NilArray = %q", got)
	}
}

func TestCodecCompact(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want []byte
	}{
		{Nil, []byte{1, byte(KindNull)}},
		{NilArray, []byte{1, byte(KindNullArray)}},
		{OK, []byte{1, byte(KindSimple), 2, 'O', 'K'}},
		{Int(-1), []byte{1, byte(KindInt), 1}},
		{Bool(true), []byte{1, byte(KindBool), 2}},
		{EmptyList, []byte{1, byte(KindArray), 0}},
		{Array(Nil, Int(1)), []byte{1, byte(KindArray), 2, byte(KindNull), byte(KindInt), 2}},
	} {
		if got := AppendValue(nil, tc.v); !bytes.Equal(got, tc.want) {
			t.Errorf("AppendValue(%#v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestCodecDecodedDoesNotAlias checks that the Value owns its bytes and that
// appending to one of its slices cannot overwrite a neighbour.
func TestCodecDecodedDoesNotAlias(t *testing.T) {
	enc := AppendValue(nil, Array(BulkString("ab"), BulkString("cd"), Array(Int(1)), Array(Int(2))))
	v, _, err := ReadValue(enc)
	if err != nil {
		t.Fatal(err)
	}
	clear(enc)
	_ = append(v.Elems[0].Str, 'X')
	_ = append(v.Elems[2].Elems, Int(99))
	if string(v.Elems[0].Str) != "ab" || string(v.Elems[1].Str) != "cd" ||
		v.Elems[3].Elems[0].Int != 2 || v.Elems[3].Kind != KindArray {
		t.Fatalf("decoded value changed: %#v", v)
	}
}

func TestCodecBadInput(t *testing.T) {
	valid := AppendValue(nil, Array(BulkString("abc"), Int(300), Double(1.5), Map(Nil, Value{Kind: 77, Int: 1})))
	cases := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"version 0", []byte{0, byte(KindNull)}},
		{"version 2", []byte{2, byte(KindNull)}},
		{"no value", []byte{1}},
		{"unknown tag", []byte{1, 13}},
		{"tag 0xfe", []byte{1, 0xfe}},
		{"full form truncated", []byte{1, tagFull}},
		{"full form of a compact value", []byte{1, tagFull, byte(KindInt), 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"full form of null", []byte{1, tagFull, byte(KindNull), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"non-minimal length", []byte{1, byte(KindBulk), 0x81, 0x00, 'a'}},
		{"non-minimal int", []byte{1, byte(KindInt), 0x80, 0x00}},
		{"overlong int", []byte{1, byte(KindInt), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"bulk beyond input", []byte{1, byte(KindBulk), 5, 'a'}},
		{"huge bulk length", binary.AppendUvarint([]byte{1, byte(KindBulk)}, math.MaxUint64)},
		{"huge array count", binary.AppendUvarint([]byte{1, byte(KindArray)}, 1<<62)},
		{"array count beyond input", []byte{1, byte(KindArray), 3, byte(KindNull), byte(KindNull)}},
		{"truncated double", []byte{1, byte(KindDouble), 0, 0, 0}},
		{"too deep", AppendValue(nil, nest(MaxDepth+1, Nil))},
	}
	for i := 1; i < len(valid); i++ {
		cases = append(cases, struct {
			name string
			in   []byte
		}{fmt.Sprintf("prefix %d of %d", i, len(valid)), valid[:i]})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := ReadValue(tc.in)
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("ReadValue(%x) = %#v, %d, %v; want ErrBadValue", tc.in, v, n, err)
			}
			if n != 0 {
				t.Fatalf("n = %d on error", n)
			}
		})
	}
}

// TestCodecHostileNesting: every level claims as many elements as bytes are
// left; the first pass must reject it without allocating per claim.
func TestCodecHostileNesting(t *testing.T) {
	in := []byte{1}
	const levels = 1000
	for i := range levels {
		in = binary.AppendUvarint(append(in, byte(KindArray)), uint64(2*(levels-i)+1000))
	}
	in = append(in, make([]byte, 1000)...) // 1000 KindNull: not enough for the counts
	allocs := testing.AllocsPerRun(5, func() {
		if _, _, err := ReadValue(in); !errors.Is(err, ErrBadValue) {
			t.Fatalf("err = %v", err)
		}
	})
	if allocs > 10 {
		t.Fatalf("rejecting hostile input allocated %v times", allocs)
	}
}

// randValue builds a random Value, stray fields and unknown kinds included.
func randValue(r *rand.Rand, depth int) Value {
	v := Value{Kind: Kind(r.IntN(int(KindPush) + 1))}
	if r.IntN(20) == 0 {
		v.Kind = Kind(r.IntN(256))
	}
	f, _ := fieldOf(v.Kind)
	stray := r.IntN(10) == 0
	if f == fieldStr || stray && r.IntN(2) == 0 {
		v.Str = make([]byte, r.IntN(20))
		for i := range v.Str {
			v.Str[i] = byte(r.IntN(256))
		}
	}
	if f == fieldInt || stray && r.IntN(2) == 0 {
		v.Int = int64(r.Uint64())
		if r.IntN(2) == 0 {
			v.Int >>= r.IntN(64)
		}
	}
	if f == fieldFloat || stray && r.IntN(2) == 0 {
		v.Float = math.Float64frombits(r.Uint64())
	}
	if (f == fieldElems || stray && r.IntN(2) == 0) && depth < 6 {
		n := r.IntN(6)
		for range n {
			v.Elems = append(v.Elems, randValue(r, depth+1))
		}
	}
	return v
}

func TestCodecRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		v := randValue(r, 0)
		enc := AppendValue(nil, v)
		got, n, err := ReadValue(enc)
		if err != nil || n != len(enc) || !sameValue(got, v) {
			t.Fatalf("case %d: ReadValue = %#v, %d, %v; want %#v, %d", i, got, n, err, v, len(enc))
		}
	}
}

func FuzzReadValue(f *testing.F) {
	for _, tc := range codecCases() {
		if tc.name != "deep" && tc.name != "long bulk" && tc.name != "many elems" {
			f.Add(AppendValue(nil, tc.v))
		}
	}
	f.Add([]byte{1, tagFull, 13, 1, 'x', 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, byte(KindNull)})
	f.Fuzz(func(t *testing.T, in []byte) {
		v, n, err := ReadValue(in)
		if err != nil {
			if !errors.Is(err, ErrBadValue) || n != 0 {
				t.Fatalf("error %v (n=%d) is not a bare ErrBadValue", err, n)
			}
			return
		}
		if n < 2 || n > len(in) {
			t.Fatalf("n = %d for %d bytes of input", n, len(in))
		}
		// Canonical: the encoder writes back exactly the bytes consumed...
		enc := AppendValue(nil, v)
		if !bytes.Equal(enc, in[:n]) {
			t.Fatalf("encode(decode(x)) != x:\n got %x\nwant %x", enc, in[:n])
		}
		// ...and they decode to the same Value again.
		v2, n2, err := ReadValue(enc)
		if err != nil || n2 != n || !sameValue(v, v2) {
			t.Fatalf("second decode: %#v, %d, %v", v2, n2, err)
		}
	})
}

func BenchmarkCodec(b *testing.B) {
	v := Array(BulkString("lock:order:42"), Int(1), Map(BulkString("owner"), BulkString("node-3"), BulkString("ttl"), Int(30000)), Nil)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendValue(buf[:0], v)
		if _, _, err := ReadValue(buf); err != nil {
			b.Fatal(err)
		}
	}
}
