package compat

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/rdb"
)

// DUMP and RESTORE (issue 48). TestDump compares lockd with a redis-server
// started with rdbcompression off, under which Redis's DUMP bytes are
// deterministic and lockd's (which never LZF-compresses) must equal them:
// DUMP of each kind, large ones included, and every RESTORE error in Redis's
// order. TestDumpRoundTrip moves values Redis built (in every encoding it
// picks by default, compressed strings included) from Redis to lockd and
// back, comparing what each holds.

// payload is rdb.EncodeDump of v, as a string for a step's arguments: Redis
// 7.0.15's own DUMP of the same value under rdbcompression no
// (rdb/DESIGN.md), so both servers are sent the bytes either would dump.
func payload(v rdb.Value) string { return string(rdb.EncodeDump(v)) }

func strPayload(s string) string { return payload(rdb.Value{Type: rdb.String, Str: []byte(s)}) }

// withFooter is body with a DUMP footer: RDB version ver and Redis's CRC64.
func withFooter(body string, ver uint16) string {
	return string(rdb.AppendFooter([]byte(body), ver))
}

// numbered is prefix0 … prefix(n-1).
func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// dumpCases: DUMP of every kind and RESTORE's answers, byte for byte.
var dumpCases = func() []tcase {
	str := strPayload("restored")
	list := payload(rdb.Value{Type: rdb.List, List: [][]byte{[]byte("a"), []byte("12"), []byte("b")}})
	hash := payload(rdb.Value{Type: rdb.Hash, Hash: []rdb.Field{{Field: []byte("f1"), Value: []byte("v1")}, {Field: []byte("n"), Value: []byte("7")}}})
	zset := payload(rdb.Value{Type: rdb.ZSet, ZSet: []rdb.Member{{Member: []byte("a"), Score: -1.5}, {Member: []byte("b"), Score: 2}}})
	// "a" then a back-reference copying 25 more: 26 a's, LZF-compressed.
	b := []byte(str)
	b[len(b)-1] ^= 0xff
	badCRC := string(b)
	lzf := withFooter("\x00\xc3\x05\x1a\x00a\xe0\x10\x00", rdb.Version)
	bigList := append([]string{"RPUSH", "biglist"}, numbered("element-", 3000)...)
	bigZSet := []string{"ZADD", "bigz"}
	for i := 0; i < 200; i++ {
		bigZSet = append(bigZSet, strconv.FormatFloat(float64(i)*1.25-40, 'g', -1, 64), "m"+strconv.Itoa(i))
	}
	return []tcase{
		{name: "DUMP of each kind", steps: []step{
			cmd("DUMP", "missing"),
			cmd("SET", "s", "hello"),
			cmd("DUMP", "s"),
			cmd("SET", "e", ""),
			cmd("DUMP", "e"),
			cmd("SET", "long", strings.Repeat("x", 100)),
			cmd("DUMP", "long"),
			cmd("SET", "bin", "a\x00b\r\nc"),
			cmd("DUMP", "bin"),
			cmd("MSET", "i1", "7", "i2", "-300", "i3", "70000", "i4", "4294967296", "i5", "007", "i6", "-0"),
			cmd("DUMP", "i1"), cmd("DUMP", "i2"), cmd("DUMP", "i3"), cmd("DUMP", "i4"), cmd("DUMP", "i5"), cmd("DUMP", "i6"),
			cmd("INCR", "n"),
			cmd("DUMP", "n"),
			cmd("HSET", "h", "f1", "v1", "f2", "12", "f3", strings.Repeat("y", 64)),
			cmd("DUMP", "h"),
			cmd("RPUSH", "l", "a", "1", "-20000", "b", strings.Repeat("z", 70)),
			cmd("DUMP", "l"),
			cmd("ZADD", "z", "1", "a", "2.5", "b", "-inf", "c", "inf", "d", "0", "e", "1e300", "f"),
			cmd("DUMP", "z"),
		}},
		{name: "DUMP of large values", steps: []step{
			cmd(bigList...),
			cmd("DUMP", "biglist"),
			cmd("RPUSH", "bigelem", "a", strings.Repeat("q", 10000), "b"),
			cmd("DUMP", "bigelem"),
			cmd(bigZSet...),
			cmd("DUMP", "bigz"),
		}},
		{name: "RESTORE of each kind", steps: []step{
			cmd("RESTORE", "s", "0", str),
			cmd("GET", "s"),
			cmd("TTL", "s"),
			cmd("RESTORE", "l", "0", list),
			cmd("LRANGE", "l", "0", "-1"),
			cmd("RESTORE", "h", "0", hash),
			cmd("HGETALL", "h"),
			cmd("RESTORE", "z", "0", zset),
			cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			cmd("TYPE", "z"),
			cmd("RESTORE", "lzf", "0", lzf),
			cmd("GET", "lzf"),
			cmd("DUMP", "s"), cmd("DUMP", "l"), cmd("DUMP", "h"), cmd("DUMP", "z"), cmd("DUMP", "lzf"),
		}},
		{name: "RESTORE BUSYKEY and REPLACE", steps: []step{
			cmd("SET", "k", "old"),
			cmd("RESTORE", "k", "0", str),
			cmd("RESTORE", "k", "-1", "junk"), // BUSYKEY before the TTL and the payload
			cmd("RESTORE", "k", "0", str, "IDLETIME", "-1"),
			cmd("GET", "k"),
			cmd("RESTORE", "k", "0", str, "REPLACE"),
			cmd("GET", "k"),
			cmd("RPUSH", "l", "x"),
			cmd("RESTORE", "l", "0", hash, "replace"),
			cmd("TYPE", "l"),
			cmd("HGETALL", "l"),
		}},
		{name: "RESTORE TTLs", steps: []step{
			cmd("RESTORE", "k", "100000", str),
			cmd("PTTL", "k").with(ttlMillis),
			cmd("RESTORE", "a", "${unixms+50000}", str, "ABSTTL"),
			cmd("PTTL", "a").with(ttlMillis),
			cmd("RESTORE", "p", "${unixms-1000}", str, "ABSTTL"),
			cmd("EXISTS", "p"),
			cmd("RESTORE", "k", "1", str, "ABSTTL", "REPLACE"),
			cmd("EXISTS", "k"),
			cmd("SET", "q", "v"),
			cmd("RESTORE", "q", "9223372036854775807", str, "REPLACE"),
			cmd("EXISTS", "q"),
			cmd("RESTORE", "z", "0", str, "ABSTTL"),
			cmd("TTL", "z"),
		}},
		{name: "RESTORE errors", steps: []step{
			cmd("RESTORE", "k", "0"),
			cmd("RESTORE", "k"),
			cmd("RESTORE", "k", "x", str),
			cmd("RESTORE", "k", "1.5", str),
			cmd("RESTORE", "k", "-1", str),
			cmd("RESTORE", "k", "9223372036854775808", str),
			cmd("RESTORE", "k", "0", ""),
			cmd("RESTORE", "k", "0", "short"),
			cmd("RESTORE", "k", "0", badCRC),
			cmd("RESTORE", "k", "0", withFooter("\x00\x01a", 11)),
			cmd("RESTORE", "v0", "0", withFooter("\x00\x01a", 0)), // version 0 is fine
			cmd("GET", "v0"),
			cmd("RESTORE", "k", "0", withFooter("\xff", rdb.Version)),
			cmd("RESTORE", "k", "0", withFooter("\x04\x00", rdb.Version)),   // an empty hash
			cmd("RESTORE", "k", "0", withFooter("\x00\x3fab", rdb.Version)), // a string past the payload's end
			cmd("RESTORE", "k", "0", str, "IDLETIME", "-1"),
			cmd("RESTORE", "k", "0", str, "IDLETIME", "x"),
			cmd("RESTORE", "k", "0", str, "FREQ", "256"),
			cmd("RESTORE", "k", "0", str, "FREQ", "-1"),
			cmd("RESTORE", "k", "0", str, "FREQ", "1.0"),
			cmd("RESTORE", "k", "0", str, "FREQ", "1", "IDLETIME", "1"),
			cmd("RESTORE", "k", "0", str, "IDLETIME", "1", "FREQ", "1"),
			cmd("RESTORE", "k", "0", str, "IDLETIME"),
			cmd("RESTORE", "k", "0", str, "FREQ"),
			cmd("RESTORE", "k", "0", str, "NOPE"),
			cmd("RESTORE", "k", "-1", str, "NOPE"), // options before the TTL
			cmd("RESTORE", "k", "0", "junk", "FREQ", "300"),
			cmd("EXISTS", "k"),
			cmd("RESTORE", "k", "0", str, "IDLETIME", "10", "IDLETIME", "20", "ABSTTL", "REPLACE", "absttl"),
			cmd("RESTORE", "k2", "0", str, "FREQ", "0", "FREQ", "255"),
			cmd("GET", "k2"),
			cmd("DUMP"),
			cmd("DUMP", "a", "b"),
		}},
		{name: "RESTORE needs @dangerous", steps: []step{
			cmd("ACL", "SETUSER", "nodanger", "on", ">pw", "~*", "+@all", "-@dangerous"),
			cmd("AUTH", "nodanger", "pw").on(1),
			cmd("SET", "k", "v").on(1),
			cmd("DUMP", "k").on(1),
			cmd("RESTORE", "k2", "0", str).on(1),
			cmd("EXISTS", "k2").on(1),
			cmd("ACL", "SETUSER", "nodanger", "+restore"),
			cmd("RESTORE", "k2", "0", str).on(1),
			cmd("GET", "k2").on(1),
			cmd("ACL", "DELUSER", "nodanger"),
		}},
		{name: "RESTORE in MULTI and scripts", steps: []step{
			cmd("MULTI"),
			cmd("RESTORE", "k", "0", str),
			cmd("RESTORE", "k", "0", str),
			cmd("GET", "k"),
			cmd("EXEC"),
			cmd("EVAL", "return redis.call('RESTORE', KEYS[1], 0, ARGV[1])", "1", "e", str),
			cmd("EVAL", "return redis.pcall('RESTORE', KEYS[1], 0, ARGV[1])", "1", "e", str),
			cmd("EVAL", "return redis.call('DUMP', KEYS[1])", "1", "e"),
		}},
	}
}()

// TestDump runs dumpCases against a redis-server with rdbcompression off.
func TestDump(t *testing.T) {
	redisAddr := startRedis(t, "--rdbcompression", "no")
	var name, addr string
	if os.Getenv("COMPAT_TARGET") == "redis" { // the cases checked against Redis itself
		name, addr = "redis2", startRedis(t, "--rdbcompression", "no")
	} else {
		name, addr = startOther(t)
	}
	e := &env{redis: &side{name: "redis", addr: redisAddr}, other: &side{name: name, addr: addr}}
	e.runCases(t, dumpCases)
}

// rtClient is one plain connection for TestDumpRoundTrip.
type rtClient struct {
	t    *testing.T
	name string
	c    *conn
}

func (r *rtClient) do(args ...string) value {
	r.t.Helper()
	if err := r.c.send(multibulk(args...)); err != nil {
		r.t.Fatalf("%s: send %s: %v", r.name, args[0], err)
	}
	o := r.c.read(replyTimeout)
	if o.end != "" {
		r.t.Fatalf("%s: %s: %v", r.name, quoteShort(strings.Join(args, " "), 80), o)
	}
	v, err := parseValue(o.raw)
	if err != nil {
		r.t.Fatalf("%s: %s: undecodable reply %v: %v", r.name, args[0], o, err)
	}
	return v
}

// contents is what key holds, as a comparable string: its type and its
// value (a hash's pairs sorted, as Redis's hash-table order is its own).
func (r *rtClient) contents(key string) string {
	r.t.Helper()
	typ := r.do("TYPE", key).str
	var v value
	switch typ {
	case "string":
		v = r.do("GET", key)
	case "list":
		v = r.do("LRANGE", key, "0", "-1")
	case "zset":
		v = r.do("ZRANGE", key, "0", "-1", "WITHSCORES")
	case "hash":
		v = r.do("HGETALL", key)
		pairs := make([]string, 0, len(v.elems)/2)
		for i := 0; i+1 < len(v.elems); i += 2 {
			pairs = append(pairs, strconv.Quote(v.elems[i].str)+"="+strconv.Quote(v.elems[i+1].str))
		}
		sort.Strings(pairs)
		return typ + ":" + strings.Join(pairs, ",")
	default:
		return typ
	}
	return typ + ":" + string(v.encode())
}

// pttl is PTTL key.
func (r *rtClient) pttl(key string) int64 {
	r.t.Helper()
	v := r.do("PTTL", key)
	n, err := strconv.ParseInt(v.str, 10, 64)
	if err != nil {
		r.t.Fatalf("%s: PTTL %s = %q", r.name, key, v.str)
	}
	return n
}

// Values Redis builds in each encoding it picks by default (listpacks,
// quicklists of several nodes, skiplist sorted sets, hash tables, int and
// LZF-compressed strings) go to lockd through DUMP/RESTORE and back, their
// contents and TTLs intact.
func TestDumpRoundTrip(t *testing.T) {
	redisAddr := startRedis(t) // rdbcompression on, Redis's default
	_, addr := startOther(t)
	dialAt := func(name, a string) *rtClient {
		c, err := dial(a)
		if err != nil {
			t.Fatalf("%s: dial %s: %v", name, a, err)
		}
		t.Cleanup(c.close)
		return &rtClient{t: t, name: name, c: c}
	}
	rs, ls := dialAt("redis", redisAddr), dialAt("lockd", addr)
	rs.do("FLUSHALL")
	ls.do("FLUSHALL")

	noise := make([]byte, 50000) // incompressible: stored raw even with LZF on
	x := uint32(1)
	for i := range noise {
		x = x*1664525 + 1013904223
		noise[i] = byte(x >> 24)
	}
	build := [][]string{
		{"SET", "str", "hello"},
		{"SET", "empty", ""},
		{"SET", "int", "12345"},
		{"SET", "int64", "9223372036854775807"},
		{"SET", "bin", "a\x00b\r\nc"},
		{"SET", "lzf", strings.Repeat("abc", 2000)},
		{"SET", "noise", string(noise)},
		append([]string{"RPUSH", "smalllist"}, "a", "1", "-2", "bb"),
		append([]string{"RPUSH", "biglist"}, numbered("element-", 5000)...),
		append([]string{"RPUSH", "intlist"}, numbered("", 3000)...),
		{"RPUSH", "hugeelems", strings.Repeat("p", 10000), "mid", strings.Repeat("abcd", 20000)},
		append([]string{"HSET", "smallhash"}, "f1", "v1", "f2", "2"),
		{"HSET", "longvalhash", "f", strings.Repeat("v", 100), "g", "1"},
		{"ZADD", "smallz", "1", "a", "-2.5", "b", "inf", "c", "-inf", "d", "0.1", "e"},
	}
	bigHash := []string{"HSET", "bighash"}
	for _, f := range numbered("field-", 600) {
		bigHash = append(bigHash, f, "value-of-"+f)
	}
	bigZ := []string{"ZADD", "bigz"}
	for i := 0; i < 300; i++ {
		bigZ = append(bigZ, strconv.FormatFloat(float64(i%50)/3, 'g', -1, 64), "member-"+strconv.Itoa(i))
	}
	longZ := []string{"ZADD", "longmemberz", "1", strings.Repeat("m", 100), "2", "short"}
	build = append(build, bigHash, bigZ, longZ)
	keys := []string{}
	for _, b := range build {
		rs.do(b...)
		keys = append(keys, b[1])
	}
	for _, k := range []string{"str", "biglist", "bighash", "bigz"} {
		rs.do("PEXPIRE", k, "100000")
	}
	encodings := map[string]bool{}
	for _, k := range keys {
		encodings[rs.do("OBJECT", "ENCODING", k).str] = true
	}
	for _, want := range []string{"embstr", "int", "raw", "listpack", "quicklist", "hashtable", "skiplist"} {
		if !encodings[want] {
			t.Errorf("no value built in encoding %s (got %v): the test no longer covers it", want, encodings)
		}
	}

	move := func(from, to *rtClient, key, dst string) {
		t.Helper()
		p := from.do("DUMP", key)
		if p.kind != '$' || p.null {
			t.Fatalf("%s: DUMP %s = %v", from.name, key, p)
		}
		ttl := from.pttl(key)
		if ttl < 0 {
			ttl = 0
		}
		if v := to.do("RESTORE", dst, strconv.FormatInt(ttl, 10), p.str); v.str != "OK" {
			t.Fatalf("%s: RESTORE %s (%d bytes from %s) = %q", to.name, dst, len(p.str), from.name, v.str)
		}
	}
	check := func(a *rtClient, akey string, b *rtClient, bkey string) {
		t.Helper()
		if ca, cb := a.contents(akey), b.contents(bkey); ca != cb {
			t.Errorf("%s %s holds %s\n%s %s holds %s", a.name, akey, quoteShort(ca, 200), b.name, bkey, quoteShort(cb, 200))
		}
		ta, tb := a.pttl(akey), b.pttl(bkey)
		if (ta < 0) != (tb < 0) || abs(ta-tb) > int64(5*time.Second/time.Millisecond) {
			t.Errorf("%s %s PTTL %d, %s %s PTTL %d", a.name, akey, ta, b.name, bkey, tb)
		}
	}
	for _, k := range keys {
		move(rs, ls, k, k)
		check(rs, k, ls, k)
		move(ls, rs, k, k+":back")
		check(rs, k, rs, k+":back")
	}
	if t.Failed() {
		return
	}
	// A value lockd built, not Redis: lockd's DUMP restores in Redis too.
	ls.do("ZADD", "lz", "3", "c", "1", "a")
	ls.do("HSET", "lh", "x", "1")
	for _, k := range []string{"lz", "lh"} {
		move(ls, rs, k, k)
		check(ls, k, rs, k)
	}
	t.Logf("moved %d keys Redis built (in %d encodings) to lockd and back", len(keys), len(encodings))
}
