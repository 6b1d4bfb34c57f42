package command

import (
	"bytes"
	"math"
	"strings"

	"github.com/lockd/lockd/internal/cnum"
)

// Sorted sets: the rows, Ops and parsers of Redis 7.0's ZADD … ZSCAN. Every
// argument error Redis reports before it looks the key up is found here, in
// Redis's order and words (t_zset.c at 7.0.15); what depends on the key
// (WRONGTYPE, an empty reply for a missing key, ZSCAN's options) is the
// FSM's (raftstore/fsm/zset.go).

// The sorted-set error texts, as Redis 7.0 words them.
const (
	ErrNotFloat      Error = "ERR value is not a valid float"
	ErrMinMaxFloat   Error = "ERR min or max is not a float"
	ErrMinMaxLex     Error = "ERR min or max not valid string range item"
	ErrScoreNaN      Error = "ERR resulting score is not a number (NaN)"
	ErrNotPositive   Error = "ERR value is out of range, must be positive"
	errZAddXXNX      Error = "ERR XX and NX options at the same time are not compatible"
	errZAddGTLTNX    Error = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errZAddIncrPairs Error = "ERR INCR option supports a single increment-element pair"
	errZLimitRank    Error = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZScoresLex    Error = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
)

// ZBy says how a sorted-set range is given.
type ZBy uint8

// Range kinds.
const (
	ZByRank  ZBy = iota // Start, Stop: ranks, negative from the end
	ZByScore            // Min, Max: score bounds
	ZByLex              // LexMin, LexMax: member bounds
)

// ScoreBound is one end of a score range: V, exclusive when Ex ("(1.5").
type ScoreBound struct {
	V  float64
	Ex bool
}

// LexBound is one end of a lexicographical range: "-" (Inf -1, below every
// member), "+" (Inf 1, above every member), "[v" or "(v" (Ex).
type LexBound struct {
	V   []byte
	Ex  bool
	Inf int8
}

// ZInterval is the range of a ZRANGE-family, ZCOUNT, ZLEXCOUNT or
// ZREMRANGEBY* command, by rank, score or member, always given low end first
// (the REV forms' arguments are swapped when parsed).
type ZInterval struct {
	By             ZBy
	Start, Stop    int64
	Min, Max       ScoreBound
	LexMin, LexMax LexBound
}

// ZAdd is ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member … and ZINCRBY
// (Incr, one pair). Scores are parsed and checked; Members[i] has Scores[i].
type ZAdd struct {
	Key                []byte
	Scores             []float64
	Members            [][]byte
	NX, XX, GT, LT, CH bool
	Incr               bool
}

// ZRem is ZREM key member [member …].
type ZRem struct {
	Key     []byte
	Members [][]byte
}

// ZCard is ZCARD key.
type ZCard struct{ Key []byte }

// ZScore is ZSCORE key member.
type ZScore struct{ Key, Member []byte }

// ZMScore is ZMSCORE key member [member …].
type ZMScore struct {
	Key     []byte
	Members [][]byte
}

// ZRank is ZRANK and ZREVRANK (Rev) key member.
type ZRank struct {
	Key, Member []byte
	Rev         bool
}

// ZRange is ZRANGE key min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
// [WITHSCORES] and the older ZREVRANGE, Z[REV]RANGEBYSCORE and
// Z[REV]RANGEBYLEX. Limit is -1 without LIMIT (a negative count means no
// limit, a negative offset an empty reply, as in Redis).
type ZRange struct {
	Key []byte
	ZInterval
	Rev           bool
	WithScores    bool
	Offset, Limit int64
}

// ZCount is ZCOUNT (By ZByScore) and ZLEXCOUNT (By ZByLex) key min max.
type ZCount struct {
	Key []byte
	ZInterval
}

// ZRemRange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX key a b.
type ZRemRange struct {
	Key []byte
	ZInterval
}

// ZPop is ZPOPMIN and ZPOPMAX (Max) key [count]. Count is -1 without a
// count: the reply is then a flat pair even in RESP3.
type ZPop struct {
	Key   []byte
	Max   bool
	Count int64
}

// ZScan is ZSCAN key cursor [MATCH pattern] [COUNT count]. Redis checks the
// options only once it has found a sorted set under the key, so they are
// kept raw here and checked by ParseZScanOpts in the FSM.
type ZScan struct {
	Key    []byte
	Cursor uint64
	Opts   [][]byte
}

// ZSetOp is a sorted-set command: the FSM dispatches every one on its key.
type ZSetOp interface {
	Op
	ZSetKey() []byte
}

// ZSetKey implements ZSetOp.
func (o ZAdd) ZSetKey() []byte      { return o.Key }
func (o ZRem) ZSetKey() []byte      { return o.Key }
func (o ZCard) ZSetKey() []byte     { return o.Key }
func (o ZScore) ZSetKey() []byte    { return o.Key }
func (o ZMScore) ZSetKey() []byte   { return o.Key }
func (o ZRank) ZSetKey() []byte     { return o.Key }
func (o ZRange) ZSetKey() []byte    { return o.Key }
func (o ZCount) ZSetKey() []byte    { return o.Key }
func (o ZRemRange) ZSetKey() []byte { return o.Key }
func (o ZPop) ZSetKey() []byte      { return o.Key }
func (o ZScan) ZSetKey() []byte     { return o.Key }

func (ZAdd) isOp()      {}
func (ZRem) isOp()      {}
func (ZCard) isOp()     {}
func (ZScore) isOp()    {}
func (ZMScore) isOp()   {}
func (ZRank) isOp()     {}
func (ZRange) isOp()    {}
func (ZCount) isOp()    {}
func (ZRemRange) isOp() {}
func (ZPop) isOp()      {}
func (ZScan) isOp()     {}

// zsetRows are the sorted-set commands' rows (HandlerFSM).
var zsetRows = []*Spec{
	fsmRow("zadd", FlagWrite|FlagCollection, RouteKeys, parseZAdd),
	fsmRow("zincrby", FlagWrite|FlagCollection, RouteKeys, parseZAdd),
	fsmRow("zrem", FlagWrite|FlagCollection, RouteKeys, func(_ string, a [][]byte) (Op, error) { return ZRem{Key: a[1], Members: a[2:]}, nil }),
	fsmRow("zcard", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return ZCard{Key: a[1]}, nil }),
	fsmRow("zscore", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return ZScore{Key: a[1], Member: a[2]}, nil }),
	fsmRow("zmscore", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return ZMScore{Key: a[1], Members: a[2:]}, nil }),
	fsmRow("zrank", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return ZRank{Key: a[1], Member: a[2]}, nil }),
	fsmRow("zrevrank", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return ZRank{Key: a[1], Member: a[2], Rev: true}, nil }),
	fsmRow("zrange", 0, RouteKeys, parseZRange),
	fsmRow("zrevrange", 0, RouteKeys, parseZRange),
	fsmRow("zrangebyscore", 0, RouteKeys, parseZRange),
	fsmRow("zrevrangebyscore", 0, RouteKeys, parseZRange),
	fsmRow("zrangebylex", 0, RouteKeys, parseZRange),
	fsmRow("zrevrangebylex", 0, RouteKeys, parseZRange),
	fsmRow("zcount", 0, RouteKeys, parseZCount),
	fsmRow("zlexcount", 0, RouteKeys, parseZCount),
	fsmRow("zremrangebyrank", FlagWrite|FlagCollection, RouteKeys, parseZRemRange),
	fsmRow("zremrangebyscore", FlagWrite|FlagCollection, RouteKeys, parseZRemRange),
	fsmRow("zremrangebylex", FlagWrite|FlagCollection, RouteKeys, parseZRemRange),
	fsmRow("zpopmin", FlagWrite|FlagCollection, RouteKeys, parseZPop),
	fsmRow("zpopmax", FlagWrite|FlagCollection, RouteKeys, parseZPop),
	fsmRow("zscan", 0, RouteKeys, parseZScan),
}

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member …] / ZINCRBY key increment member
func parseZAdd(name string, a [][]byte) (Op, error) {
	op := ZAdd{Key: a[1], Incr: name == "zincrby"}
	i := 2
	for ; i < len(a) && name == "zadd"; i++ {
		switch strings.ToLower(string(a[i])) {
		case "nx":
			op.NX = true
		case "xx":
			op.XX = true
		case "ch":
			op.CH = true
		case "incr":
			op.Incr = true
		case "gt":
			op.GT = true
		case "lt":
			op.LT = true
		default:
			goto pairs
		}
	}
pairs:
	n := len(a) - i
	if n == 0 || n%2 != 0 {
		return nil, ErrSyntax
	}
	switch {
	case op.NX && op.XX:
		return nil, errZAddXXNX
	case op.NX && (op.GT || op.LT), op.GT && op.LT:
		return nil, errZAddGTLTNX
	case op.Incr && n > 2:
		return nil, errZAddIncrPairs
	}
	op.Scores = make([]float64, 0, n/2)
	op.Members = make([][]byte, 0, n/2)
	for ; i < len(a); i += 2 {
		f, ok := ParseFloat(a[i])
		if !ok {
			return nil, ErrNotFloat
		}
		op.Scores = append(op.Scores, f)
		op.Members = append(op.Members, a[i+1])
	}
	return op, nil
}

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES],
// ZREVRANGE key start stop [WITHSCORES], Z[REV]RANGEBYSCORE key a b
// [WITHSCORES] [LIMIT offset count], Z[REV]RANGEBYLEX key a b [LIMIT offset count]
func parseZRange(name string, a [][]byte) (Op, error) {
	op := ZRange{Key: a[1], Limit: -1}
	auto := name == "zrange" // the range kind and direction come from options
	switch name {
	case "zrevrange":
		op.Rev = true
	case "zrangebyscore", "zrevrangebyscore":
		op.By = ZByScore
	case "zrangebylex", "zrevrangebylex":
		op.By = ZByLex
	}
	if strings.HasPrefix(name, "zrev") {
		op.Rev = true
	}
	typed := !auto // BYSCORE/BYLEX are only options of ZRANGE
	limited := false
	for j := 4; j < len(a); j++ {
		left := len(a) - j - 1
		switch {
		case eq(a[j], "withscores"):
			op.WithScores = true
		case eq(a[j], "limit") && left >= 2:
			off, ok1 := ParseInt(a[j+1])
			if !ok1 {
				return nil, ErrNotInt
			}
			lim, ok2 := ParseInt(a[j+2])
			if !ok2 {
				return nil, ErrNotInt
			}
			op.Offset, op.Limit, limited = off, lim, true
			j += 2
		case auto && !op.Rev && eq(a[j], "rev"):
			op.Rev = true
		case !typed && eq(a[j], "bylex"):
			op.By, typed = ZByLex, true
		case !typed && eq(a[j], "byscore"):
			op.By, typed = ZByScore, true
		default:
			return nil, ErrSyntax
		}
	}
	if limited && op.Limit != -1 && op.By == ZByRank {
		return nil, errZLimitRank
	}
	if op.WithScores && op.By == ZByLex {
		return nil, errZScoresLex
	}
	lo, hi := a[2], a[3]
	if op.Rev && op.By != ZByRank {
		lo, hi = hi, lo // given as max, min
	}
	iv, err := parseInterval(op.By, lo, hi)
	if err != nil {
		return nil, err
	}
	op.ZInterval = iv
	return op, nil
}

// parseInterval reads the two ends of a range of kind by, as Redis reads them.
func parseInterval(by ZBy, lo, hi []byte) (ZInterval, error) {
	iv := ZInterval{By: by}
	switch by {
	case ZByRank:
		s, ok1 := ParseInt(lo)
		if !ok1 {
			return iv, ErrNotInt
		}
		e, ok2 := ParseInt(hi)
		if !ok2 {
			return iv, ErrNotInt
		}
		iv.Start, iv.Stop = s, e
	case ZByScore:
		var ok1, ok2 bool
		iv.Min, ok1 = parseScoreBound(lo)
		iv.Max, ok2 = parseScoreBound(hi)
		if !ok1 || !ok2 {
			return iv, ErrMinMaxFloat
		}
	case ZByLex:
		var ok1, ok2 bool
		iv.LexMin, ok1 = parseLexBound(lo)
		iv.LexMax, ok2 = parseLexBound(hi)
		if !ok1 || !ok2 {
			return iv, ErrMinMaxLex
		}
	}
	return iv, nil
}

// ZCOUNT key min max / ZLEXCOUNT key min max
func parseZCount(name string, a [][]byte) (Op, error) {
	by := ZByScore
	if name == "zlexcount" {
		by = ZByLex
	}
	iv, err := parseInterval(by, a[2], a[3])
	if err != nil {
		return nil, err
	}
	return ZCount{Key: a[1], ZInterval: iv}, nil
}

// ZREMRANGEBYRANK key start stop / ZREMRANGEBYSCORE key min max / ZREMRANGEBYLEX key min max
func parseZRemRange(name string, a [][]byte) (Op, error) {
	by := ZByRank
	switch name {
	case "zremrangebyscore":
		by = ZByScore
	case "zremrangebylex":
		by = ZByLex
	}
	iv, err := parseInterval(by, a[2], a[3])
	if err != nil {
		return nil, err
	}
	return ZRemRange{Key: a[1], ZInterval: iv}, nil
}

// ZPOPMIN key [count] / ZPOPMAX key [count]
func parseZPop(name string, a [][]byte) (Op, error) {
	if len(a) > 3 {
		return nil, ErrSyntax
	}
	op := ZPop{Key: a[1], Max: name == "zpopmax", Count: -1}
	if len(a) == 3 {
		n, ok := ParseInt(a[2])
		if !ok || n < 0 { // Redis answers both with the same text
			return nil, ErrNotPositive
		}
		op.Count = n
	}
	return op, nil
}

// ZSCAN key cursor [MATCH pattern] [COUNT count]
func parseZScan(_ string, a [][]byte) (Op, error) {
	c, ok := ParseCursor(a[2])
	if !ok {
		return nil, Error("ERR invalid cursor")
	}
	return ZScan{Key: a[1], Cursor: c, Opts: a[3:]}, nil
}

// ParseZScanOpts checks ZSCAN's options as Redis does once the key holds a
// sorted set: MATCH pattern (nil when absent or "*") and COUNT (10 when
// absent, at least 1).
func ParseZScanOpts(opts [][]byte) (match []byte, count int64, err error) {
	count = 10
	for i := 0; i < len(opts); i += 2 {
		left := len(opts) - i
		switch {
		case eq(opts[i], "count") && left >= 2:
			n, ok := ParseInt(opts[i+1])
			if !ok {
				return nil, 0, ErrNotInt
			}
			if n < 1 {
				return nil, 0, ErrSyntax
			}
			count = n
		case eq(opts[i], "match") && left >= 2:
			match = opts[i+1]
			if bytes.Equal(match, []byte("*")) {
				match = nil
			}
		default:
			return nil, 0, ErrSyntax
		}
	}
	return match, count, nil
}

// ParseFloat parses b as Redis's string2d does (a ZADD score, a ZINCRBY
// increment): glibc strtod over the whole argument, no leading space, no
// overflow to ±inf nor underflow to 0, not NaN. "inf", "+inf", "-inf" and
// hexadecimal forms are accepted.
func ParseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || cnum.IsSpace(b[0]) {
		return 0, false
	}
	f, n, rangeErr := cnum.Strtod(b)
	if n != len(b) || rangeErr || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// parseScoreBound reads one end of a score range as Redis's zslParseRange:
// the argument as a C string (cut at a NUL), an optional '(' for an exclusive
// end, then strtod over the rest (leading spaces allowed, "" is 0, overflow
// is ±inf), NaN refused.
func parseScoreBound(b []byte) (ScoreBound, bool) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	var sb ScoreBound
	if len(b) > 0 && b[0] == '(' {
		sb.Ex, b = true, b[1:]
	}
	f, n, _ := cnum.Strtod(b)
	if n != len(b) || math.IsNaN(f) {
		return sb, false
	}
	sb.V = f
	return sb, true
}

// parseLexBound reads one end of a lexicographical range as Redis's
// zslParseLexRangeItem: "-", "+", "[member" or "(member".
func parseLexBound(b []byte) (LexBound, bool) {
	if len(b) == 0 {
		return LexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 {
			return LexBound{}, false
		}
		if b[0] == '+' {
			return LexBound{Inf: 1, Ex: true}, true
		}
		return LexBound{Inf: -1, Ex: true}, true
	case '(':
		return LexBound{V: b[1:], Ex: true}, true
	case '[':
		return LexBound{V: b[1:]}, true
	}
	return LexBound{}, false
}
