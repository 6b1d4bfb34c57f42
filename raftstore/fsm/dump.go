package fsm

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/rdb"
	"github.com/lockd/lockd/resp"
)

// DUMP and RESTORE (issue 48): a key's value in Redis's serialization format
// (package rdb). RESTORE's payload is decoded here, when the entry is
// applied, on every replica alike (decoding is deterministic), so one entry
// creates the whole value: the restore is atomic. The value becomes an
// ordinary item through put/putItem, so WATCH versions, tracking, blocked
// pops, snapshots and slot moves treat it as any write's.

// MaxRestoreBytes bounds what RESTORE decodes, while it decodes: 64 MiB, the
// log's own limit for one entry, counted as rdb.DecodeDumpLimit counts
// (every byte decoding allocates: strings, LZF output, listpack and ziplist
// blobs; plus 64 bytes per element, a hash field and its value two, a
// sorted-set member and its score two), each charge made before its
// allocation. A payload is bounded by -max-write-bytes like any write, but
// LZF strings expand up to 88 times and a listpack entry of 2 bytes becomes
// an element of about 70 (measured): an 87 KB payload holds 3.8 million list
// elements. A value over the bound is refused as soon as the budget runs
// out (that payload after 7.7 MB of LZF output, before any element is made)
// and nothing changes.
//
// The bound is per log entry, not per RESTORE: the RESTOREs of one
// transaction or script share one budget of MaxRestoreBytes (restoreBudget),
// refused ones counting what they decoded before they stopped. A single
// RESTORE can use it all, and one entry never decodes more than one maximal
// RESTORE does. The number that settled it: the budget is a list of a
// million elements from a 22 KB payload, which RESTORE builds in 0.2 s,
// allocating 97 MiB and keeping about 70 MiB (measured,
// TestRestoreFullBudget); a budget per RESTORE would let one 4 MiB
// transaction (the default -max-write-bytes) of 180 such payloads decode
// 11 GiB in one apply, on every replica and again on every replay.
const MaxRestoreBytes = 64 << 20

// The DUMP and RESTORE errors of lockd's own (Redis has no such case).
const (
	errDumpLock             = "ERR lockd cannot DUMP a lock record: its holders, waiters and fencing tokens have no form in Redis's serialization"
	errRestoreTooLarge      = "ERR RESTORE value too large: over 67108864 bytes decoded (lockd's limit)"
	errRestoreEntryTooLarge = "ERR RESTORE value too large: over 67108864 bytes decoded by one transaction's or script's RESTOREs (lockd's limit)"
)

// restoreBudget is what the RESTOREs of the entry being applied have decoded
// (see MaxRestoreBytes). It is tied to the entry by its logical index
// (Ctx.Index, unique to each entry and shared by a transaction's or
// script's commands), so it needs no reset and nothing of it outlives the
// entry: not in a snapshot, and the same on every replica and on replay.
type restoreBudget struct {
	index uint64 // the entry whose RESTOREs used counts
	used  int64
}

// restoreLimit is how many bytes a RESTORE of the entry at c may decode:
// MaxRestoreBytes less what the entry's earlier RESTOREs decoded.
func (k *Keyspace) restoreLimit(c Ctx) int64 {
	if k.restored.index != c.Index {
		k.restored = restoreBudget{index: c.Index}
	}
	return MaxRestoreBytes - k.restored.used
}

// The RESTORE errors Redis 7.0.15 answers (restoreCommand).
const (
	errBusyKey    = "BUSYKEY Target key name already exists."
	errRestoreTTL = "ERR Invalid TTL value, must be >= 0"
)

// dump answers DUMP key: the value as a DUMP payload of RDB version 10
// (rdb.EncodeDump: Redis 7.0's encodings, strings never LZF-compressed), nil
// for a missing key, an error for a lock record.
func (k *Keyspace) dump(op command.Dump, c Ctx) resp.Value {
	it := k.lookup(op.Key, c.Now)
	if it == nil {
		return resp.Nil
	}
	v, ok := rdbValue(it)
	if !ok {
		return resp.Error(errDumpLock)
	}
	return resp.Bulk(rdb.EncodeDump(v))
}

// rdbValue is it's value as an rdb.Value; ok is false for a lock record.
func rdbValue(it *item) (v rdb.Value, ok bool) {
	switch it.kind() {
	case KindString:
		return rdb.Value{Type: rdb.String, Str: []byte(it.val())}, true
	case KindHash:
		fs := make([]rdb.Field, len(it.coll.fields))
		for i, f := range it.coll.fields {
			fs[i] = rdb.Field{Field: f.name, Value: f.val}
		}
		return rdb.Value{Type: rdb.Hash, Hash: fs}, true
	case KindZSet:
		z := it.coll.zset
		ms := make([]rdb.Member, 0, z.len())
		z.byScore.Scan(func(m zmember) bool {
			ms = append(ms, rdb.Member{Member: []byte(m.name), Score: m.score})
			return true
		})
		return rdb.Value{Type: rdb.ZSet, ZSet: ms}, true
	case KindList:
		l := it.coll.list
		elems := make([][]byte, 0, l.len())
		l.tree.Scan(func(n lnode) bool {
			elems = append(elems, n.val)
			return true
		})
		return rdb.Value{Type: rdb.List, List: elems}, true
	}
	return rdb.Value{}, false
}

// restore applies RESTORE key ttl payload [REPLACE] [ABSTTL] (IDLETIME and
// FREQ were checked by the parser and are ignored: lockd keeps no LRU or LFU
// data). Redis's order of checks: the key (BUSYKEY without REPLACE), the
// TTL, the payload's footer, its body, which lockd decodes within
// MaxRestoreBytes (less what the entry's earlier RESTOREs decoded): a value
// over it is refused as soon as decoding runs past it. Then lockd's: a type
// it does not hold (set, stream, module) is refused naming it, a sorted set
// or list while collections are off. A TTL already past
// (ABSTTL at or before now, or a relative one that overflows Redis's clock
// arithmetic) creates nothing, and REPLACE still deletes the old key: Redis
// answers OK and does the same.
func (k *Keyspace) restore(op command.Restore, c Ctx) resp.Value {
	if v, off := k.migrationOff(); off { // replica.go
		return v
	}
	old := k.lookup(op.Key, c.Now)
	if old != nil && !op.Replace {
		return resp.Error(errBusyKey)
	}
	ttl, ok := command.ParseInt(op.TTL)
	if !ok {
		return command.ErrNotInt.Reply()
	}
	if ttl < 0 {
		return resp.Error(errRestoreTTL)
	}
	limit := k.restoreLimit(c)
	v, used, err := rdb.DecodeDumpLimit(op.Payload, limit)
	k.restored.used += used
	if errors.Is(err, rdb.ErrTooLarge) {
		if limit < MaxRestoreBytes {
			return resp.Error(errRestoreEntryTooLarge)
		}
		return resp.Error(errRestoreTooLarge)
	}
	if err != nil {
		return restoreError(err)
	}
	switch v.Type {
	case rdb.Set:
		return resp.Error(unheld("set"))
	case rdb.ZSet, rdb.List:
		if r, off := k.collectionsOff(); off {
			return r
		}
	}
	var deadline int64
	expired := false
	switch {
	case ttl == 0:
	case op.AbsTTL:
		deadline = absToLog(c, ttl)
		expired = deadline <= c.Now
	case ttl > math.MaxInt64-c.Wall:
		// Redis adds its clock to the TTL unchecked: the sum wraps negative
		// and the key counts as already expired.
		expired = true
	default:
		deadline = addSat(c.Now, ttl)
	}
	if old != nil {
		k.remove(old) // REPLACE: a lock's waiters are told, as DEL tells them
	}
	if expired {
		return resp.OK
	}
	if v.Type == rdb.String {
		k.put(op.Key, v.Str, deadline, c.Index)
		return resp.OK
	}
	coll := &collection{}
	switch v.Type {
	case rdb.Hash:
		coll.fields = make([]field, len(v.Hash))
		for i, f := range v.Hash {
			coll.fields[i] = field{name: f.Field, val: f.Value}
		}
	case rdb.ZSet:
		z := newZSet()
		for _, m := range v.ZSet {
			z.put(string(m.Member), m.Score)
		}
		coll.zset = z
	case rdb.List:
		coll.list = listFrom(v.List)
	}
	it := newItem(op.Key, "")
	it.coll, it.deadline, it.token = coll, deadline, c.Index
	k.putItem(it) // a list or sorted set serves blocked pops (bpop.go)
	return resp.OK
}

// restoreError is the reply to a payload rdb.DecodeDumpLimit refused: Redis's
// texts for a bad footer and a bad body; for a stream or module value, which
// Redis would hold, an error naming the type lockd does not hold.
func restoreError(err error) resp.Value {
	if u, ok := rdb.IsUnsupported(err); ok {
		return resp.Error(unheld(u.Name))
	}
	if errors.Is(err, rdb.ErrVersionOrChecksum) {
		return resp.Error(rdb.ErrVersionOrChecksum.Error())
	}
	return resp.Error(rdb.ErrBadFormat.Error())
}

// unheld is the RESTORE error for a value of a type lockd does not hold:
// "set", "stream", or "module:<name>" (Redis's 9-character module type name).
func unheld(name string) string {
	if mod, ok := strings.CutPrefix(name, "module:"); ok {
		return "ERR lockd does not hold module values (module type " + strconv.Quote(mod) + ")"
	}
	return "ERR lockd does not hold " + name + " values"
}
