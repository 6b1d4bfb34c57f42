package rdb

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// dumpCase is one value built in Redis with cmds (KEY stands for the key),
// that must decode to want. exact: Redis's choice of encoding and order is
// deterministic for it, so EncodeDump(want) must equal Redis's DUMP with
// rdbcompression off byte for byte. encoding: what OBJECT ENCODING says.
type dumpCase struct {
	name     string
	cmds     [][]any
	want     Value
	exact    bool
	encoding string
}

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// batched splits a variadic command over its elements, n at a time.
func batched(cmd string, elems []any, n int) [][]any {
	var out [][]any
	for len(elems) > 0 {
		k := min(n, len(elems))
		out = append(out, append([]any{cmd, "KEY"}, elems[:k]...))
		elems = elems[k:]
	}
	return out
}

func stringCase(name, s, enc string) dumpCase {
	return dumpCase{name: name, cmds: [][]any{{"SET", "KEY", s}},
		want: Value{Type: String, Str: []byte(s)}, exact: true, encoding: enc}
}

func listCase(name string, elems [][]byte, enc string) dumpCase {
	var args []any
	for _, e := range elems {
		args = append(args, e)
	}
	return dumpCase{name: name, cmds: batched("RPUSH", args, 500),
		want: Value{Type: List, List: elems}, exact: true, encoding: enc}
}

func setCase(name string, members [][]byte, exact bool, enc string) dumpCase {
	var args []any
	for _, e := range members {
		args = append(args, e)
	}
	return dumpCase{name: name, cmds: batched("SADD", args, 500),
		want: Value{Type: Set, Set: members}, exact: exact, encoding: enc}
}

func zsetCase(name string, ms []Member, enc string) dumpCase {
	var args []any
	for _, m := range ms {
		args = append(args, strconv.FormatFloat(m.Score, 'g', -1, 64), m.Member)
	}
	want := append([]Member(nil), ms...)
	sortZSet(want)
	return dumpCase{name: name, cmds: batched("ZADD", args, 400),
		want: Value{Type: ZSet, ZSet: want}, exact: true, encoding: enc}
}

func hashCase(name string, fs []Field, exact bool, enc string) dumpCase {
	var args []any
	for _, f := range fs {
		args = append(args, f.Field, f.Value)
	}
	return dumpCase{name: name, cmds: batched("HSET", args, 400),
		want: Value{Type: Hash, Hash: fs}, exact: exact, encoding: enc}
}

func seq(n int, f func(i int) string) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(f(i))
	}
	return out
}

func dumpCases() []dumpCase {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	cs := []dumpCase{
		stringCase("short", "hello", "embstr"),
		stringCase("empty", "", "embstr"),
		stringCase("binary", "a\x00b\xff\r\n", "embstr"),
		stringCase("long compressible", strings.Repeat("abcdefgh", 200), "raw"),
		stringCase("long random", random(300), "raw"),
		stringCase("21 bytes", strings.Repeat("x", 21), "embstr"),
		stringCase("45 bytes", strings.Repeat("x", 45), "raw"),
	}
	for _, s := range []string{"0", "-1", "127", "128", "-128", "-129", "32767", "32768",
		"-32768", "-32769", "2147483647", "2147483648", "-2147483648", "-2147483649",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808"} {
		enc := "int"
		if s == "9223372036854775808" {
			enc = "embstr"
		}
		cs = append(cs, stringCase("int "+s, s, enc))
	}
	for _, s := range []string{"007", "+5", "-0", " 1", "1 ", "1.5", "0x10", "-"} {
		cs = append(cs, stringCase("not int "+strconv.Quote(s), s, "embstr"))
	}

	cs = append(cs,
		listCase("small mixed", bs("a", "1", "-5", "hello", "", "12345678901234567890"), "quicklist"),
		listCase("listpack ints", bs("0", "127", "128", "-1", "-4096", "4095", "4096", "-4097",
			"32767", "-32768", "32768", "8388607", "-8388608", "8388608", "2147483647",
			"-2147483648", "2147483648", "9223372036854775807", "-9223372036854775808",
			"-0", "01", "+1"), "quicklist"),
		listCase("listpack strings", bs(strings.Repeat("a", 63), strings.Repeat("b", 64),
			strings.Repeat("c", 127), strings.Repeat("d", 128), strings.Repeat("e", 4095),
			strings.Repeat("f", 4096), random(200)), "quicklist"),
		listCase("many nodes", seq(5000, func(i int) string { return fmt.Sprintf("element-%d", i) }), "quicklist"),
		listCase("ints many nodes", seq(3000, func(i int) string { return strconv.Itoa(i*7919 - 100000) }), "quicklist"),
		listCase("big element", bs("a", strings.Repeat("z", 10000), "b", random(9000), "c"), "quicklist"),
		listCase("huge string entry", bs(strings.Repeat("q", 70000)), "quicklist"),
	)

	cs = append(cs,
		setCase("intset16", bs("3", "1", "2", "-32768", "32767"), true, "intset"),
		setCase("intset32", bs("5", "-40000", "70000", "2147483647"), true, "intset"),
		setCase("intset64", bs(strconv.FormatInt(1<<40, 10), "-3", "-9223372036854775808"), true, "intset"),
		setCase("intset 512", seq(512, func(i int) string { return strconv.Itoa(i * 3) }), true, "intset"),
		setCase("strings", bs("a", "b", "c", "hello world"), false, "hashtable"),
		setCase("ints beyond 512", seq(600, func(i int) string { return strconv.Itoa(i) }), false, "hashtable"),
		setCase("int lookalikes", bs("1", "01", "-0", "+2"), false, "hashtable"),
		setCase("long members", seq(50, func(i int) string { return strings.Repeat("m", 30+i) }), false, "hashtable"),
	)

	fancy := []Member{
		{[]byte("one"), 1}, {[]byte("half"), 1.5}, {[]byte("neg"), -2.25},
		{[]byte("inf"), math.Inf(1)}, {[]byte("-inf"), math.Inf(-1)}, {[]byte("zero"), 0},
		{[]byte("tenth"), 0.1}, {[]byte("big"), 1e19}, {[]byte("5e18"), 5e18},
		{[]byte("2^62"), 1 << 62}, {[]byte("tiny"), 1e-05}, {[]byte("3"), 3},
		{[]byte("-7"), -7}, {[]byte("pi"), math.Pi}, {[]byte("a"), 1}, {[]byte(""), 2},
		{[]byte("negbig"), -1e300}, {[]byte("12345"), 123456789.125},
	}
	cs = append(cs, zsetCase("listpack scores", fancy, "listpack"))
	var many []Member
	for i := range 200 {
		many = append(many, Member{[]byte(fmt.Sprintf("m%03d", i)), float64(i%17) / 4})
	}
	cs = append(cs, zsetCase("beyond 128", many, "skiplist"))
	cs = append(cs, zsetCase("skiplist fancy", append(fancy[:len(fancy):len(fancy)],
		Member{[]byte(strings.Repeat("L", 65)), 42}), "skiplist"))
	cs = append(cs, zsetCase("member of 64", []Member{{[]byte(strings.Repeat("k", 64)), 1}, {[]byte("x"), 2}}, "listpack"))
	cs = append(cs, zsetCase("same scores", []Member{{[]byte("b"), 1}, {[]byte("a"), 1}, {[]byte("ab"), 1}, {[]byte("1"), 1}}, "listpack"))

	cs = append(cs,
		hashCase("small", []Field{{[]byte("f1"), []byte("v1")}, {[]byte("n"), []byte("12")},
			{[]byte("13"), []byte("-100000")}, {[]byte("e"), []byte("")}}, true, "listpack"),
		hashCase("value of 64", []Field{{[]byte("a"), []byte(strings.Repeat("v", 64))}}, true, "listpack"),
		hashCase("value of 65", []Field{{[]byte("a"), []byte(strings.Repeat("v", 65))}, {[]byte("b"), []byte("1")}}, false, "hashtable"),
		hashCase("field of 65", []Field{{[]byte(strings.Repeat("f", 65)), []byte("x")}}, true, "hashtable"),
	)
	fields := func(n int) []Field {
		var fs []Field
		for i := range n {
			fs = append(fs, Field{[]byte(fmt.Sprintf("field:%d", i)), []byte(strconv.Itoa(i * i))})
		}
		return fs
	}
	cs = append(cs, hashCase("512 fields", fields(512), true, "listpack"))
	cs = append(cs, hashCase("beyond 512", fields(600), false, "hashtable"))
	return cs
}

// Every value built in Redis decodes from Redis's DUMP (compressed and not)
// to what was built; EncodeDump's payload RESTOREs in Redis to the same
// contents and encoding; and where Redis's bytes are deterministic they
// equal EncodeDump's.
func TestDumpAgainstRedis(t *testing.T) {
	r := startRedis(t)
	c := r.connect(t)
	for i, tc := range dumpCases() {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("k%d", i)
			for _, cmd := range tc.cmds {
				args := append([]any(nil), cmd...)
				args[1] = key
				c.must(t, args...)
			}
			if enc := c.must(t, "OBJECT", "ENCODING", key); enc != tc.encoding {
				t.Fatalf("Redis built %s, the case expects %s", enc, tc.encoding)
			}
			if got := fetch(t, c, key); !sameValue(got, tc.want) {
				t.Fatalf("Redis holds %s, the case built %s", show(got), show(tc.want))
			}
			var plain []byte
			for _, compression := range []string{"yes", "no"} {
				c.must(t, "CONFIG", "SET", "rdbcompression", compression)
				payload := []byte(c.must(t, "DUMP", key).(string))
				got, err := DecodeDump(payload)
				if err != nil {
					t.Fatalf("rdbcompression %s: DecodeDump: %v", compression, err)
				}
				if !sameValue(got, tc.want) {
					t.Fatalf("rdbcompression %s: DecodeDump = %s, want %s", compression, show(got), show(tc.want))
				}
				plain = payload
			}
			ours := EncodeDump(tc.want)
			if tc.exact && !bytes.Equal(ours, plain) {
				t.Errorf("EncodeDump differs from Redis's DUMP:\n ours  %q\n redis %q", trim(ours), trim(plain))
			}
			restored := key + ":restored"
			c.must(t, "RESTORE", restored, 0, ours)
			if got := fetch(t, c, restored); !sameValue(got, fetch(t, c, key)) {
				t.Fatalf("RESTORE of EncodeDump holds %s, want %s", show(got), show(tc.want))
			}
			if a, b := c.must(t, "OBJECT", "ENCODING", restored), c.must(t, "OBJECT", "ENCODING", key); a != b {
				t.Errorf("restored encoding %v, built %v", a, b)
			}
		})
	}
}

func trim(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// DUMP payloads Redis refuses, DecodeDump refuses with the same error.
func TestDumpFooterAgainstRedis(t *testing.T) {
	r := startRedis(t)
	c := r.connect(t)
	good := EncodeDump(Value{Type: String, Str: []byte("hello")})
	withVersion := func(v uint16) []byte {
		p := bytes.Clone(good[:len(good)-10])
		p = append(p, byte(v), byte(v>>8))
		return binaryCRC(p)
	}
	zeroCRC := bytes.Clone(good)
	clear(zeroCRC[len(zeroCRC)-8:])
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	for name, p := range map[string][]byte{
		"version 11": withVersion(11), "version 0xff0a": withVersion(0xff0a),
		"zero crc": zeroCRC, "bad crc": badCRC, "short": good[:9], "empty": {},
	} {
		_, err := c.do("RESTORE", "x", 0, p)
		if err == nil || err.Error() != ErrVersionOrChecksum.Error() {
			t.Fatalf("%s: Redis RESTORE answered %v", name, err)
		}
		if _, err := DecodeDump(p); err != ErrVersionOrChecksum {
			t.Errorf("%s: DecodeDump = %v, want %v", name, err, ErrVersionOrChecksum)
		}
	}
	// Versions below 10 pass the footer check, in Redis and here.
	for _, v := range []uint16{0, 6, 9} {
		p := withVersion(v)
		c.must(t, "RESTORE", "v"+strconv.Itoa(int(v)), 0, p)
		if got, err := DecodeDump(p); err != nil || string(got.Str) != "hello" {
			t.Errorf("version %d: DecodeDump = %v, %v", v, got, err)
		}
	}
}

// binaryCRC appends Redis's CRC64 of p to p.
func binaryCRC(p []byte) []byte {
	c := crc(0, p)
	for i := 0; i < 8; i++ {
		p = append(p, byte(c>>(8*i)))
	}
	return p
}

func TestCRC64(t *testing.T) {
	if got := crc(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %x", got)
	}
	// Continuing equals one pass.
	if crc(crc(0, []byte("1234")), []byte("56789")) != 0xe9c6d914c4b8d9ca {
		t.Fatal("crc64 does not continue")
	}
}
