package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// wall is the leader wall clock the tests stamp entries with (Unix ms); log time
// starts at 0, so absolute times convert as wall+logtime.
const wall = 1_700_000_000_000

// harness applies commands as committed entries at increasing indexes.
type harness struct {
	t     *testing.T
	ks    *Keyspace
	index uint64
	now   int64
}

// newHarness returns a harness on an empty keyspace whose group holds sorted
// sets and lists (as a group of this version does once its leader's first
// settings entry applied), without spending an index on it.
func newHarness(t *testing.T) *harness {
	ks := New()
	ks.settings.Features = command.FeatureCollections
	return &harness{t: t, ks: ks}
}

func args(cmd string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(cmd) {
		out = append(out, []byte(f))
	}
	return out
}

// do applies cmd at the harness's current log time and renders the reply as RESP2.
func (h *harness) do(cmd string) string { return h.apply(args(cmd)) }

// apply applies the command a at the harness's current log time and renders
// the reply as RESP2.
func (h *harness) apply(a [][]byte) string {
	h.index++
	e := command.Entry{Kind: command.KindCommand, Time: h.now, Wall: wall + h.now, Args: a}
	return string(resp.Append(nil, h.ks.Apply(h.index, e), 2))
}

// read serves cmd as a read outside the log.
func (h *harness) read(cmd string) string {
	op, spec, err := command.Parse(args(cmd))
	if err != nil || spec == nil || spec.Writes() {
		h.t.Fatalf("read %q: not a read (%v)", cmd, err)
	}
	return string(resp.Append(nil, h.ks.Read(op, h.now, wall+h.now), 2))
}

func (h *harness) tick() {
	h.index++
	h.ks.Apply(h.index, command.Entry{Kind: command.KindTick, Time: h.now, Wall: wall + h.now})
}

type step struct {
	advance int64 // ms of log time before the command
	cmd     string
	want    string
}

func runSteps(t *testing.T, steps []step) {
	t.Helper()
	h := newHarness(t)
	for i, s := range steps {
		h.now += s.advance
		got := h.do(s.cmd)
		if got != s.want {
			t.Fatalf("step %d %q at t=%d (index %d): got %q, want %q", i, s.cmd, h.now, h.index, got, s.want)
		}
	}
}

const (
	ok   = "+OK\r\n"
	nilb = "$-1\r\n"
)

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func num(n int64) string   { return ":" + strconv.FormatInt(n, 10) + "\r\n" }

func TestSet(t *testing.T) {
	cases := map[string][]step{
		"plain and get": {{0, "SET k v", ok}, {0, "GET k", bulk("v")}, {0, "GET missing", nilb}},
		"nx": {{0, "SET k a NX", ok}, {0, "SET k b NX", nilb}, {0, "GET k", bulk("a")},
			{0, "SETNX k c", num(0)}, {0, "SETNX j c", num(1)}},
		"xx":           {{0, "SET k a XX", nilb}, {0, "SET k a", ok}, {0, "SET k b XX", ok}, {0, "GET k", bulk("b")}},
		"get option":   {{0, "SET k a GET", nilb}, {0, "SET k b GET", bulk("a")}, {0, "SET k c NX GET", bulk("b")}, {0, "GET k", bulk("b")}},
		"px expires":   {{0, "SET k v PX 100", ok}, {99, "GET k", bulk("v")}, {1, "GET k", nilb}, {0, "EXISTS k", num(0)}},
		"ex and ttl":   {{0, "SET k v EX 10", ok}, {0, "TTL k", num(10)}, {2400, "TTL k", num(8)}, {0, "PTTL k", num(7600)}},
		"keepttl":      {{0, "SET k v PX 1000", ok}, {0, "SET k w KEEPTTL", ok}, {0, "PTTL k", num(1000)}, {0, "SET k x", ok}, {0, "PTTL k", num(-1)}},
		"pxat in past": {{0, "SET k v", ok}, {10, fmt.Sprintf("SET k w PXAT %d", wall), ok}, {0, "GET k", nilb}},
		"exat": {{0, fmt.Sprintf("SET k v EXAT %d", (wall+5000)/1000), ok},
			{0, "PTTL k", num(5000)}, {0, "PEXPIRETIME k", num(wall + 5000)}, {0, "EXPIRETIME k", num((wall + 5000) / 1000)}},
		"invalid expire": {{0, "SET k v EX 0", "-ERR invalid expire time in 'set' command\r\n"},
			{0, "SET k v PX -1", "-ERR invalid expire time in 'set' command\r\n"},
			{0, "SET k v EX x", "-ERR value is not an integer or out of range\r\n"},
			{0, "SET k v PX 9223372036854775807", "-ERR invalid expire time in 'set' command\r\n"},
			{0, "SETEX k 0 v", "-ERR invalid expire time in 'setex' command\r\n"},
			{0, "EXISTS k", num(0)}},
		"syntax": {{0, "SET k v NX XX", "-ERR syntax error\r\n"}, {0, "SET k v EX 1 PX 1", "-ERR syntax error\r\n"},
			{0, "SET k v KEEPTTL EX 1", "-ERR syntax error\r\n"}, {0, "SET k v EX", "-ERR syntax error\r\n"},
			{0, "SET k v FOO", "-ERR syntax error\r\n"}, {0, "SET k v IFEQ a NX", "-ERR syntax error\r\n"},
			{0, "SET k v GET FENCE", "-ERR syntax error\r\n"}, {0, "EXISTS k", num(0)}},
		"setex psetex": {{0, "SETEX k 2 v", ok}, {0, "PTTL k", num(2000)}, {0, "PSETEX k 150 v", ok}, {0, "PTTL k", num(150)}},
		"ifeq ifne": {{0, "SET k a IFEQ a", nilb}, {0, "EXISTS k", num(0)}, {0, "SET k a IFNE a", ok},
			{0, "SET k b IFEQ x", nilb}, {0, "SET k b IFEQ a", ok}, {0, "SET k c IFNE b", nilb}, {0, "SET k c IFNE z GET", bulk("b")},
			{0, "GET k", bulk("c")}},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) { runSteps(t, steps) })
	}
}

func TestFencingTokens(t *testing.T) {
	h := newHarness(t)
	if got := h.do("SET a v FENCE"); got != num(1) {
		t.Fatalf("first SET FENCE = %q, want the entry's index 1", got)
	}
	h.do("SET b v")
	if got := h.do("SET a w NX FENCE"); got != nilb {
		t.Fatalf("SET NX FENCE on a held key = %q, want nil", got)
	}
	if got := h.read("FENCE a"); got != num(1) {
		t.Fatalf("FENCE a = %q, want 1", got)
	}
	if got := h.read("FENCE a IFEQ v"); got != num(1) {
		t.Fatalf("FENCE a IFEQ v = %q", got)
	}
	if got := h.read("FENCE a IFEQ w"); got != nilb {
		t.Fatalf("FENCE a IFEQ w = %q, want nil", got)
	}
	h.do("EXPIRE a 100") // a TTL change keeps the value and its token
	if got := h.read("FENCE a"); got != num(1) {
		t.Fatalf("FENCE after EXPIRE = %q, want 1", got)
	}
	if got := h.do("SET a x FENCE"); got != num(int64(h.index)) {
		t.Fatalf("overwrite token = %q, want %d", got, h.index)
	}
	h.do("INCR n")
	if got := h.read("FENCE n"); got != num(int64(h.index)) {
		t.Fatalf("FENCE after INCR = %q, want %d", got, h.index)
	}
	if got := h.read("FENCE missing"); got != nilb {
		t.Fatalf("FENCE missing = %q", got)
	}
}

func TestExpire(t *testing.T) {
	cases := map[string][]step{
		"missing":  {{0, "EXPIRE k 10", num(0)}, {0, "TTL k", num(-2)}},
		"basic":    {{0, "SET k v", ok}, {0, "TTL k", num(-1)}, {0, "EXPIRE k 10", num(1)}, {0, "TTL k", num(10)}, {0, "PERSIST k", num(1)}, {0, "PERSIST k", num(0)}, {0, "TTL k", num(-1)}},
		"past":     {{0, "SET k v", ok}, {0, "EXPIRE k -1", num(1)}, {0, "EXISTS k", num(0)}},
		"pexpire":  {{0, "SET k v", ok}, {0, "PEXPIRE k 1500", num(1)}, {0, "TTL k", num(2)}, {1000, "TTL k", num(1)}, {499, "PTTL k", num(1)}, {1, "PTTL k", num(-2)}},
		"expireat": {{0, "SET k v", ok}, {0, fmt.Sprintf("PEXPIREAT k %d", wall+700), num(1)}, {0, "PTTL k", num(700)}, {0, fmt.Sprintf("EXPIREAT k %d", wall/1000-1), num(1)}, {0, "EXISTS k", num(0)}},
		"nx xx": {{0, "SET k v", ok}, {0, "EXPIRE k 10 XX", num(0)}, {0, "EXPIRE k 10 NX", num(1)}, {0, "EXPIRE k 20 NX", num(0)},
			{0, "EXPIRE k 20 XX", num(1)}, {0, "TTL k", num(20)}},
		"gt lt": {{0, "SET k v", ok}, {0, "EXPIRE k 10 GT", num(0)}, {0, "EXPIRE k 10 LT", num(1)}, {0, "EXPIRE k 5 GT", num(0)},
			{0, "EXPIRE k 50 GT", num(1)}, {0, "EXPIRE k 60 LT", num(0)}, {0, "EXPIRE k 30 LT", num(1)}, {0, "TTL k", num(30)}},
		"bad options": {{0, "SET k v", ok}, {0, "EXPIRE k 10 NX XX", "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"},
			{0, "EXPIRE k 10 GT LT", "-ERR GT and LT options at the same time are not compatible\r\n"},
			{0, "EXPIRE k 10 FOO", "-ERR Unsupported option FOO\r\n"},
			{0, "EXPIRE k x", "-ERR value is not an integer or out of range\r\n"},
			{0, "EXPIRE k 9223372036854775807", "-ERR invalid expire time in 'expire' command\r\n"},
			{0, "TTL k", num(-1)}},
		"getex": {{0, "SET k v", ok}, {0, "GETEX k PX 500", bulk("v")}, {0, "PTTL k", num(500)}, {0, "GETEX k PERSIST", bulk("v")}, {0, "PTTL k", num(-1)},
			{0, fmt.Sprintf("GETEX k PXAT %d", wall-1), bulk("v")}, {0, "EXISTS k", num(0)}, {0, "GETEX k", nilb},
			// Redis checks the time only once it found the key.
			{0, "GETEX k EX 0", nilb}, {0, "GETEX k EX x", nilb}, {0, "SET k v", ok},
			{0, "GETEX k EX 0", "-ERR invalid expire time in 'getex' command\r\n"},
			{0, "GETEX k EX x", "-ERR value is not an integer or out of range\r\n"},
			{0, "GETEX k PERSIST EX 1", "-ERR syntax error\r\n"}, {0, "GETEX k PX 10 PX 20", bulk("v")}, {0, "PTTL k", num(20)}},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) { runSteps(t, steps) })
	}
}

func TestTickRemovesExpired(t *testing.T) {
	h := newHarness(t)
	h.do("SET a v PX 100")
	h.do("SET b v PX 200")
	h.do("SET c v")
	if d, ok := h.ks.NextDeadline(); !ok || d != 100 {
		t.Fatalf("NextDeadline = %d %v, want 100", d, ok)
	}
	h.now = 150
	if got := h.read("DBSIZE"); got != num(2) {
		t.Fatalf("DBSIZE before tick = %q, want 2 (expired keys are absent at once)", got)
	}
	h.tick()
	if h.ks.items.Len() != 2 {
		t.Fatalf("tick left %d items, want 2", h.ks.items.Len())
	}
	if d, ok := h.ks.NextDeadline(); !ok || d != 200 {
		t.Fatalf("NextDeadline after tick = %d %v, want 200", d, ok)
	}
}

func TestTickIsBounded(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < MaxExpirePerTick+10; i++ {
		h.do(fmt.Sprintf("SET k%d v PX 10", i))
	}
	h.now = 20
	if got := h.read("DBSIZE"); got != num(0) {
		t.Fatalf("DBSIZE = %q: expired keys must be absent before any tick", got)
	}
	h.tick()
	if n := h.ks.items.Len(); n != 10 {
		t.Fatalf("one tick left %d items, want 10", n)
	}
	h.tick()
	if n := h.ks.items.Len(); n != 0 {
		t.Fatalf("two ticks left %d items", n)
	}
}

func TestLogTimeNeverGoesBack(t *testing.T) {
	h := newHarness(t)
	h.now = 1000
	h.do("SET k v PX 500")
	// An entry stamped earlier (a new leader whose clock lags) does not move time back.
	h.index++
	h.ks.Apply(h.index, command.Entry{Kind: command.KindCommand, Time: 10, Wall: wall, Args: args("SET j v")})
	if h.ks.Now() != 1000 {
		t.Fatalf("Now = %d after an older stamp, want 1000", h.ks.Now())
	}
	if got := h.read("PTTL k"); got != num(500) {
		t.Fatalf("PTTL = %q, want 500", got)
	}
}

func TestStringCommands(t *testing.T) {
	cases := map[string][]step{
		"incr": {{0, "INCR n", num(1)}, {0, "INCRBY n 10", num(11)}, {0, "DECR n", num(10)}, {0, "DECRBY n 20", num(-10)},
			{0, "SET s abc", ok}, {0, "INCR s", "-ERR value is not an integer or out of range\r\n"},
			{0, "SET m 9223372036854775807", ok}, {0, "INCR m", "-ERR increment or decrement would overflow\r\n"},
			{0, "INCRBY n x", "-ERR value is not an integer or out of range\r\n"},
			{0, "DECRBY n -9223372036854775808", "-ERR decrement would overflow\r\n"},
			{0, "SET z 007", ok}, {0, "INCR z", "-ERR value is not an integer or out of range\r\n"}},
		"incr keeps ttl": {{0, "SET n 1 PX 1000", ok}, {0, "INCR n", num(2)}, {0, "PTTL n", num(1000)}},
		"mset mget": {{0, "MSET a 1 b 2", ok}, {0, "MGET a b c", "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"},
			{0, "MSETNX a 9 c 3", num(0)}, {0, "EXISTS c", num(0)}, {0, "MSETNX c 3 d 4", num(1)}, {0, "EXISTS a b c d a", num(5)}},
		"getrange": {{0, "SET s Hello", ok}, {0, "GETRANGE s 0 2", bulk("Hel")}, {0, "GETRANGE s -3 -1", bulk("llo")},
			{0, "GETRANGE s 10 20", bulk("")}, {0, "GETRANGE s -1 -5", bulk("")}, {0, "GETRANGE missing 0 -1", bulk("")},
			{0, "GETRANGE s 0 100", bulk("Hello")}},
		"getdel": {{0, "SET k v", ok}, {0, "GETDEL k", bulk("v")}, {0, "GETDEL k", nilb}},
		"del type": {{0, "MSET a 1 b 2", ok}, {0, "TYPE a", "+string\r\n"}, {0, "DEL a b c", num(2)}, {0, "TYPE a", "+none\r\n"},
			{0, "SET x 1", ok}, {0, "UNLINK x x", num(1)}},
		"delex": {{0, "SET k v", ok}, {0, "DELEX k IFEQ w", num(0)}, {0, "DELEX k IFNE v", num(0)}, {0, "DELEX k IFEQ v", num(1)},
			{0, "DELEX k", num(0)}, {0, "SET k v", ok}, {0, "DELEX k", num(1)}, {0, "DELEX k FOO v", "-ERR syntax error\r\n"}},
		"flushall": {{0, "MSET a 1 b 2", ok}, {0, "FLUSHALL", ok}, {0, "DBSIZE", num(0)}, {0, "FLUSHALL NOW", "-ERR syntax error\r\n"}},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) { runSteps(t, steps) })
	}
}

func TestHashes(t *testing.T) {
	cases := map[string][]step{
		"hset hget": {{0, "HSET h a 1 b 2", num(2)}, {0, "HSET h a 9 c 3", num(1)}, {0, "HGET h a", bulk("9")}, {0, "HGET h z", nilb},
			{0, "HGETALL h", "*6\r\n$1\r\na\r\n$1\r\n9\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
			{0, "HMGET h a z c", "*3\r\n$1\r\n9\r\n$-1\r\n$1\r\n3\r\n"}, {0, "HLEN h", num(3)}, {0, "TYPE h", "+hash\r\n"},
			{0, "HKEYS h", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"}, {0, "HEXISTS h b", num(1)}, {0, "HSET h a", "-ERR wrong number of arguments for 'hset' command\r\n"}},
		"hsetnx hdel": {{0, "HSETNX h a 1", num(1)}, {0, "HSETNX h a 2", num(0)}, {0, "HDEL h a z", num(1)}, {0, "EXISTS h", num(0)}, {0, "HDEL h a", num(0)}},
		"hincrby": {{0, "HINCRBY h n 5", num(5)}, {0, "HINCRBY h n -7", num(-2)}, {0, "HSET h s x", num(1)},
			{0, "HINCRBY h s 1", "-ERR hash value is not an integer\r\n"}, {0, "HINCRBY h n x", "-ERR value is not an integer or out of range\r\n"}},
		"wrongtype": {{0, "SET s v", ok}, {0, "HSET s a 1", "-" + string(command.ErrWrongType) + "\r\n"}, {0, "HSET h a 1", num(1)},
			{0, "GET h", "-" + string(command.ErrWrongType) + "\r\n"}, {0, "INCR h", "-" + string(command.ErrWrongType) + "\r\n"},
			{0, "SET h v GET", "-" + string(command.ErrWrongType) + "\r\n"}, {0, "SET h v", ok}, {0, "TYPE h", "+string\r\n"}},
		"ttl kept": {{0, "HSET h a 1", num(1)}, {0, "PEXPIRE h 100", num(1)}, {0, "HSET h b 2", num(1)}, {0, "PTTL h", num(100)}, {100, "HLEN h", num(0)}},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) { runSteps(t, steps) })
	}
}

func TestDigest(t *testing.T) {
	h := newHarness(t)
	h.do("SET k hello")
	d := h.read("DIGEST k")
	hex := strings.TrimSuffix(d[strings.Index(d, "\n")+1:], "\r\n")
	if len(hex) != 16 || strings.Trim(hex, "0123456789abcdef") != "" {
		t.Fatalf("DIGEST = %q, want 16 lower-case hex digits", d)
	}
	if got := h.do("SET k world IFDEQ 0000000000000000"); got != nilb {
		t.Fatalf("IFDEQ with a wrong digest = %q", got)
	}
	if got := h.do("DELEX k IFDEQ " + strings.ToUpper(hex)); got != num(1) {
		t.Fatalf("DELEX IFDEQ with the digest = %q", got)
	}
	if got := h.read("DIGEST k"); got != nilb {
		t.Fatalf("DIGEST of a missing key = %q", got)
	}
}

func TestKeysAndScan(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 500; i++ {
		h.do(fmt.Sprintf("SET key:%d v", i))
	}
	h.do("SET other v")
	h.do("SET gone v PX 1")
	h.now = 10
	got := h.read("KEYS key:1?")
	if n := strings.Count(got, "key:1"); n != 10 || !strings.HasPrefix(got, "*10\r\n") {
		t.Fatalf("KEYS key:1? = %q", got)
	}
	// A full scan returns every live key once; keys deleted mid-scan may or may
	// not appear; keys present throughout always do.
	seen := map[string]int{}
	cursor := "0"
	for round := 0; ; round++ {
		if round > 1000 {
			t.Fatal("scan did not finish")
		}
		op, _, err := command.Parse(args("SCAN " + cursor + " COUNT 7"))
		if err != nil {
			t.Fatal(err)
		}
		v := h.ks.Read(op, h.now, wall)
		for _, k := range v.Elems[1].Elems {
			seen[string(k.Str)]++
		}
		cursor = string(v.Elems[0].Str)
		if round == 3 {
			h.do("DEL key:0 key:1 key:2")
		}
		if cursor == "0" {
			break
		}
	}
	if seen["gone"] != 0 {
		t.Fatal("scan returned an expired key")
	}
	for i := 3; i < 500; i++ {
		if seen[fmt.Sprintf("key:%d", i)] != 1 {
			t.Fatalf("key:%d seen %d times", i, seen[fmt.Sprintf("key:%d", i)])
		}
	}
	if seen["other"] != 1 {
		t.Fatal("scan missed other")
	}
	if got := h.read("SCAN 0 MATCH oth* COUNT 1000"); !strings.Contains(got, "other") || strings.Contains(got, "key:") {
		t.Fatalf("SCAN MATCH = %q", got)
	}
	if got := h.read("SCAN 0 COUNT 1000 TYPE hash"); !strings.HasSuffix(got, "*0\r\n") {
		t.Fatalf("SCAN TYPE hash = %q", got)
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"*", "", false}, {"", "", true}, {"a*", "a", true}, {"a*b", "a", false}, {"a*", "abc", true}, {"a*c", "abc", true}, {"a*d", "abc", false},
		{"?", "a", true}, {"?", "", false}, {"h[ae]llo", "hallo", true}, {"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true}, {"h[b-a]llo", "hbllo", true}, {`h\*llo`, "h*llo", true}, {`h\*llo`, "hello", false},
		{"[abc", "a", true}, {"**a", "ba", true}, {`[\]]`, "]", true},
	}
	for _, c := range cases {
		if got := command.Match([]byte(c.p), []byte(c.s)); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

// TestDeterminism applies the same random entries to two keyspaces, one of which
// is snapshotted and restored halfway; every reply and the final snapshot bytes
// must be identical. The entries include slot moves (freeze, thaw, drop, the
// import of the last export), session attaches and shard maps.
func TestDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cmds := []string{"SET %s v%d", "SET %s v%d PX %d", "SET %s v%d NX FENCE", "DEL %s", "INCR %s", "EXPIRE %s %d",
		"GETDEL %s", "PERSIST %s", "SET %s v%d KEEPTTL", "GETEX %s PX %d", "DELEX %s IFEQ v%d", "MSET %s 1 k2 2",
		"HSET %s f%d x", "HINCRBY %s f%d %d", "HDEL %s f%d", "HSETNX %s f%d y",
		"LOCK.ACQUIRE %s o%d PX %d", "LOCK.ACQUIRE %s o%d SHARED", "LOCK.RELEASE %s %d", "LOCK.EXTEND %s %d %d",
		"SESSION.OPEN TTL %d", "LOCK.ACQUIRE %s o SESSION %d", "SESSION.CLOSE %d",
		"LOCK.ACQUIRE %s w%d WAIT %d", "LOCK.ACQUIRE %s r%d SHARED WAIT %d", "LOCK.ACQUIRE %s s%d LIMIT 2 WAIT %d",
		"LOCK.CANCEL %s %d", "LOCK.CANCEL %s %d RELEASE", "NAMESPACE.SET %s LOCKDELAY %d", "NAMESPACE.DEL %s"}
	a, b := New(), New()
	var now int64
	var export []byte // the last freeze's reply
	seen := map[string]int{}
	slotOf := func() uint16 { return shard.Slot([]byte("k" + strconv.Itoa(rng.IntN(40)))) }
	// randomCmd is one of cmds with random keys and numbers (at entry i).
	randomCmd := func(i int) [][]byte {
		c := cmds[rng.IntN(len(cmds))]
		key := "k" + strconv.Itoa(rng.IntN(40))
		var s string
		switch n := strings.Count(c, "%"); {
		case strings.HasPrefix(c, "SESSION"): // session ids are logical indexes
			s = fmt.Sprintf(c, rng.IntN(i)+1)
		case n == 1:
			s = fmt.Sprintf(c, key)
		case n == 2:
			s = fmt.Sprintf(c, key, rng.IntN(300)+1)
		default:
			s = fmt.Sprintf(c, key, rng.IntN(300)+1, rng.IntN(300)+1)
		}
		return args(s)
	}
	for i := 1; i <= 3000; i++ {
		now += int64(rng.IntN(20))
		kind := command.KindCommand
		var argv [][]byte
		switch rng.IntN(80) {
		case 0, 1, 2, 3:
			kind = command.KindTick
		case 4, 5:
			kind, argv = command.KindSessionExpire, command.SessionExpireArgs(uint64(rng.IntN(i)+1))
		case 6:
			s := slotOf()
			kind, argv = command.KindMigrate, command.MigrateArgs(command.MigrateFreeze, s, s+uint16(rng.IntN(2)))
		case 7, 8:
			s := slotOf()
			kind, argv = command.KindMigrate, command.MigrateArgs(command.MigrateThaw, s, s)
		case 9:
			if rng.IntN(3) == 0 {
				s := slotOf()
				kind, argv = command.KindMigrate, command.MigrateArgs(command.MigrateDrop, s, s)
			} else {
				kind, argv = command.KindNoop, nil
			}
		case 10:
			// The last export, as if another group with tokens ahead of
			// this one's had sent it: the import raises the token base.
			blob := export
			if ex, err := DecodeExport(export); err == nil {
				ex.MaxToken = uint64(i) + a.TokenBase() + uint64(rng.IntN(1000))
				blob = ex.Encode()
			}
			kind, argv = command.KindImport, command.ImportArgs(blob)
		case 11:
			kind, argv = command.KindSessionAttach, command.SessionAttachArgs(uint64(rng.IntN(i)+1), int64(rng.IntN(20000)+1))
		case 12:
			m, _ := shard.NewMap(rng.IntN(4) + 1)
			m.Version = uint64(rng.IntN(10))
			kind, argv = command.KindShardMap, command.ShardMapArgs(m.Encode())
		case 13, 14:
			// A batch entry: each command at a logical index of its own.
			var batch [][][]byte
			for range rng.IntN(4) + 2 {
				batch = append(batch, randomCmd(i))
			}
			kind, argv = command.KindBatch, command.BatchArgs(batch)
		default:
			argv = randomCmd(i)
		}
		e := command.Entry{Kind: kind, Time: now, Wall: wall + now, Args: argv}
		ra, rb := a.Apply(uint64(i), e), b.Apply(uint64(i), e)
		if ga, gb := resp.Append(nil, ra, 3), resp.Append(nil, rb, 3); !bytes.Equal(ga, gb) {
			t.Fatalf("entry %d %q: replies differ: %q vs %q", i, argv, ga, gb)
		}
		if kind == command.KindMigrate && string(argv[0]) == command.MigrateFreeze {
			export = append([]byte(nil), ra.Str...)
		}
		switch msg := ra.String(); {
		case strings.HasPrefix(msg, command.TryAgainPrefix):
			seen["tryagain"]++
		case strings.HasPrefix(msg, command.MovedPrefix):
			seen["moved"]++
		case kind == command.KindImport && msg == "OK":
			seen["import"]++
		}
		if wa, wb := fmt.Sprint(a.TakeWakes()), fmt.Sprint(b.TakeWakes()); wa != wb {
			t.Fatalf("entry %d %q: wakes differ: %s vs %s", i, argv, wa, wb)
		}
		if i == 1500 {
			var buf bytes.Buffer
			if _, err := b.Snapshot().WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			b = New()
			if err := b.Restore(&buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	var sa, sb bytes.Buffer
	a.Snapshot().WriteTo(&sa)
	b.Snapshot().WriteTo(&sb)
	if !bytes.Equal(sa.Bytes(), sb.Bytes()) {
		t.Fatal("final snapshots differ")
	}
	if a.items.Len() == 0 {
		t.Fatal("the random workload left no keys: the test checks nothing")
	}
	if a.TokenBase() == 0 || seen["tryagain"] == 0 || seen["moved"] == 0 || seen["import"] == 0 {
		t.Fatalf("slot moves are not exercised: base %d, replies %v", a.TokenBase(), seen)
	}
	t.Logf("base %d, replies %v", a.TokenBase(), seen)
}

func TestRestoreRejectsGarbage(t *testing.T) {
	if err := New().Restore(strings.NewReader("not a snapshot")); err == nil {
		t.Fatal("Restore accepted garbage")
	}
}

// FuzzApply feeds arbitrary argument vectors to two keyspaces: nothing panics and
// both give the same replies (the FSM is deterministic for any input). A line
// "!freeze a b", "!thaw a b" or "!drop a b" is a KindMigrate entry, "!import"
// imports the last freeze's export, "!attach id ttl" is a KindSessionAttach
// entry and "!map groups version" a KindShardMap entry; anything else after "!"
// is passed as the arguments of those kinds.
func FuzzApply(f *testing.F) {
	for _, s := range []string{"SET k v PX 10", "GETEX k EXAT 1", "EXPIRE k -5 GT", "SCAN 0 MATCH [a COUNT 2", "INCRBY k -9223372036854775808", "DELEX k IFDEQ 0",
		"LOCK.ACQUIRE {a}l o PX 50;!freeze 15495 15495;GET {a}l;!import;!drop 15495 15495;GET {a}l;LOCK.ACQUIRE {a}l o PX 50",
		"!attach 7 1000;LOCK.ACQUIRE l o SESSION 7;!map 3 2;!map 2 1;!thaw 0 16383"} {
		f.Add(s, int64(5))
	}
	f.Fuzz(func(t *testing.T, cmd string, dt int64) {
		a, b := New(), New()
		now := int64(0)
		var export []byte
		for i, line := range strings.Split(cmd, ";") {
			now += dt & 0xffff
			e := command.Entry{Kind: command.KindCommand, Time: now, Wall: wall + now, Args: args(line)}
			if len(e.Args) == 0 {
				e.Kind = command.KindTick
			} else if op, ok := strings.CutPrefix(string(e.Args[0]), "!"); ok {
				e.Args = e.Args[1:]
				switch op {
				case "freeze", "thaw", "drop":
					e.Kind, e.Args = command.KindMigrate, append([][]byte{[]byte(op)}, e.Args...)
				case "import":
					e.Kind, e.Args = command.KindImport, command.ImportArgs(export)
				case "attach":
					e.Kind = command.KindSessionAttach
				case "map":
					e.Kind = command.KindShardMap
					if len(e.Args) == 2 {
						n, _ := strconv.Atoi(string(e.Args[0]))
						v, _ := strconv.ParseUint(string(e.Args[1]), 10, 64)
						if m, err := shard.NewMap(n); err == nil {
							m.Version = v
							e.Args = command.ShardMapArgs(m.Encode())
						}
					}
				}
			}
			va := a.Apply(uint64(i+1), e)
			ra := resp.Append(nil, va, 3)
			rb := resp.Append(nil, b.Apply(uint64(i+1), e), 3)
			if !bytes.Equal(ra, rb) {
				t.Fatalf("%q: %q vs %q", line, ra, rb)
			}
			if e.Kind == command.KindMigrate && va.Kind == resp.KindBulk {
				export = va.Str
			}
		}
	})
}

func TestLocks(t *testing.T) {
	tok := func(h *harness) string { return num(int64(h.index)) }
	h := newHarness(t)
	// Exclusive: one holder; the same owner gets its grant back; others wait.
	if got := h.do("LOCK.ACQUIRE a w1 PX 1000"); got != tok(h) {
		t.Fatalf("first acquire = %q", got)
	}
	t1 := h.index
	if got := h.do("LOCK.ACQUIRE a w2 PX 1000"); got != nilb {
		t.Fatalf("acquire while held = %q", got)
	}
	if got := h.do("LOCK.ACQUIRE a w1 PX 1000"); got != num(int64(t1)) {
		t.Fatalf("idempotent re-acquire = %q, want the same token %d", got, t1)
	}
	if got := h.read(fmt.Sprintf("LOCK.VALIDATE a %d", t1)); got != num(1) {
		t.Fatalf("validate = %q", got)
	}
	if got := h.do(fmt.Sprintf("LOCK.RELEASE a %d", t1+100)); got != num(0) {
		t.Fatalf("release with a wrong token = %q", got)
	}
	if got := h.read("TYPE a"); got != "+lock\r\n" {
		t.Fatalf("TYPE = %q", got)
	}
	if got := h.read("GET a"); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatalf("GET on a lock = %q", got)
	}
	// Extend, then expiry frees it and the next grant has a larger token.
	h.now += 900
	if got := h.do(fmt.Sprintf("LOCK.EXTEND a %d 1000", t1)); got != num(1) {
		t.Fatalf("extend = %q", got)
	}
	h.now += 500
	if got := h.do("LOCK.ACQUIRE a w2 PX 1000"); got != nilb {
		t.Fatalf("acquire before the extended lease ends = %q", got)
	}
	h.now += 600
	if got := h.read(fmt.Sprintf("LOCK.VALIDATE a %d", t1)); got != num(0) {
		t.Fatalf("validate after expiry = %q", got)
	}
	if got := h.do("LOCK.ACQUIRE a w2 PX 1000"); got != tok(h) || h.index <= t1 {
		t.Fatalf("acquire after expiry = %q", got)
	}
	t2 := h.index
	if got := h.do(fmt.Sprintf("LOCK.EXTEND a %d 1000", t1)); got != num(0) {
		t.Fatalf("extend by the expired holder = %q", got)
	}
	if got := h.do(fmt.Sprintf("LOCK.RELEASE a %d", t2)); got != num(1) {
		t.Fatalf("release = %q", got)
	}
	if got := h.read("EXISTS a"); got != num(0) {
		t.Fatalf("released lock still exists: %q", got)
	}

	// Re-entrant: counted, released as many times.
	h.do("LOCK.ACQUIRE r w1 REENTRANT")
	tr := h.index
	h.do("LOCK.ACQUIRE r w1 REENTRANT")
	h.do(fmt.Sprintf("LOCK.RELEASE r %d", tr))
	if got := h.read(fmt.Sprintf("LOCK.VALIDATE r %d", tr)); got != num(1) {
		t.Fatalf("re-entrant lock released after one of two releases: %q", got)
	}
	h.do(fmt.Sprintf("LOCK.RELEASE r %d", tr))
	if got := h.read(fmt.Sprintf("LOCK.VALIDATE r %d", tr)); got != num(0) {
		t.Fatalf("re-entrant lock still held after two releases: %q", got)
	}

	// Shared readers each get a token; an exclusive request is refused meanwhile.
	h.do("LOCK.ACQUIRE s r1 SHARED")
	h.do("LOCK.ACQUIRE s r2 SHARED")
	if got := h.do("LOCK.ACQUIRE s w EXCLUSIVE"); !strings.HasPrefix(got, "-ERR syntax") {
		t.Fatalf("unknown option = %q", got)
	}
	if got := h.do("LOCK.ACQUIRE s w"); got != nilb {
		t.Fatalf("writer while readers hold = %q", got)
	}
	if got := h.read("LOCK.INFO s"); !strings.Contains(got, "shared") || strings.Count(got, "owner") != 2 {
		t.Fatalf("LOCK.INFO = %q", got)
	}

	// Semaphore of 2.
	h.do("LOCK.ACQUIRE m a LIMIT 2")
	h.do("LOCK.ACQUIRE m b LIMIT 2")
	if got := h.do("LOCK.ACQUIRE m c LIMIT 2"); got != nilb {
		t.Fatalf("third holder of a 2-semaphore = %q", got)
	}
	if got := h.do("LOCK.ACQUIRE m c LIMIT 3"); !strings.HasPrefix(got, "-ERR LIMIT") {
		t.Fatalf("limit mismatch = %q", got)
	}

	// Bad input changes nothing.
	for _, bad := range []string{"LOCK.ACQUIRE x", "LOCK.ACQUIRE x o PX 0", "LOCK.ACQUIRE x o PX y", "LOCK.ACQUIRE x o LIMIT 0",
		"LOCK.ACQUIRE x o SHARED LIMIT 2", "LOCK.ACQUIRE x o WAIT -1", "LOCK.ACQUIRE x o WAIT 3600001", "LOCK.RELEASE x abc", "LOCK.EXTEND x 1 0"} {
		if got := h.do(bad); !strings.HasPrefix(got, "-ERR") {
			t.Errorf("%s = %q, want an error", bad, got)
		}
	}
	if got := h.read("EXISTS x"); got != num(0) {
		t.Fatalf("bad input created x: %q", got)
	}

	// The records survive a snapshot.
	var buf bytes.Buffer
	h.ks.Snapshot().WriteTo(&buf)
	ks := New()
	if err := ks.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	op, _, _ := command.Parse(args("LOCK.INFO s"))
	if got := string(resp.Append(nil, ks.Read(op, h.now, wall+h.now), 2)); got != h.read("LOCK.INFO s") {
		t.Fatalf("LOCK.INFO after restore = %q", got)
	}
}

// A lock held by a session has no TTL of its own: PTTL and PEXPIRETIME answer
// -1 and PERSIST 0, as for any key without one, and it gives the expiry loop
// no deadline; a lease beside it does.
func TestSessionLockHasNoDeadline(t *testing.T) {
	h := newHarness(t)
	h.do("SESSION.OPEN TTL 10000") // session id: this entry's index, 1
	if got := h.do("LOCK.ACQUIRE s owner SESSION 1"); !strings.HasPrefix(got, ":") {
		t.Fatalf("LOCK.ACQUIRE on the session: %q", got)
	}
	for _, c := range []string{"PTTL s", "PEXPIRETIME s", "TTL s"} {
		if got := h.read(c); got != ":-1\r\n" {
			t.Errorf("%s of a session-held lock = %q, want :-1", c, got)
		}
	}
	if d, ok := h.ks.NextDeadline(); ok {
		t.Errorf("NextDeadline with only a session-held lock = %d, want none", d)
	}
	if got := h.do("PERSIST s"); got != ":0\r\n" {
		t.Errorf("PERSIST of a session-held lock = %q, want :0 (it has no TTL to remove)", got)
	}
	h.do("LOCK.ACQUIRE l owner PX 5000")
	if d, ok := h.ks.NextDeadline(); !ok || d != h.now+5000 {
		t.Errorf("NextDeadline with a lease beside it = %d %v, want %d", d, ok, h.now+5000)
	}
}

// A session that takes and frees many names keeps a short list: about twice
// the names it holds, not every name it ever took; closing it still frees
// every lock it holds, the oldest included.
func TestSessionListStaysShort(t *testing.T) {
	h := newHarness(t)
	h.do("SESSION.OPEN TTL 60000") // session 1
	if got := h.do("LOCK.ACQUIRE keep owner SESSION 1"); !strings.HasPrefix(got, ":") {
		t.Fatalf("LOCK.ACQUIRE keep: %q", got)
	}
	for i := range 50 {
		h.do(fmt.Sprintf("LOCK.ACQUIRE held:%d owner SESSION 1", i))
	}
	for i := range 5000 {
		got := h.do(fmt.Sprintf("LOCK.ACQUIRE churn:%d owner SESSION 1", i))
		token := strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n")
		if got := h.do(fmt.Sprintf("LOCK.RELEASE churn:%d %s", i, token)); got != ":1\r\n" {
			t.Fatalf("LOCK.RELEASE churn:%d: %q", i, got)
		}
	}
	if n := len(h.ks.sessions[1].locks); n > 2*51+4 {
		t.Errorf("the session's list holds %d names after 5000 taken and freed, 51 held", n)
	}
	if got := h.do("SESSION.CLOSE 1"); got != ":51\r\n" {
		t.Errorf("SESSION.CLOSE = %q, want :51 (every held lock)", got)
	}
	for _, name := range []string{"keep", "held:0", "held:49"} {
		if got := h.read("EXISTS " + name); got != ":0\r\n" {
			t.Errorf("%s after SESSION.CLOSE: EXISTS = %q", name, got)
		}
	}
}

// PEXPIRE and PERSIST on a held lock's name change the key's TTL, never the
// holder's lease: the lease still ends when LOCK.ACQUIRE said, and another
// owner is granted then (a plain record takes its holder's lease from its
// item, so changing the item's deadline must move the lease aside first).
func TestExpireKeepsLease(t *testing.T) {
	runSteps(t, []step{
		{0, "LOCK.ACQUIRE l a PX 1000", num(1)},
		{0, "PEXPIRE l 5000", num(1)},
		{0, "PTTL l", num(5000)},
		{999, "LOCK.ACQUIRE l b PX 1000", nilb},
		{1, "LOCK.ACQUIRE l b PX 1000", num(5)},
		{0, "PERSIST l", num(1)},
		{0, "LOCK.RELEASE l 5", num(1)},
	})
}
