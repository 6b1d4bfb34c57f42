package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/tidwall/btree"
)

// KindZSet is a sorted set (ZADD …). Part of the snapshot format.
const KindZSet Kind = 4

// zmember is one member of a sorted set with its score (never NaN) and the
// scan-order hash of its name.
type zmember struct {
	name  string
	score float64
	h     uint32
}

// zset is a sorted set: its members twice, ordered by (score, name) as Redis
// orders them (ranks, ranges, pops) and by (hash, name) for lookups by name
// and ZSCAN's cursor. Both are copy-on-write B-trees whose nodes count their
// items, so that a write costs O(log n): it works on a clone (zset.clone,
// O(1)) whose changed nodes are copied, never on a set in the trees, which
// snapshots read concurrently. A rank is found in O(log² n) (a binary search
// over BTreeG.GetAt).
type zset struct {
	byScore *btree.BTreeG[zmember]
	byName  *btree.BTreeG[zmember]
}

func zless(a, b zmember) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.name < b.name
}

func zlessName(a, b zmember) bool {
	if a.h != b.h {
		return a.h < b.h
	}
	return a.name < b.name
}

func newZSet() *zset {
	return &zset{
		byScore: btree.NewBTreeGOptions(zless, btree.Options{NoLocks: true}),
		byName:  btree.NewBTreeGOptions(zlessName, btree.Options{NoLocks: true}),
	}
}

// clone is a copy of z that can be changed without changing z: O(1), the
// trees' nodes shared until either side writes them. (BTreeG.Copy gives z a
// new copy-on-write id, a field no reader of z looks at.)
func (z *zset) clone() *zset { return &zset{byScore: z.byScore.Copy(), byName: z.byName.Copy()} }

func (z *zset) len() int { return z.byScore.Len() }

// get is the member named name.
func (z *zset) get(name []byte) (zmember, bool) {
	return z.byName.Get(zmember{name: string(name), h: hashKey(name)})
}

// put sets name's score (O(log n)), replacing its old entry. A negative
// zero is stored as 0, as Redis stores it in a listpack (every set of the
// sizes lock clients use).
func (z *zset) put(name string, score float64) {
	if score == 0 {
		score = 0
	}
	m := zmember{name: name, score: score, h: hashKey([]byte(name))}
	if old, ok := z.byName.Set(m); ok {
		z.byScore.Delete(old)
	}
	z.byScore.Set(m)
}

// del removes the member m (as found by get or in a range).
func (z *zset) del(m zmember) {
	z.byName.Delete(m)
	z.byScore.Delete(m)
}

// search is the smallest rank whose member satisfies pred, len() when none
// does; pred must be false up to some rank and true from it on (monotone in
// the set's order). O(log² n).
func (z *zset) search(pred func(zmember) bool) int {
	lo, hi := 0, z.len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m, _ := z.byScore.GetAt(mid); pred(m) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// rank is m's rank (m is a member of z).
func (z *zset) rank(m zmember) int {
	return z.search(func(x zmember) bool { return !zless(x, m) })
}

// interval is the ranks [lo, hi) of the members in iv (a score or lex
// range): those after every member below iv's low end, and up to the first
// member past its high end. A lex range assumes the set ordered by name (the
// members have one score), as Redis does.
func (z *zset) interval(iv command.ZInterval) (lo, hi int) {
	if iv.By == command.ZByScore {
		lo = z.search(func(m zmember) bool { return gteMin(m.score, iv.Min) })
		hi = z.search(func(m zmember) bool { return !lteMax(m.score, iv.Max) })
	} else {
		lo = z.search(func(m zmember) bool { return lexGteMin(m.name, iv.LexMin) })
		hi = z.search(func(m zmember) bool { return !lexLteMax(m.name, iv.LexMax) })
	}
	return lo, max(lo, hi)
}

// rankInterval is a rank range [start, stop] sanitised as Redis does, as
// ranks [lo, hi); empty when lo == hi.
func rankInterval(start, stop int64, n int) (lo, hi int) {
	s, e, ok := rangeOf(start, stop, int64(n)) // list.go: Redis sanitises both alike
	if !ok {
		return 0, 0
	}
	return int(s), int(e) + 1
}

func gteMin(v float64, b command.ScoreBound) bool {
	if b.Ex {
		return v > b.V
	}
	return v >= b.V
}

func lteMax(v float64, b command.ScoreBound) bool {
	if b.Ex {
		return v < b.V
	}
	return v <= b.V
}

func lexGteMin(v string, b command.LexBound) bool {
	switch {
	case b.Inf < 0:
		return true
	case b.Inf > 0:
		return false
	case b.Ex:
		return v > string(b.V)
	}
	return v >= string(b.V)
}

func lexLteMax(v string, b command.LexBound) bool {
	switch {
	case b.Inf > 0:
		return true
	case b.Inf < 0:
		return false
	case b.Ex:
		return v < string(b.V)
	}
	return v <= string(b.V)
}

// walk calls each with the members from rank from, ascending (or
// descending when rev), until each returns false. O(log n) to start.
func (z *zset) walk(from int, rev bool, each func(zmember) bool) {
	start, ok := z.byScore.GetAt(from)
	if !ok {
		return
	}
	if rev {
		z.byScore.Descend(start, each)
	} else {
		z.byScore.Ascend(start, each)
	}
}

// zsetOf returns the live sorted set at key: (nil, nil) when the key is
// absent, WRONGTYPE when it holds another kind.
func (k *Keyspace) zsetOf(key []byte, now int64) (*item, *resp.Value) {
	it := k.lookup(key, now)
	if it == nil {
		return nil, nil
	}
	if it.kind() != KindZSet {
		return nil, &wrongType
	}
	return it, nil
}

// storeZSet makes z (a clone, never a set in the trees) the value of key,
// keeping old's TTL; an empty z deletes the key, as Redis does.
func (k *Keyspace) storeZSet(key []byte, old *item, z *zset, c Ctx) {
	if z.len() == 0 {
		if old != nil {
			k.remove(old)
		}
		return
	}
	it := newItem(key, "")
	it.coll, it.token = &collection{zset: z}, c.Index
	if old != nil {
		it.deadline = old.deadline
	}
	k.putItem(it)
}

// zscoreReply is a score as Redis replies it (addReplyDouble: a RESP3
// double, a "%.17g" bulk string in RESP2).
func zscoreReply(f float64) resp.Value { return resp.Double(f) }

// zpairs is the reply of members with their scores (ZRANGE … WITHSCORES,
// ZPOPMIN/ZPOPMAX with a count): elems alternate member and score.
// Redis 7 nests each pair in an array of its own in RESP3 and sends a flat
// array in RESP2: resp.Pairs renders both.
func zpairs(elems []resp.Value) resp.Value { return resp.Pairs(elems...) }

// zsetRead answers the sorted-set commands that change nothing.
func (k *Keyspace) zsetRead(op command.ZSetOp, c Ctx) resp.Value {
	it, errv := k.zsetOf(op.ZSetKey(), c.Now)
	if op, ok := op.(command.ZMScore); ok {
		if errv != nil {
			return *errv
		}
		out := make([]resp.Value, len(op.Members))
		for i, name := range op.Members {
			out[i] = resp.Nil
			if it != nil {
				if m, ok := it.coll.zset.get(name); ok {
					out[i] = zscoreReply(m.score)
				}
			}
		}
		return resp.Array(out...)
	}
	if errv != nil {
		return *errv
	}
	if it == nil {
		switch op.(type) {
		case command.ZCard, command.ZCount:
			return resp.Zero
		case command.ZScore, command.ZRank:
			return resp.Nil
		case command.ZScan:
			return resp.Array(resp.BulkString("0"), resp.EmptyList)
		}
		return resp.EmptyList
	}
	z := it.coll.zset
	switch op := op.(type) {
	case command.ZCard:
		return resp.Int(int64(z.len()))
	case command.ZScore:
		if m, ok := z.get(op.Member); ok {
			return zscoreReply(m.score)
		}
		return resp.Nil
	case command.ZRank:
		m, ok := z.get(op.Member)
		if !ok {
			return resp.Nil
		}
		r := z.rank(m)
		if op.Rev {
			r = z.len() - 1 - r
		}
		return resp.Int(int64(r))
	case command.ZCount:
		lo, hi := z.interval(op.ZInterval)
		return resp.Int(int64(hi - lo))
	case command.ZRange:
		return zrange(z, op)
	case command.ZScan:
		return zscan(z, op)
	}
	return resp.Error("ERR internal: not a sorted-set read")
}

// zrange answers ZRANGE and its older forms on z.
func zrange(z *zset, op command.ZRange) resp.Value {
	var from, n int // the first rank walked (in the walk's direction) and at most how many
	switch op.By {
	case command.ZByRank:
		lo, hi := rankInterval(op.Start, op.Stop, z.len())
		if lo == hi {
			return resp.EmptyList
		}
		from, n = lo, hi-lo
		if op.Rev {
			from = z.len() - 1 - lo
		}
	default:
		lo, hi := z.interval(op.ZInterval)
		if op.Offset < 0 || op.Offset >= int64(hi-lo) || op.Limit == 0 {
			return resp.EmptyList
		}
		n = hi - lo - int(op.Offset)
		if op.Limit > 0 && op.Limit < int64(n) {
			n = int(op.Limit)
		}
		from = lo + int(op.Offset)
		if op.Rev {
			from = hi - 1 - int(op.Offset)
		}
	}
	per := 1
	if op.WithScores {
		per = 2
	}
	out := make([]resp.Value, 0, n*per)
	z.walk(from, op.Rev, func(m zmember) bool {
		out = append(out, resp.BulkRef(m.name))
		if op.WithScores {
			out = append(out, zscoreReply(m.score))
		}
		n--
		return n > 0
	})
	if op.WithScores {
		return zpairs(out)
	}
	return resp.Array(out...)
}

// The sizes under which Redis 7 keeps a sorted set as a listpack (its
// defaults for zset-max-listpack-entries and -value): ZSCAN then returns the
// whole set, in order, with cursor 0.
const (
	zsetListpackEntries = 128
	zsetListpackValue   = 64
)

// small reports whether Redis would hold z as a listpack.
func (z *zset) small() bool {
	if z.len() > zsetListpackEntries {
		return false
	}
	ok := true
	z.byScore.Scan(func(m zmember) bool {
		ok = len(m.name) <= zsetListpackValue
		return ok
	})
	return ok
}

// zscan answers ZSCAN on z. A small set is returned whole, in order, with
// cursor 0, as Redis returns a listpack; a larger one in name-hash order,
// the cursor being the hash of the next member, so that every member present
// for the whole scan is returned whatever changes meanwhile, as Redis
// guarantees. Each call visits at most COUNT members (plus those sharing the
// last one's hash).
func zscan(z *zset, op command.ZScan) resp.Value {
	match, count, err := command.ParseZScanOpts(op.Opts)
	if err != nil {
		return errReply(err)
	}
	var out []resp.Value
	add := func(m zmember) {
		if match == nil || command.Match(match, []byte(m.name)) {
			out = append(out, resp.BulkRef(m.name), resp.BulkString(zscanScore(m.score)))
		}
	}
	var next uint64
	if z.small() {
		z.byScore.Scan(func(m zmember) bool { add(m); return true })
	} else if op.Cursor <= math.MaxUint32 {
		var visited int64
		var last uint32
		z.byName.Ascend(zmember{h: uint32(op.Cursor)}, func(m zmember) bool {
			if visited >= count && m.h != last {
				next = uint64(m.h)
				return false
			}
			visited++
			last = m.h
			add(m)
			return true
		})
	}
	return resp.Array(resp.BulkString(strconv.FormatUint(next, 10)), resp.Array(out...))
}

// zscanScore is a score as ZSCAN writes it (Redis's d2string): integers
// that a long long holds exactly in decimal, "-0" for negative zero, else as
// a double reply.
func zscanScore(f float64) string {
	switch {
	case f == 0 && math.Signbit(f):
		return "-0"
	case f == 0:
		return "0"
	case f >= -math.MaxInt64/2 && f <= math.MaxInt64/2 && f == math.Trunc(f):
		return strconv.FormatInt(int64(f), 10)
	}
	return resp.FormatDouble(f)
}

// zsetWrite applies ZADD, ZINCRBY, ZREM, ZREMRANGEBY* and ZPOPMIN/ZPOPMAX to
// the sorted set at key, on a clone: the set in the trees is never changed.
// A command that changes nothing writes nothing (WATCH sees no change).
func (k *Keyspace) zsetWrite(op command.ZSetOp, c Ctx) resp.Value {
	if v, off := k.collectionsOff(); off {
		return v
	}
	key := op.ZSetKey()
	it, errv := k.zsetOf(key, c.Now)
	if errv != nil {
		return *errv
	}
	switch op := op.(type) {
	case command.ZAdd:
		return k.zadd(it, op, c)
	case command.ZRem:
		if it == nil {
			return resp.Zero
		}
		z := it.coll.zset.clone()
		n := 0
		for _, name := range op.Members {
			if m, ok := z.get(name); ok {
				z.del(m)
				n++
			}
		}
		if n > 0 {
			k.storeZSet(key, it, z, c)
		}
		return resp.Int(int64(n))
	case command.ZRemRange:
		if it == nil {
			return resp.Zero
		}
		z := it.coll.zset
		var lo, hi int
		if op.By == command.ZByRank {
			lo, hi = rankInterval(op.Start, op.Stop, z.len())
		} else {
			lo, hi = z.interval(op.ZInterval)
		}
		if lo == hi {
			return resp.Zero
		}
		z = z.clone()
		for i := lo; i < hi; i++ {
			m, _ := z.byScore.DeleteAt(lo)
			z.byName.Delete(m)
		}
		k.storeZSet(key, it, z, c)
		return resp.Int(int64(hi - lo))
	case command.ZPop:
		if op.Count == 0 || it == nil {
			return resp.EmptyList
		}
		n := max(op.Count, 1) // -1: one member, a flat reply
		popped, _ := k.zpop(key, op.Max, int(min(n, math.MaxInt32)), c)
		out := make([]resp.Value, 0, 2*len(popped))
		for _, m := range popped {
			out = append(out, resp.BulkRef(m.name), zscoreReply(m.score))
		}
		if op.Count < 0 {
			return resp.Array(out...)
		}
		return zpairs(out)
	}
	return resp.Error("ERR internal: not a sorted-set write")
}

// zpop removes up to count (at least 1) members from the low end of the
// sorted set at key (the high end when max), as a write, and returns them in
// the order popped; the key is deleted once empty, as Redis does. ok is false
// when key holds no sorted set (absent, expired or another kind): nothing
// changes then. It is the pop of ZPOPMIN/ZPOPMAX, and of the blocking
// BZPOPMIN/BZPOPMAX once they have a set to pop from. O(count · log n).
func (k *Keyspace) zpop(key []byte, max bool, count int, c Ctx) (popped []zmember, ok bool) {
	it, errv := k.zsetOf(key, c.Now)
	if it == nil || errv != nil || count < 1 {
		return nil, false
	}
	z := it.coll.zset.clone()
	count = min(count, z.len())
	popped = make([]zmember, 0, count)
	for ; count > 0; count-- {
		var m zmember
		if max {
			m, _ = z.byScore.PopMax()
		} else {
			m, _ = z.byScore.PopMin()
		}
		z.byName.Delete(m)
		popped = append(popped, m)
	}
	k.storeZSet(key, it, z, c)
	return popped, true
}

// zadd is ZADD and ZINCRBY, as Redis's zaddGenericCommand and zsetAdd.
func (k *Keyspace) zadd(it *item, op command.ZAdd, c Ctx) resp.Value {
	if it == nil && op.XX {
		if op.Incr {
			return resp.Nil
		}
		return resp.Zero
	}
	var z *zset
	if it != nil {
		z = it.coll.zset.clone()
	} else {
		z = newZSet()
	}
	added, updated, processed := 0, 0, 0
	var score float64
	for i, name := range op.Members {
		s := op.Scores[i]
		if cur, ok := z.get(name); ok {
			if op.NX {
				continue
			}
			if op.Incr {
				s += cur.score
				if math.IsNaN(s) {
					// Redis has applied the pairs before this one: with INCR
					// there are none.
					return command.ErrScoreNaN.Reply()
				}
			}
			if (op.LT && s >= cur.score) || (op.GT && s <= cur.score) {
				continue
			}
			processed++
			score = s
			if s != cur.score {
				z.put(cur.name, s)
				updated++
			}
			continue
		}
		if op.XX {
			continue
		}
		processed++
		score = s
		z.put(string(name), s)
		added++
	}
	if added+updated > 0 {
		k.storeZSet(op.Key, it, z, c)
	}
	if op.Incr {
		if processed == 0 {
			return resp.Nil
		}
		return zscoreReply(score)
	}
	if op.CH {
		return resp.Int(int64(added + updated))
	}
	return resp.Int(int64(added))
}

// members is z's members in order (snapshots, slot moves, tests).
func (z *zset) members() []zmember {
	out := make([]zmember, 0, z.len())
	z.byScore.Scan(func(m zmember) bool { out = append(out, m); return true })
	return out
}

// equal reports whether z and o hold the same members and scores (tests).
func (z *zset) equal(o *zset) bool {
	a, b := z.members(), o.members()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || math.Float64bits(a[i].score) != math.Float64bits(b[i].score) {
			return false
		}
	}
	return true
}

// appendZSet appends z in the snapshot format: the member count, then each
// member in order, its name (length-prefixed) and its score's IEEE 754 bits,
// as uvarints.
func appendZSet(buf []byte, z *zset) []byte {
	buf = binary.AppendUvarint(buf, uint64(z.len()))
	z.byScore.Scan(func(m zmember) bool {
		buf = binary.AppendUvarint(buf, uint64(len(m.name)))
		buf = append(buf, m.name...)
		buf = binary.AppendUvarint(buf, math.Float64bits(m.score))
		return true
	})
	return buf
}

// readZSet reads what appendZSet wrote.
func readZSet(br *bufio.Reader) (*zset, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if n == 0 || n > 1<<32 {
		return nil, errors.New("bad member count")
	}
	z := newZSet()
	for ; n > 0; n-- {
		name, err := readBytes(br)
		if err != nil {
			return nil, err
		}
		bits, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		f := math.Float64frombits(bits)
		if _, dup := z.get(name); dup || math.IsNaN(f) {
			return nil, errors.New("bad sorted set member")
		}
		z.put(string(name), f)
	}
	return z, nil
}

// ZMember is one member of an exported sorted set.
type ZMember struct {
	Name  []byte
	Score float64
}

// exportZSet is z's members in order, for an Export.
func exportZSet(z *zset) []ZMember {
	out := make([]ZMember, 0, z.len())
	z.byScore.Scan(func(m zmember) bool {
		out = append(out, ZMember{Name: []byte(m.name), Score: m.score})
		return true
	})
	return out
}

// importZSet builds the sorted set of an exported item; ok is false for an
// empty set, a NaN score or a member given twice.
func importZSet(members []ZMember) (*zset, bool) {
	z := newZSet()
	for _, m := range members {
		if _, dup := z.get(m.Name); dup || math.IsNaN(m.Score) {
			return nil, false
		}
		z.put(string(m.Name), m.Score)
	}
	return z, z.len() > 0
}

// scoreBits and scoreOfBits are a score's encoding in snapshots and slot
// exports: its IEEE 754 bits.
func scoreBits(f float64) uint64   { return math.Float64bits(f) }
func scoreOfBits(b uint64) float64 { return math.Float64frombits(b) }
