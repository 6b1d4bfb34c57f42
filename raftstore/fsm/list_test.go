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
)

// popWakes returns the blocked pops' wakes since the last call as
// "id:reply" strings (the reply in RESP2), "id:moved" for a move.
func (h *harness) popWakes() string {
	var out []string
	for _, w := range h.ks.TakeWakes() {
		switch {
		case !w.Pop:
			out = append(out, fmt.Sprintf("lock %d=%d", w.Waiter, w.Token))
		case w.Moved:
			out = append(out, fmt.Sprintf("%d:moved", w.Waiter))
		default:
			out = append(out, fmt.Sprintf("%d:%q", w.Waiter, resp.Append(nil, *w.Reply, 2)))
		}
	}
	return strings.Join(out, " ")
}

func TestListBasics(t *testing.T) {
	runSteps(t, []step{
		{cmd: "RPUSH l a b c", want: ":3\r\n"},
		{cmd: "LPUSH l z", want: ":4\r\n"},
		{cmd: "LRANGE l 0 -1", want: "*4\r\n" + bulk("z") + bulk("a") + bulk("b") + bulk("c")},
		{cmd: "LINSERT l BEFORE b x", want: ":5\r\n"},
		{cmd: "LINSERT l AFTER c y", want: ":6\r\n"},
		{cmd: "LRANGE l 0 -1", want: "*6\r\n" + bulk("z") + bulk("a") + bulk("x") + bulk("b") + bulk("c") + bulk("y")},
		{cmd: "LREM l 0 x", want: ":1\r\n"},
		{cmd: "LINSERT l AFTER a x2", want: ":6\r\n"},
		{cmd: "LINDEX l 2", want: bulk("x2")},
		{cmd: "LTRIM l 1 -2", want: "+OK\r\n"},
		{cmd: "LRANGE l 0 -1", want: "*4\r\n" + bulk("a") + bulk("x2") + bulk("b") + bulk("c")},
		{cmd: "LPOP l 10", want: "*4\r\n" + bulk("a") + bulk("x2") + bulk("b") + bulk("c")},
		{cmd: "EXISTS l", want: ":0\r\n"},
		{cmd: "SET s v", want: "+OK\r\n"},
		{cmd: "LPUSH s a", want: "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{cmd: "TYPE s", want: "+string\r\n"},
	})
}

// TestListMatchesSlice applies random list writes and checks every list
// against a plain slice model: positions, gaps and shifts stay invisible.
func TestListMatchesSlice(t *testing.T) {
	h := newHarness(t)
	r := rand.New(rand.NewPCG(7, 7))
	var model []string
	for i := 0; i < 3000; i++ {
		v := strconv.Itoa(r.IntN(8))
		switch r.IntN(7) {
		case 0:
			h.do("LPUSH l " + v)
			model = append([]string{v}, model...)
		case 1:
			h.do("RPUSH l " + v)
			model = append(model, v)
		case 2:
			if len(model) > 0 {
				p := model[r.IntN(len(model))]
				before := r.IntN(2) == 0
				where := "AFTER"
				if before {
					where = "BEFORE"
				}
				h.do("LINSERT l " + where + " " + p + " " + v)
				j := indexOf(model, p)
				if !before {
					j++
				}
				model = append(model[:j], append([]string{v}, model[j:]...)...)
			}
		case 3:
			n := r.IntN(3) - 1
			h.do(fmt.Sprintf("LREM l %d %s", n, v))
			model = lrem(model, n, v)
		case 4:
			if len(model) > 0 {
				h.do("LPOP l")
				model = model[1:]
			}
		case 5:
			if len(model) > 0 {
				j := r.IntN(len(model))
				h.do(fmt.Sprintf("LSET l %d %s", j, v))
				model[j] = v
			}
		case 6:
			if len(model) > 10 {
				h.do("LTRIM l 1 -2")
				model = model[1 : len(model)-1]
			}
		}
		want := "*" + strconv.Itoa(len(model)) + "\r\n"
		for _, m := range model {
			want += bulk(m)
		}
		if got := h.read("LRANGE l 0 -1"); got != want {
			t.Fatalf("step %d: LRANGE = %q, want %q", i, got, want)
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func lrem(s []string, n int, v string) []string {
	var out []string
	removed := 0
	if n >= 0 {
		for _, x := range s {
			if x == v && (n == 0 || removed < n) {
				removed++
				continue
			}
			out = append(out, x)
		}
		return out
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v && removed < -n {
			removed++
			continue
		}
		out = append([]string{s[i]}, out...)
	}
	return out
}

// A stored list never changes: an old item (a snapshot's) keeps its elements.
func TestListCopyOnWrite(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 200; i++ {
		h.do("RPUSH l " + strconv.Itoa(i))
	}
	old := h.ks.lookup([]byte("l"), h.now)
	before := old.coll.list.elems(0, old.coll.list.len()-1, false)
	h.do("LSET l 5 x")
	h.do("LPOP l 50")
	h.do("LINSERT l BEFORE 100 y")
	h.do("LTRIM l 0 10")
	after := old.coll.list.elems(0, old.coll.list.len()-1, false)
	if len(before) != 200 || len(after) != 200 {
		t.Fatalf("old list changed length: %d", len(after))
	}
	for i := range before {
		if !bytes.Equal(before[i].Str, after[i].Str) || string(after[i].Str) != strconv.Itoa(i) {
			t.Fatalf("old list changed at %d: %q", i, after[i].Str)
		}
	}
}

func TestBlockedPopsFIFO(t *testing.T) {
	h := newHarness(t)
	w1 := h.queued("BLPOP q 0")
	w2 := h.queued("BRPOP other q 0")
	w3 := h.queued("BLMPOP 0 1 q LEFT COUNT 2")
	if got := h.do("RPUSH q a b c d e"); got != ":5\r\n" {
		t.Fatalf("RPUSH = %q (the push counts before the pops)", got)
	}
	want := fmt.Sprintf("%d:%q %d:%q %d:%q", w1, "*2\r\n"+bulk("q")+bulk("a"), w2, "*2\r\n"+bulk("q")+bulk("e"),
		w3, "*2\r\n"+bulk("q")+"*2\r\n"+bulk("b")+bulk("c"))
	if got := h.popWakes(); got != want {
		t.Fatalf("wakes = %s\nwant    %s", got, want)
	}
	if got := h.read("LRANGE q 0 -1"); got != "*1\r\n"+bulk("d") {
		t.Fatalf("left %q", got)
	}
	if h.ks.PopWaiters() != 0 {
		t.Fatalf("%d waiters left", h.ks.PopWaiters())
	}
}

func TestBlockedPopTimeoutCancelAndTypes(t *testing.T) {
	h := newHarness(t)
	w1 := h.queued("BLPOP q 1")
	h.queued("POP.WAIT tag2 BLPOP q 0")
	h.now += 1002
	if d, ok := h.ks.NextDeadline(); !ok || d > h.now {
		t.Fatalf("NextDeadline = %d %v", d, ok)
	}
	h.tick()
	if got, want := h.popWakes(), fmt.Sprintf("%d:%q", w1, "*-1\r\n"); got != want {
		t.Fatalf("tick wakes %s, want %s", got, want)
	}
	h.do("SET q v") // another type: the waiter stays (Redis 7.0)
	h.do("DEL q")
	if got := h.do("POP.CANCEL q tag2"); got != ":1\r\n" {
		t.Fatalf("cancel = %q", got)
	}
	if w := h.ks.TakeWakes(); len(w) != 1 || !w[0].Cancel || w[0].Tag != "tag2" || w[0].Reply.Int != 1 {
		t.Fatalf("cancel wakes %+v", w)
	}
	if got := h.do("POP.CANCEL q tag2"); got != ":0\r\n" {
		t.Fatalf("second cancel = %q", got)
	}
	h.ks.TakeWakes()
	h.do("RPUSH q x")
	if got := h.popWakes(); got != "" {
		t.Fatalf("cancelled waiter woken: %s", got)
	}
	// A tagged pop answered at once tells its tag too.
	h.do("POP.WAIT tag3 BLPOP q 0")
	if w := h.ks.TakeWakes(); len(w) != 1 || w[0].Tag != "tag3" || w[0].Reply.Kind != resp.KindArray {
		t.Fatalf("immediate tagged pop wakes %+v", w)
	}
	if got := h.do("POP.WAIT t BLPOP q"); got != "-ERR wrong number of arguments for 'blpop' command\r\n" {
		t.Fatalf("bad inner command = %q", got)
	}
	if got := h.do("POP.WAIT t GET q"); got != "-ERR syntax error\r\n" {
		t.Fatalf("non-blocking inner command = %q", got)
	}
}

func TestBlockedMoveChainAndWrongType(t *testing.T) {
	h := newHarness(t)
	w1 := h.queued("BLPOP b{t} 0")
	w2 := h.queued("BLMOVE a{t} b{t} LEFT RIGHT 0")
	h.do("RPUSH a{t} x")
	want := fmt.Sprintf("%d:%q %d:%q", w2, bulk("x"), w1, "*2\r\n"+bulk("b{t}")+bulk("x"))
	if got := h.popWakes(); got != want {
		t.Fatalf("wakes %s, want %s", got, want)
	}
	w3 := h.queued("BLMOVE a{t} s{t} LEFT RIGHT 0")
	h.do("SET s{t} v")
	h.do("RPUSH a{t} y")
	if got, want := h.popWakes(), fmt.Sprintf("%d:%q", w3, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"); got != want {
		t.Fatalf("wakes %s, want %s", got, want)
	}
	if got := h.read("LLEN a{t}"); got != ":1\r\n" {
		t.Fatalf("LLEN = %q", got)
	}
}

func TestListsAndPopsSurviveSnapshot(t *testing.T) {
	h := newHarness(t)
	h.do("RPUSH l a b c")
	h.do("LPUSH l z")
	w1 := h.queued("BLPOP q1 q2 0")
	w2 := h.queued("BLMOVE q2 d LEFT RIGHT 5")
	var buf bytes.Buffer
	if _, err := h.ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	ks := New()
	if err := ks.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	h.ks = ks
	if got := h.read("LRANGE l 0 -1"); got != "*4\r\n"+bulk("z")+bulk("a")+bulk("b")+bulk("c") {
		t.Fatalf("LRANGE after restore = %q", got)
	}
	h.do("RPUSH q2 x y")
	want := fmt.Sprintf("%d:%q %d:%q", w1, "*2\r\n"+bulk("q2")+bulk("x"), w2, bulk("y"))
	if got := h.popWakes(); got != want {
		t.Fatalf("after restore wakes %s, want %s", got, want)
	}
}

func TestListsMoveSlotsAndPopsRequeue(t *testing.T) {
	h := newHarness(t)
	h.do("RPUSH l a b")
	w := h.queued("BLPOP q 0")
	c := Ctx{Index: h.ks.Logical(), Now: h.now}
	got := h.ks.export(0, 16383, c)
	b := got.Encode()
	if _, err := DecodeExport(b); err != nil {
		t.Fatal(err)
	}
	ks := New()
	if v := ks.applyImport(command.ImportArgs(b), wall); v.IsError() {
		t.Fatalf("import: %s", v.Str)
	}
	h2 := &harness{t: t, ks: ks, index: h.index, now: h.now}
	if got := h2.read("LRANGE l 0 -1"); got != "*2\r\n"+bulk("a")+bulk("b") {
		t.Fatalf("imported list = %q", got)
	}
	h.ks.drop(0, 16383, c)
	if got, want := h.popWakes(), fmt.Sprintf("%d:moved", w); got != want {
		t.Fatalf("drop wakes %s, want %s", got, want)
	}
}

// The list rows' samples for TestEveryKeyspaceRowHasAnExecutor.
func init() {
	for name, sample := range map[string]string{
		"lpush": "LPUSH l a", "rpush": "RPUSH l b", "lpushx": "LPUSHX l c", "rpushx": "RPUSHX l d",
		"lpop": "LPOP l", "rpop": "RPOP l 1", "llen": "LLEN l", "lrange": "LRANGE l 0 -1",
		"lindex": "LINDEX l 0", "lset": "LSET l 0 x", "lrem": "LREM l 0 x", "ltrim": "LTRIM l 0 -1",
		"lpos": "LPOS l x", "linsert": "LINSERT l BEFORE x y", "lmove": "LMOVE l m LEFT RIGHT",
		"rpoplpush": "RPOPLPUSH m l", "lmpop": "LMPOP 1 l LEFT", "blpop": "BLPOP l 0", "brpop": "BRPOP l 1",
		"blmpop": "BLMPOP 0 1 l LEFT", "blmove": "BLMOVE l m LEFT LEFT 0", "brpoplpush": "BRPOPLPUSH l m 0",
		"bzpopmin": "BZPOPMIN z 0", "bzpopmax": "BZPOPMAX z 0", "pop.cancel": "POP.CANCEL l t7", "pop.wait": "POP.WAIT t8 BLPOP l 0", "pop.renew": "POP.RENEW t8",
	} {
		rowSamples[name] = sample
	}
}

// A tagged waiter lapses without its node's renewal, keeping its place
// while renewed.
func TestPopLease(t *testing.T) {
	h := newHarness(t)
	h.queued("POP.WAIT a BLPOP q 0")
	h.queued("POP.WAIT b BLPOP q 0")
	h.queued("BLPOP q 0") // untagged: no lease
	for i := 0; i < 3; i++ {
		h.now += PopLease / 2
		if got := h.do("POP.RENEW a zz"); got != ":1\r\n" {
			t.Fatalf("renew = %q", got)
		}
		h.tick()
	}
	w := h.ks.TakeWakes()
	if len(w) != 1 || w[0].Tag != "b" || !w[0].Lapsed || w[0].Reply.Kind != resp.KindNullArray {
		t.Fatalf("wakes %+v, want b's lapse", w)
	}
	h.do("RPUSH q x y")
	if w := h.ks.TakeWakes(); len(w) != 2 || w[0].Tag != "a" || w[1].Tag != "" {
		t.Fatalf("serve wakes %+v, want a's then the untagged one's", w)
	}
}
