package fsm

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

func TestZSetCommands(t *testing.T) {
	runSteps(t, []step{
		{cmd: "ZADD z 1 a 2 b 3 c", want: num(3)},
		{cmd: "ZADD z CH 5 a 2 b 4 d", want: num(2)},
		{cmd: "ZRANGE z 0 -1", want: "*4\r\n" + bulk("b") + bulk("c") + bulk("d") + bulk("a")},
		{cmd: "ZRANGE z 0 -1 WITHSCORES", want: "*8\r\n" + bulk("b") + bulk("2") + bulk("c") + bulk("3") + bulk("d") + bulk("4") + bulk("a") + bulk("5")},
		{cmd: "ZRANK z a", want: num(3)},
		{cmd: "ZREVRANK z a", want: num(0)},
		{cmd: "ZINCRBY z 0.1 b", want: bulk("2.1000000000000001")},
		{cmd: "ZCOUNT z (2.1 4", want: num(2)},
		{cmd: "ZRANGEBYSCORE z -inf +inf LIMIT 1 2", want: "*2\r\n" + bulk("c") + bulk("d")},
		{cmd: "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2", want: "*2\r\n" + bulk("d") + bulk("c")},
		{cmd: "ZPOPMIN z", want: "*2\r\n" + bulk("b") + bulk("2.1000000000000001")},
		{cmd: "ZREMRANGEBYRANK z 0 0", want: num(1)},
		{cmd: "TYPE z", want: "+zset\r\n"},
		{cmd: "GET z", want: "-" + string(command.ErrWrongType) + "\r\n"},
		{cmd: "HSET z f v", want: "-" + string(command.ErrWrongType) + "\r\n"},
		{cmd: "SET s v", want: ok},
		{cmd: "ZADD s 1 a", want: "-" + string(command.ErrWrongType) + "\r\n"},
		{cmd: "ZREM z a d", want: num(2)},
		{cmd: "EXISTS z", want: num(0)},
		{cmd: "ZADD z XX INCR 1 a", want: nilb},
		{cmd: "EXISTS z", want: num(0)},
		{cmd: "ZADD z 0 a 0 b 0 c", want: num(3)},
		{cmd: "ZRANGEBYLEX z (a +", want: "*2\r\n" + bulk("b") + bulk("c")},
		{cmd: "ZLEXCOUNT z [b +", want: num(2)},
		{cmd: "ZREMRANGEBYLEX z - (c", want: num(2)},
		{cmd: "ZADD z inf x", want: num(1)},
		{cmd: "ZINCRBY z -inf x", want: "-" + string(command.ErrScoreNaN) + "\r\n"},
		{cmd: "ZSCAN z 0", want: "*2\r\n" + bulk("0") + "*4\r\n" + bulk("c") + bulk("0") + bulk("x") + bulk("inf")},
	})
}

// TestZSetTTLKept: a write keeps the key's TTL, as in Redis.
func TestZSetTTLKept(t *testing.T) {
	runSteps(t, []step{
		{cmd: "ZADD z 1 a 2 b", want: num(2)},
		{cmd: "PEXPIRE z 1000", want: num(1)},
		{cmd: "ZADD z 3 c", want: num(1)},
		{cmd: "ZREM z a", want: num(1)},
		{cmd: "ZPOPMAX z", want: "*2\r\n" + bulk("c") + bulk("3")},
		{cmd: "PTTL z", want: num(1000)},
		{advance: 1000, cmd: "EXISTS z", want: num(0)},
		{cmd: "ZCARD z", want: num(0)},
	})
}

// TestZSetWritesDoNotChangeSnapshots: a snapshot taken before writes to a
// big sorted set still writes out the set as it was (the set in the trees is
// never changed in place).
func TestZSetWritesDoNotChangeSnapshots(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 2000; i++ {
		h.do(fmt.Sprintf("ZADD z %d m%d", i, i))
	}
	h.do("PEXPIRE z 100000")
	want := h.read("ZRANGE z 0 -1 WITHSCORES")
	snap := h.ks.Snapshot()
	h.do("ZADD z -1 new 5000 m3")
	h.do("ZREM z m1 m2")
	h.do("ZPOPMAX z 10")
	h.do("ZREMRANGEBYRANK z 100 200")
	h.do("ZREMRANGEBYSCORE z 300 400")
	if h.read("ZRANGE z 0 -1 WITHSCORES") == want {
		t.Fatal("the writes changed nothing")
	}
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := newHarness(t)
	if err := r.ks.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	r.now = h.now
	if got := r.read("ZRANGE z 0 -1 WITHSCORES"); got != want {
		t.Fatalf("restored snapshot differs from the set when it was taken")
	}
	if got := r.read("PTTL z"); got != num(100000) {
		t.Fatalf("PTTL after restore: %q", got)
	}
	if got := r.read("TYPE z"); got != "+zset\r\n" {
		t.Fatalf("TYPE after restore: %q", got)
	}
}

func TestZSetSnapshotKeepsScoresExactly(t *testing.T) {
	h := newHarness(t)
	h.do("ZADD z -0 nz 5e-324 tiny -inf ninf inf pinf 0.1 a 1e300 big")
	var buf bytes.Buffer
	if _, err := h.ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := newHarness(t)
	if err := r.ks.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	a, _ := h.ks.zsetOf([]byte("z"), 0)
	b, _ := r.ks.zsetOf([]byte("z"), 0)
	if a == nil || b == nil || !a.coll.zset.equal(b.coll.zset) {
		t.Fatal("restored set differs")
	}
	if got := r.read("ZSCORE z nz"); got != bulk("0") { // stored as 0, as a listpack stores it
		t.Fatalf("ZSCORE of -0 after restore: %q", got)
	}
}

func TestZSetExportCodec(t *testing.T) {
	ex := &Export{From: 1, To: 2, MaxToken: 10, Items: []ExportItem{
		{Key: []byte("z"), Kind: KindZSet, Token: 3, TTL: 50, Members: []ZMember{
			{Name: []byte("a"), Score: math.Inf(-1)}, {Name: []byte(""), Score: math.Copysign(0, -1)}, {Name: []byte("b\x00"), Score: 2.5}}},
	}}
	got, err := DecodeExport(ex.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 1 || len(got.Items[0].Members) != 3 || got.Items[0].Kind != KindZSet {
		t.Fatalf("decoded %+v", got)
	}
	for i, m := range got.Items[0].Members {
		w := ex.Items[0].Members[i]
		if !bytes.Equal(m.Name, w.Name) || math.Float64bits(m.Score) != math.Float64bits(w.Score) {
			t.Fatalf("member %d: %+v, want %+v", i, m, w)
		}
	}
	for _, bad := range [][]ZMember{nil, {{Name: []byte("a"), Score: math.NaN()}}, {{Name: []byte("a")}, {Name: []byte("a"), Score: 1}}} {
		ex.Items[0].Members = bad
		if _, err := DecodeExport(ex.Encode()); err == nil {
			t.Errorf("export with members %v decoded", bad)
		}
	}
}

// TestZSetExportImport moves a sorted set to another keyspace through the
// slot-move path and reads it back.
func TestZSetExportImport(t *testing.T) {
	h := newHarness(t)
	h.do("ZADD z 1 a 2 b 2.5 c")
	it, _ := h.ks.zsetOf([]byte("z"), 0)
	x := h.ks.export(0, 16383, Ctx{Now: h.now})
	if len(x.Items) != 1 || len(x.Items[0].Members) != 3 {
		t.Fatalf("export: %+v", x.Items)
	}
	z, ok := importZSet(x.Items[0].Members)
	if !ok || !z.equal(it.coll.zset) {
		t.Fatal("imported set differs")
	}
}

// TestZPop is the pop the blocking BZPOPMIN/BZPOPMAX use.
func TestZPop(t *testing.T) {
	h := newHarness(t)
	h.do("ZADD z 1 a 2 b 3 c")
	c := Ctx{Index: 100, Now: h.now, Write: true}
	got, ok := h.ks.zpop([]byte("z"), true, 2, c)
	if !ok || len(got) != 2 || got[0].name != "c" || got[1].name != "b" {
		t.Fatalf("zpop max 2: %v %v", got, ok)
	}
	got, ok = h.ks.zpop([]byte("z"), false, 5, c)
	if !ok || len(got) != 1 || got[0].name != "a" || got[0].score != 1 {
		t.Fatalf("zpop min 5: %v %v", got, ok)
	}
	if h.read("EXISTS z") != num(0) {
		t.Fatal("emptied set not deleted")
	}
	if _, ok := h.ks.zpop([]byte("z"), false, 1, c); ok {
		t.Fatal("pop from a missing key")
	}
	h.do("SET s v")
	if _, ok := h.ks.zpop([]byte("s"), false, 1, c); ok {
		t.Fatal("pop from a string")
	}
}

// TestZSetAgainstModel runs random writes against a big set and a naive
// model (a sorted slice) and compares ranks, ranges and counts.
func TestZSetAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	h := newHarness(t)
	model := map[string]float64{}
	sorted := func() []string {
		var names []string
		for n := range model {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			a, b := names[i], names[j]
			if model[a] != model[b] {
				return model[a] < model[b]
			}
			return a < b
		})
		return names
	}
	for i := 0; i < 3000; i++ {
		name := "m" + strconv.Itoa(rng.IntN(700))
		score := float64(rng.IntN(50))
		switch rng.IntN(10) {
		case 0, 1, 2, 3, 4:
			h.do(fmt.Sprintf("ZADD z %v %s", score, name))
			model[name] = score
		case 5:
			h.do("ZINCRBY z 1 " + name)
			model[name]++
		case 6, 7:
			h.do("ZREM z " + name)
			delete(model, name)
		case 8:
			if got := h.do("ZPOPMIN z"); len(model) > 0 {
				first := sorted()[0]
				if want := "*2\r\n" + bulk(first) + bulk(strconv.FormatFloat(model[first], 'g', 17, 64)); got != want {
					t.Fatalf("step %d ZPOPMIN: %q, want %q", i, got, want)
				}
				delete(model, first)
			}
		case 9:
			lo := rng.IntN(50)
			names := sorted()
			n := 0
			for _, m := range names {
				if model[m] >= float64(lo) && model[m] <= float64(lo+3) {
					delete(model, m)
					n++
				}
			}
			if got := h.do(fmt.Sprintf("ZREMRANGEBYSCORE z %d %d", lo, lo+3)); got != num(int64(n)) {
				t.Fatalf("step %d ZREMRANGEBYSCORE: %q, want %d", i, got, n)
			}
		}
		if i%100 != 0 {
			continue
		}
		names := sorted()
		var want []resp.Value
		for _, n := range names {
			want = append(want, resp.BulkString(n))
		}
		if got := h.read("ZRANGE z 0 -1"); got != string(resp.Append(nil, resp.Array(want...), 2)) {
			t.Fatalf("step %d: ZRANGE differs from the model", i)
		}
		for j, n := range names {
			if j%37 == 0 {
				if got := h.read("ZRANK z " + n); got != num(int64(j)) {
					t.Fatalf("step %d: ZRANK %s = %q, want %d", i, n, got, j)
				}
			}
		}
		c := 0
		for _, n := range names {
			if model[n] > 10 && model[n] <= 20 {
				c++
			}
		}
		if got := h.read("ZCOUNT z (10 20"); got != num(int64(c)) {
			t.Fatalf("step %d: ZCOUNT = %q, want %d", i, got, c)
		}
	}
}

// TestZSetHostileRanges: huge ranks, offsets and counts are answered without
// walking or allocating beyond the set.
func TestZSetHostileRanges(t *testing.T) {
	h := newHarness(t)
	h.do("ZADD z 1 a 2 b 3 c")
	all := "*3\r\n" + bulk("a") + bulk("b") + bulk("c")
	for _, c := range [][2]string{
		{"ZRANGE z -9223372036854775808 9223372036854775807", all},
		{"ZRANGE z -inf +inf BYSCORE LIMIT 9223372036854775807 1", "*0\r\n"},
		{"ZRANGE z -inf +inf BYSCORE LIMIT 1 9223372036854775807", "*2\r\n" + bulk("b") + bulk("c")},
		{"ZRANGE z +inf -inf BYSCORE REV LIMIT 2 -5", "*1\r\n" + bulk("a")},
		{"ZREMRANGEBYRANK z 9223372036854775807 -9223372036854775808", num(0)},
		// A small set is returned whole, whatever the cursor (a listpack in Redis).
		{"ZSCAN z 18446744073709551615 COUNT 9223372036854775807", "*2\r\n" + bulk("0") + "*6\r\n" + bulk("a") + bulk("1") + bulk("b") + bulk("2") + bulk("c") + bulk("3")},
		{"ZPOPMIN z 9223372036854775807", "*6\r\n" + bulk("a") + bulk("1") + bulk("b") + bulk("2") + bulk("c") + bulk("3")},
	} {
		if got := h.do(c[0]); got != c[1] {
			t.Errorf("%s: %q, want %q", c[0], got, c[1])
		}
	}
}

// TestZScanBigSet: a set too big for a listpack is scanned with a cursor,
// every member exactly once when nothing changes meanwhile.
func TestZScanBigSet(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 500; i++ {
		h.do(fmt.Sprintf("ZADD z %d m%d", i, i))
	}
	seen := map[string]int{}
	cursor := "0"
	for n := 0; ; n++ {
		if n > 1000 {
			t.Fatal("scan does not end")
		}
		v := h.ks.Read(mustParse(t, "ZSCAN z "+cursor+" COUNT 7"), h.now, wall+h.now)
		cursor = string(v.Elems[0].Str)
		for i := 0; i < len(v.Elems[1].Elems); i += 2 {
			seen[string(v.Elems[1].Elems[i].Str)]++
		}
		if cursor == "0" {
			break
		}
	}
	if len(seen) != 500 {
		t.Fatalf("scan saw %d members", len(seen))
	}
	for m, n := range seen {
		if n != 1 {
			t.Fatalf("%s seen %d times", m, n)
		}
	}
}

func mustParse(t *testing.T, cmd string) command.Op {
	op, _, err := command.Parse(args(cmd))
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestZScanScore(t *testing.T) {
	for f, want := range map[float64]string{1: "1", -3: "-3", 2.5: "2.5", 1e17: "100000000000000000",
		1e300: "1.0000000000000001e+300", math.Inf(1): "inf", math.Copysign(0, -1): "-0", 0.1: "0.10000000000000001"} {
		if got := zscanScore(f); got != want {
			t.Errorf("zscanScore(%v) = %q, want %q", f, got, want)
		}
	}
}

// The sorted-set rows' sample requests for TestEveryKeyspaceRowHasAnExecutor.
func init() {
	for name, sample := range map[string]string{
		"zadd": "ZADD z 1 a", "zincrby": "ZINCRBY z 1 a", "zrem": "ZREM z b", "zcard": "ZCARD z",
		"zscore": "ZSCORE z a", "zmscore": "ZMSCORE z a b", "zrank": "ZRANK z a", "zrevrank": "ZREVRANK z a",
		"zrange": "ZRANGE z 0 -1", "zrevrange": "ZREVRANGE z 0 -1", "zrangebyscore": "ZRANGEBYSCORE z -inf +inf",
		"zrevrangebyscore": "ZREVRANGEBYSCORE z +inf -inf", "zrangebylex": "ZRANGEBYLEX z - +",
		"zrevrangebylex": "ZREVRANGEBYLEX z + -", "zcount": "ZCOUNT z 0 1", "zlexcount": "ZLEXCOUNT z - +",
		"zremrangebyrank": "ZREMRANGEBYRANK z 5 6", "zremrangebyscore": "ZREMRANGEBYSCORE z 5 6",
		"zremrangebylex": "ZREMRANGEBYLEX z [x [y", "zpopmin": "ZPOPMIN z 0", "zpopmax": "ZPOPMAX z 0",
		"zscan": "ZSCAN z 0",
	} {
		rowSamples[name] = sample
	}
}

// TestZSetSnapshotWhileWriting writes a snapshot while sorted-set writes
// go on (run with -race: the set in the trees is never written).
func TestZSetSnapshotWhileWriting(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 500; i++ {
		h.do(fmt.Sprintf("ZADD z %d m%d", i, i))
	}
	snap := h.ks.Snapshot()
	done := make(chan error, 1)
	go func() {
		var buf bytes.Buffer
		_, err := snap.WriteTo(&buf)
		done <- err
	}()
	for i := 0; i < 300; i++ {
		h.do(fmt.Sprintf("ZADD z %d m%d", -i, i))
		h.do(fmt.Sprintf("ZREM z m%d", 499-i))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
