package command

import (
	"math"
	"strconv"
	"strings"
)

// Lists (LPUSH … BLMPOP) and the blocking pops of sorted sets (BZPOPMIN,
// BZPOPMAX): their Ops, rows and parsers. Parsers check what Redis 7.0.15
// checks before it looks the key up, in its order; what Redis checks after
// the lookup (LINDEX's and LSET's index) travels raw and is checked by the
// FSM, so that the errors come in Redis's order.

// ListPush is LPUSH, RPUSH, LPUSHX and RPUSHX key element [element ...].
type ListPush struct {
	Key   []byte
	Elems [][]byte
	Left  bool // LPUSH, LPUSHX
	X     bool // only onto an existing list (LPUSHX, RPUSHX)
}

// ListPop is LPOP and RPOP key [count].
type ListPop struct {
	Key      []byte
	Left     bool
	Count    int64
	HasCount bool // an array reply, even for count 1
}

// LLen is LLEN key.
type LLen struct{ Key []byte }

// LRange is LRANGE key start stop.
type LRange struct {
	Key         []byte
	Start, Stop int64
}

// LIndex is LINDEX key index. Index is checked after the key is found, as in
// Redis.
type LIndex struct{ Key, Index []byte }

// LSet is LSET key index element. Index is checked after the key is found.
type LSet struct{ Key, Index, Elem []byte }

// LRem is LREM key count element.
type LRem struct {
	Key   []byte
	Count int64
	Elem  []byte
}

// LTrim is LTRIM key start stop.
type LTrim struct {
	Key         []byte
	Start, Stop int64
}

// LPos is LPOS key element [RANK rank] [COUNT num] [MAXLEN len].
type LPos struct {
	Key, Elem []byte
	Rank      int64 // never 0; negative: from the tail
	Count     int64 // -1: no COUNT (a single index or nil); 0: every match
	MaxLen    int64 // 0: the whole list
}

// LInsert is LINSERT key BEFORE|AFTER pivot element.
type LInsert struct {
	Key, Pivot, Elem []byte
	Before           bool
}

// LMove is LMOVE source destination LEFT|RIGHT LEFT|RIGHT and RPOPLPUSH.
type LMove struct {
	Src, Dst         []byte
	FromLeft, ToLeft bool
}

// LMPop is LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count].
type LMPop struct {
	Keys  [][]byte
	Left  bool
	Count int64
}

// PopForm says what a BlockingPop pops and how it answers.
type PopForm uint8

// The blocking pops.
const (
	PopOne  PopForm = iota // BLPOP, BRPOP: [key, element]
	PopMany                // BLMPOP: [key, [element ...]]
	PopMove                // BLMOVE, BRPOPLPUSH: the element moved
	PopZSet                // BZPOPMIN, BZPOPMAX: [key, member, score]
)

// BlockingPop is BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN and
// BZPOPMAX: it pops at once when one of Keys holds elements (the first such
// key, in order), else, as a command entry of its own, it waits in the FIFO
// queue of each of its keys until a write makes one of them non-empty (the
// FSM then pops for it in that write's entry), Timeout passes, or its client
// goes away. In a transaction or a script it never waits: it answers as
// Redis answers a timeout (a null).
type BlockingPop struct {
	Cmd     string // the command's name, lower case
	Form    PopForm
	Keys    [][]byte
	Left    bool  // pop from the head (BLPOP, BLMPOP LEFT, BLMOVE LEFT …, BZPOPMIN)
	Count   int64 // PopMany: at most this many; 1 otherwise
	Dst     []byte
	ToLeft  bool  // PopMove: push onto the destination's head
	Timeout int64 // ms; 0 waits for ever
	// Tag is the proposing node's name for this request (POP.WAIT tag …):
	// every outcome of a tagged pop — an immediate answer, a serve, a
	// timeout, a move — also comes as a wake for its tag, so that the node
	// learns it from its own apply even when the entry's reply was lost.
	// nil for a pop sent as itself.
	Tag []byte
}

// PopCancel is POP.CANCEL key tag (lockd's): it withdraws the blocked pop
// that waits on key under tag (see BlockingPop.Tag). It answers 1 when the
// waiter was still waiting (it is gone now), 0 when it is not (it was served,
// timed out, moved, or its entry never applied). The node that holds a
// blocked client sends it when the client's wait ends there first, the
// client goes away, or the pop's own entry had an unknown outcome; its apply
// also yields a wake for tag, after the wake of any earlier entry that
// answered the pop, so that the node learns the pop's fate from its own
// apply.
type PopCancel struct {
	Key, Tag []byte
}

// PopRenew is POP.RENEW tag [tag ...] (lockd's): the node that holds the
// clients of these tagged pops renews their leases (fsm.PopLease), so that
// a waiter whose node died lapses.
type PopRenew struct{ Tags [][]byte }

func (PopRenew) isOp()    {}
func (PopCancel) isOp()   {}
func (ListPush) isOp()    {}
func (ListPop) isOp()     {}
func (LLen) isOp()        {}
func (LRange) isOp()      {}
func (LIndex) isOp()      {}
func (LSet) isOp()        {}
func (LRem) isOp()        {}
func (LTrim) isOp()       {}
func (LPos) isOp()        {}
func (LInsert) isOp()     {}
func (LMove) isOp()       {}
func (LMPop) isOp()       {}
func (BlockingPop) isOp() {}

// ListOp is a list command on one key: the FSM looks the key up once and
// dispatches it on what it finds. The commands on several keys (LMOVE,
// LMPOP, the blocking pops, POP.CANCEL, POP.RENEW) are not ListOps.
type ListOp interface {
	Op
	ListKey() []byte
}

// ListKey implements ListOp.
func (o ListPush) ListKey() []byte { return o.Key }
func (o ListPop) ListKey() []byte  { return o.Key }
func (o LLen) ListKey() []byte     { return o.Key }
func (o LRange) ListKey() []byte   { return o.Key }
func (o LIndex) ListKey() []byte   { return o.Key }
func (o LSet) ListKey() []byte     { return o.Key }
func (o LRem) ListKey() []byte     { return o.Key }
func (o LTrim) ListKey() []byte    { return o.Key }
func (o LPos) ListKey() []byte     { return o.Key }
func (o LInsert) ListKey() []byte  { return o.Key }

// NullReply reports whether the pop answers a plain null when it finds
// nothing (BLMOVE and BRPOPLPUSH in a transaction or script); the others
// answer a null array.
func (o BlockingPop) NullReply() bool { return o.Form == PopMove }

// WithTimeout returns args, a request of o's command, with its timeout
// argument set to ms (what is left of the client's wait when the request is
// queued again elsewhere).
func (o BlockingPop) WithTimeout(args [][]byte, ms int64) [][]byte {
	out := append([][]byte(nil), args...)
	i := len(out) - 1 // BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BZPOP*: the last argument
	if o.Form == PopMany {
		i = 1 // BLMPOP timeout numkeys ...
	}
	sec := strconv.FormatFloat(float64(max(ms, 1))/1000, 'f', 3, 64)
	out[i] = []byte(sec)
	return out
}

const (
	errTimeoutFloat = Error("ERR timeout is not a float or out of range")
	errTimeoutNeg   = Error("ERR timeout is negative")
)

var listRows = []*Spec{
	fsmRow("lpush", FlagWrite|FlagCollection, RouteKeys, parseListPush),
	fsmRow("rpush", FlagWrite|FlagCollection, RouteKeys, parseListPush),
	fsmRow("lpushx", FlagWrite|FlagCollection, RouteKeys, parseListPush),
	fsmRow("rpushx", FlagWrite|FlagCollection, RouteKeys, parseListPush),
	fsmRow("lpop", FlagWrite|FlagCollection, RouteKeys, parseListPop),
	fsmRow("rpop", FlagWrite|FlagCollection, RouteKeys, parseListPop),
	fsmRow("llen", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return LLen{Key: a[1]}, nil }),
	fsmRow("lrange", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		s, e, err := twoInts(a[2], a[3])
		return LRange{Key: a[1], Start: s, Stop: e}, err
	}),
	fsmRow("lindex", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return LIndex{Key: a[1], Index: a[2]}, nil }),
	fsmRow("lset", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		return LSet{Key: a[1], Index: a[2], Elem: a[3]}, nil
	}),
	fsmRow("lrem", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		n, ok := ParseInt(a[2])
		if !ok {
			return nil, ErrNotInt
		}
		return LRem{Key: a[1], Count: n, Elem: a[3]}, nil
	}),
	fsmRow("ltrim", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		s, e, err := twoInts(a[2], a[3])
		return LTrim{Key: a[1], Start: s, Stop: e}, err
	}),
	fsmRow("lpos", 0, RouteKeys, parseLPos),
	fsmRow("linsert", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		var before bool
		switch {
		case eq(a[2], "after"):
		case eq(a[2], "before"):
			before = true
		default:
			return nil, ErrSyntax
		}
		return LInsert{Key: a[1], Before: before, Pivot: a[3], Elem: a[4]}, nil
	}),
	fsmRow("lmove", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		from, to, err := twoEnds(a[3], a[4])
		return LMove{Src: a[1], Dst: a[2], FromLeft: from, ToLeft: to}, err
	}),
	fsmRow("rpoplpush", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		return LMove{Src: a[1], Dst: a[2], ToLeft: true}, nil
	}),
	fsmRow("lmpop", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		keys, left, count, err := parseMPop(a, 1)
		return LMPop{Keys: keys, Left: left, Count: count}, err
	}),
	fsmRow("blpop", FlagWrite|FlagCollection|FlagBlocking, RouteKeys, parseBPop),
	fsmRow("brpop", FlagWrite|FlagCollection|FlagBlocking, RouteKeys, parseBPop),
	fsmRow("bzpopmin", FlagWrite|FlagCollection|FlagBlocking, RouteKeys, parseBPop),
	fsmRow("bzpopmax", FlagWrite|FlagCollection|FlagBlocking, RouteKeys, parseBPop),
	fsmRow("blmove", FlagWrite|FlagCollection|FlagBlocking, RouteKeys, func(name string, a [][]byte) (Op, error) {
		from, to, err := twoEnds(a[3], a[4])
		if err != nil {
			return nil, err
		}
		t, err := ParseTimeout(a[5])
		return BlockingPop{Cmd: name, Form: PopMove, Keys: a[1:2], Dst: a[2], Left: from, ToLeft: to, Count: 1, Timeout: t}, err
	}),
	fsmRow("brpoplpush", FlagWrite|FlagCollection|FlagBlocking, RouteKeys, func(name string, a [][]byte) (Op, error) {
		t, err := ParseTimeout(a[3])
		return BlockingPop{Cmd: name, Form: PopMove, Keys: a[1:2], Dst: a[2], ToLeft: true, Count: 1, Timeout: t}, err
	}),
	fsmRow("pop.cancel", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		if len(a[2]) == 0 {
			return nil, Error("ERR invalid pop tag")
		}
		return PopCancel{Key: a[1], Tag: a[2]}, nil
	}),
	fsmRow("pop.wait", FlagWrite|FlagCollection|FlagBlocking, RouteKeys, parsePopWait),
	fsmRow("pop.renew", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) { return PopRenew{Tags: a[1:]}, nil }),
	fsmRow("blmpop", FlagWrite|FlagCollection|FlagBlocking, RouteKeys, func(name string, a [][]byte) (Op, error) {
		keys, left, count, err := parseMPop(a, 2)
		if err != nil {
			return nil, err
		}
		t, err := ParseTimeout(a[1])
		return BlockingPop{Cmd: name, Form: PopMany, Keys: keys, Left: left, Count: count, Timeout: t}, err
	}),
}

// POP.WAIT tag command [arg ...] is a blocking pop (BLPOP … BZPOPMAX) that
// its node tagged (BlockingPop.Tag): the node sends its clients' blocking
// pops so. ACL rules and key positions are the inner command's (FullName,
// CommandKeys).
func parsePopWait(name string, a [][]byte) (Op, error) {
	if len(a[1]) == 0 {
		return nil, Error("ERR invalid pop tag")
	}
	inner, ok := lookupRow(a[2])
	if !ok || !inner.Flags.Has(FlagBlocking) || inner.Name == name {
		return nil, ErrSyntax
	}
	op, err := inner.Parse(a[2:])
	if err != nil {
		return nil, err
	}
	pop, ok := op.(BlockingPop)
	if !ok {
		return nil, ErrSyntax
	}
	pop.Tag = a[1]
	return pop, nil
}

// lookupRow is Lookup, set once the table is built (a direct reference from
// a row's parser would make the table's initialisation refer to itself).
var lookupRow func([]byte) (*Spec, bool)

func init() { lookupRow = Lookup }

// PopWaitArgs returns args (a blocking pop) as POP.WAIT tag args...
func PopWaitArgs(tag []byte, args [][]byte) [][]byte {
	return append([][]byte{[]byte("POP.WAIT"), tag}, args...)
}

// popWaitInner is the inner command of a POP.WAIT request, or nil.
func popWaitInner(args [][]byte) [][]byte {
	if len(args) > 2 && eq(args[0], "pop.wait") {
		return args[2:]
	}
	return nil
}

// LPUSH|RPUSH|LPUSHX|RPUSHX key element [element ...]
func parseListPush(name string, a [][]byte) (Op, error) {
	return ListPush{Key: a[1], Elems: a[2:], Left: name[0] == 'l', X: name[len(name)-1] == 'x'}, nil
}

// LPOP|RPOP key [count]
func parseListPop(name string, a [][]byte) (Op, error) {
	op := ListPop{Key: a[1], Left: name[0] == 'l', Count: 1}
	switch len(a) {
	case 2:
	case 3:
		n, ok := ParseInt(a[2])
		if !ok || n < 0 {
			return nil, ErrNotPositive
		}
		op.Count, op.HasCount = n, true
	default:
		return nil, ErrArity(name)
	}
	return op, nil
}

// BLPOP|BRPOP|BZPOPMIN|BZPOPMAX key [key ...] timeout
func parseBPop(name string, a [][]byte) (Op, error) {
	t, err := ParseTimeout(a[len(a)-1])
	if err != nil {
		return nil, err
	}
	op := BlockingPop{Cmd: name, Form: PopOne, Keys: a[1 : len(a)-1], Count: 1, Timeout: t}
	switch name {
	case "blpop", "bzpopmin":
		op.Left = true
	}
	if name[1] == 'z' {
		op.Form = PopZSet
	}
	return op, nil
}

// LMPOP numkeys key ... LEFT|RIGHT [COUNT n] (at=1) and BLMPOP timeout
// numkeys ... (at=2): Redis's order of checks, the timeout's last.
func parseMPop(a [][]byte, at int) (keys [][]byte, left bool, count int64, err error) {
	n, ok := ParseInt(a[at])
	if !ok || n < 1 {
		return nil, false, 0, Error("ERR numkeys should be greater than 0")
	}
	where := int64(at) + n + 1
	if where >= int64(len(a)) || where < 0 {
		return nil, false, 0, ErrSyntax
	}
	if left, err = oneEnd(a[where]); err != nil {
		return nil, false, 0, err
	}
	count = -1
	for j := int(where) + 1; j < len(a); j++ {
		if count == -1 && eq(a[j], "count") && j+1 < len(a) {
			j++
			c, ok := ParseInt(a[j])
			if !ok || c < 1 {
				return nil, false, 0, Error("ERR count should be greater than 0")
			}
			count = c
			continue
		}
		return nil, false, 0, ErrSyntax
	}
	if count == -1 {
		count = 1
	}
	return a[at+1 : where], left, count, nil
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func parseLPos(_ string, a [][]byte) (Op, error) {
	op := LPos{Key: a[1], Elem: a[2], Rank: 1, Count: -1}
	for j := 3; j < len(a); j++ {
		more := j+1 < len(a)
		switch {
		case eq(a[j], "rank") && more:
			j++
			r, ok := ParseInt(a[j])
			if !ok {
				return nil, ErrNotInt
			}
			if r == 0 {
				return nil, Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
			}
			op.Rank = r
		case eq(a[j], "count") && more:
			j++
			c, ok := ParseInt(a[j])
			if !ok || c < 0 {
				return nil, Error("ERR COUNT can't be negative")
			}
			op.Count = c
		case eq(a[j], "maxlen") && more:
			j++
			m, ok := ParseInt(a[j])
			if !ok || m < 0 {
				return nil, Error("ERR MAXLEN can't be negative")
			}
			op.MaxLen = m
		default:
			return nil, ErrSyntax
		}
	}
	if op.Rank == math.MinInt64 {
		// Redis negates it, which leaves it negative: it scans from the tail
		// and every match counts from the first, COUNT never reached (the
		// wrapped arithmetic of Redis 7.0.15).
		op.Rank = -1
		if op.Count > 0 {
			op.Count = 0
		}
	}
	return op, nil
}

func twoInts(a, b []byte) (int64, int64, error) {
	x, ok1 := ParseInt(a)
	y, ok2 := ParseInt(b)
	if !ok1 || !ok2 {
		return 0, 0, ErrNotInt
	}
	return x, y, nil
}

// oneEnd reads LEFT or RIGHT: true for LEFT.
func oneEnd(b []byte) (bool, error) {
	switch {
	case eq(b, "left"):
		return true, nil
	case eq(b, "right"):
		return false, nil
	}
	return false, ErrSyntax
}

func twoEnds(a, b []byte) (bool, bool, error) {
	from, err := oneEnd(a)
	if err != nil {
		return false, false, err
	}
	to, err := oneEnd(b)
	return from, to, err
}

// ParseTimeout reads a blocking command's timeout in seconds (a decimal
// number, "1.5" or "0.01") as Redis 7.0 does: milliseconds rounded up; 0 waits
// for ever. A value Redis cannot read is "not a float"; a negative one, or
// one too large for milliseconds in 64 bits (whose conversion goes negative
// in Redis), is "negative".
func ParseTimeout(b []byte) (int64, error) {
	s := string(b)
	if s == "" || len(s) >= 5*1024 || strings.ContainsAny(s[:1], " \t\n\v\f\r") || strings.Contains(s, "_") {
		return 0, errTimeoutFloat
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && !math.IsInf(f, 0) || err != nil && !isRange(err) {
			return 0, errTimeoutFloat
		}
		return 0, errTimeoutNeg // past a double, not past Redis's long double: too long for ms
	}
	if math.IsNaN(f) {
		return 0, errTimeoutFloat
	}
	ms := math.Ceil(f * 1000)
	if ms < 0 || ms >= math.MaxInt64 || math.IsInf(ms, 0) {
		return 0, errTimeoutNeg
	}
	return int64(ms), nil
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
