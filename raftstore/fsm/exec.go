package fsm

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/zeebo/xxh3"
)

var (
	wrongType = command.ErrWrongType.Reply()
	emptyBulk = resp.Bulk([]byte{})
)

func invalidExpire(cmd string) resp.Value {
	return resp.Error("ERR invalid expire time in '" + cmd + "' command")
}

// Exec runs one parsed op. With c.Write false it must not change anything; write
// ops are only ever executed from Apply.
func (k *Keyspace) Exec(op command.Op, c Ctx) resp.Value {
	switch op := op.(type) {
	case command.Get:
		it := k.lookup(op.Key, c.Now)
		if it == nil {
			return resp.Nil
		}
		if it.kind() != KindString {
			return wrongType
		}
		return resp.BulkRef(it.val())
	case command.Strlen:
		it := k.lookup(op.Key, c.Now)
		if it == nil {
			return resp.Zero
		}
		if it.kind() != KindString {
			return wrongType
		}
		return resp.Int(int64(len(it.val())))
	case command.Exists:
		n := 0
		for _, key := range op.Keys {
			if k.lookup(key, c.Now) != nil {
				n++
			}
		}
		return resp.Int(int64(n))
	case command.TTL:
		return k.ttl(op, c)
	case command.Type:
		it := k.lookup(op.Key, c.Now)
		if it == nil {
			return resp.Simple("none")
		}
		return resp.Simple(it.kind().String())
	case command.Object:
		return k.object(op, c) // object.go
	case command.Memory:
		return k.memory(op, c) // object.go
	case command.Digest:
		it := k.lookup(op.Key, c.Now)
		if it == nil {
			return resp.Nil
		}
		if it.kind() != KindString {
			return wrongType
		}
		return resp.BulkString(digest(it.val()))
	case command.MGet:
		out := make([]resp.Value, len(op.Keys))
		for i, key := range op.Keys {
			if it := k.lookup(key, c.Now); it != nil && it.kind() == KindString {
				out[i] = resp.BulkRef(it.val())
			} else {
				out[i] = resp.Nil
			}
		}
		return resp.Array(out...)
	case command.GetRange:
		return k.getRange(op, c)
	case command.DBSize:
		return resp.Int(int64(k.liveCount(c.Now)))
	case command.Keys:
		return k.keys(op, c)
	case command.Scan:
		return k.scan(op, c)
	case command.HGet, command.HMGet, command.HGetAll, command.HExists, command.HLen, command.HKeys, command.HVals:
		return k.hashRead(op.(command.HashOp), c)
	case command.ZCard, command.ZScore, command.ZMScore, command.ZRank, command.ZRange, command.ZCount, command.ZScan:
		return k.zsetRead(op.(command.ZSetOp), c) // zset.go
	case command.LLen, command.LRange, command.LIndex, command.LPos:
		return k.listRead(op.(command.ListOp), c) // list.go
	case command.Dump:
		return k.dump(op, c) // dump.go
	case command.ScriptExists:
		out := make([]resp.Value, len(op.SHAs))
		for i, sha := range op.SHAs {
			out[i] = resp.Zero
			if k.scripts.Exists(string(sha)) {
				out[i] = resp.One
			}
		}
		return resp.Array(out...)
	case command.Eval:
		if op.Source == nil && op.RO {
			return k.eval(op, c) // EVALSHA_RO: a read (the cache is not touched)
		}
	case command.SessionKeepalive:
		if v, refused := k.userSessionCheck(op, c); refused {
			return v
		}
		ttl, ok := k.SessionTTL(op.ID)
		if !ok {
			return command.ErrNoSession.Reply()
		}
		return resp.Int(ttl)
	case command.LockValidate:
		return k.lockValidate(op, c)
	case command.LockInfo:
		return k.lockInfo(op, c)
	case command.NamespaceGet:
		return k.namespaceGet(op)
	case command.NamespaceList:
		return k.namespaceList()
	case command.Versions:
		out := make([]resp.Value, len(op.Keys))
		for i, key := range op.Keys {
			out[i] = resp.Int(int64(k.version(key, c.Now)))
		}
		return resp.Array(out...)
	case command.Fence:
		it := k.lookup(op.Key, c.Now)
		if it == nil || (op.IfEq != nil && (it.kind() != KindString || it.val() != string(op.IfEq))) {
			return resp.Nil
		}
		return resp.Int(int64(it.token))
	}
	if !c.Write {
		return resp.Error("ERR internal: write command outside the log")
	}
	switch op := op.(type) {
	case command.Set:
		return k.set(op, c)
	case command.Restore:
		return k.restore(op, c) // dump.go
	case command.GetDel:
		it := k.lookup(op.Key, c.Now)
		if it == nil {
			return resp.Nil
		}
		if it.kind() != KindString {
			return wrongType
		}
		k.remove(it)
		return resp.BulkRef(it.val())
	case command.GetEx:
		return k.getEx(op, c)
	case command.Del:
		n := 0
		for _, key := range op.Keys {
			if it := k.lookup(key, c.Now); it != nil {
				k.remove(it)
				n++
			}
		}
		return resp.Int(int64(n))
	case command.Expire:
		return k.expire(op, c)
	case command.Persist:
		it := k.lookup(op.Key, c.Now)
		if it == nil || !it.expires() { // no TTL of its own (PTTL -1)
			return resp.Zero
		}
		k.setDeadline(it, 0)
		return resp.One
	case command.DelEx:
		return k.delEx(op, c)
	case command.Incr:
		return k.incr(op, c)
	case command.MSet:
		if op.NX {
			for i := 0; i < len(op.Pairs); i += 2 {
				if k.lookup(op.Pairs[i], c.Now) != nil {
					return resp.Zero
				}
			}
		}
		for i := 0; i < len(op.Pairs); i += 2 {
			k.put(op.Pairs[i], op.Pairs[i+1], 0, c.Index)
		}
		if op.NX {
			return resp.One
		}
		return resp.OK
	case command.Eval:
		return k.eval(op, c)
	case command.SessionOpen:
		return k.sessionOpen(op, c)
	case command.SessionClose:
		if _, ok := k.sessions[op.ID]; !ok {
			return command.ErrNoSession.Reply()
		}
		if v, refused := k.userSessionCheck(op, c); refused {
			return v
		}
		return resp.Int(int64(k.endSession(op.ID, false, c)))
	case command.LockAcquire:
		if op.Session != 0 && c.User != "" {
			if v, refused := k.userSessionCheck(op, c); refused {
				return v
			}
		}
		return k.lockAcquire(op, c)
	case command.LockRelease:
		return k.lockRelease(op, c)
	case command.LockExtend:
		return k.lockExtend(op, c)
	case command.Publish:
		// The receiver count is the delivering node's business, not the state
		// machine's: 0 here (so scripts stay deterministic); the node that
		// proposed a top-level PUBLISH replies with its own count.
		k.events = append(k.events, Event{Channel: clone(op.Channel), Message: clone(op.Message), Direct: !k.inScript})
		return resp.Zero
	case command.HSet, command.HDel, command.HIncrBy:
		return k.hashWrite(op.(command.HashOp), c)
	case command.ZAdd, command.ZRem, command.ZRemRange, command.ZPop:
		return k.zsetWrite(op.(command.ZSetOp), c) // zset.go
	case command.ListPush, command.ListPop, command.LSet, command.LRem, command.LTrim, command.LInsert:
		return k.listWrite(op.(command.ListOp), c) // list.go
	case command.LMove, command.LMPop, command.BlockingPop, command.PopCancel, command.PopRenew:
		return k.popWrite(op, c) // list.go, bpop.go
	case command.FlushAll:
		k.noteFlush() // watch.go
		k.items.Scan(func(it *item) bool {
			k.dropWaiters(it)
			return true
		})
		k.items.Clear()
		k.deadlines.Clear()
		k.lockTimers.Clear()
		k.touchAll() // events.go
		k.stats.Locks, k.stats.Holders, k.stats.Waiters = 0, 0, 0
		return resp.OK
	case command.LockCancel:
		return k.lockCancel(op, c)
	case command.NamespaceSet:
		return k.namespaceSet(op)
	case command.NamespaceDel:
		return k.namespaceDel(op)
	case command.ACLSetUser, command.ACLDelUser:
		return k.aclWrite(op, c) // acl.go
	}
	return resp.Error(fmt.Sprintf("ERR internal: no executor for %T", op))
}

// String is the name TYPE answers for the kind.
func (kind Kind) String() string {
	switch kind {
	case KindString:
		return "string"
	case KindHash:
		return "hash"
	case KindZSet:
		return "zset"
	case KindList:
		return "list"
	case KindLock:
		return "lock"
	}
	return "none"
}

// digest is Redis 8.4's DIGEST of a value: XXH3-64 as 16 lower-case hex digits.
func digest(v string) string { return fmt.Sprintf("%016x", xxh3.HashString(v)) }

// condHolds checks an IFEQ/IFNE/IFDEQ/IFDNE condition against a present value.
func condHolds(cond command.Cond, val string) bool {
	switch cond.Kind {
	case command.CondEq:
		return val == string(cond.Arg)
	case command.CondNe:
		return val != string(cond.Arg)
	case command.CondDigestEq:
		return bytes.EqualFold([]byte(digest(val)), cond.Arg)
	case command.CondDigestNe:
		return !bytes.EqualFold([]byte(digest(val)), cond.Arg)
	}
	return true
}

// deadlineFor turns an Expiry into a log-time deadline; ok is false when the time
// overflows as Redis's check against its own clock would.
func deadlineFor(e command.Expiry, c Ctx) (int64, bool) {
	switch e.Kind {
	case command.ExpireRel:
		if e.Ms > math.MaxInt64-c.Wall {
			return 0, false
		}
		return addSat(c.Now, e.Ms), true
	case command.ExpireAbs:
		return absToLog(c, e.Ms), true
	}
	return 0, true
}

// SET key value [NX|XX|IFEQ|IFNE|IFDEQ|IFDNE v] [GET] [EX|PX|EXAT|PXAT t|KEEPTTL] [FENCE]
func (k *Keyspace) set(op command.Set, c Ctx) resp.Value {
	deadline, ok := deadlineFor(op.Expire, c)
	if !ok {
		return invalidExpire(op.Cmd)
	}
	old := k.lookup(op.Key, c.Now)
	if old != nil && old.kind() != KindString && (op.Reply == command.ReplyOld || op.Cond.Kind != command.CondNone) {
		return wrongType
	}
	var oldVal resp.Value = resp.Nil
	if old != nil && op.Reply == command.ReplyOld {
		oldVal = resp.BulkRef(old.val())
	}
	write, token := true, c.Index
	switch {
	case op.NX && old != nil && k.sameGrant(op, old):
		token = old.token // the same owner asks again: its grant stands
	case op.NX && old != nil, op.XX && old == nil:
		write = false
	case op.Cond.Kind == command.CondEq || op.Cond.Kind == command.CondDigestEq:
		write = old != nil && condHolds(op.Cond, old.val())
	case op.Cond.Kind != command.CondNone:
		write = old == nil || condHolds(op.Cond, old.val())
	}
	if !write {
		switch op.Reply {
		case command.ReplyInt:
			return resp.Zero
		case command.ReplyOld:
			return oldVal
		}
		return resp.Nil
	}
	expired := false
	switch op.Expire.Kind {
	case command.ExpireKeep:
		if old != nil {
			deadline = old.deadline
		}
	case command.ExpireRel, command.ExpireAbs:
		// A deadline at or before now (an EXAT/PXAT in the past) stores a value
		// that is already gone, as in Redis.
		expired = deadline <= c.Now
	}
	it := k.put(op.Key, op.Value, deadline, token)
	if expired {
		k.remove(it)
	}
	switch op.Reply {
	case command.ReplyInt:
		return resp.One
	case command.ReplyOld:
		return oldVal
	case command.ReplyToken:
		return resp.Int(int64(token))
	}
	return resp.OK
}

// sameGrant reports whether a SET … NX on old, a live key, is a grant
// anyway: FeatureSameValueNX is on and old is a string holding exactly the
// value being set, with no other condition on the SET.
func (k *Keyspace) sameGrant(op command.Set, old *item) bool {
	return k.settings.Features&command.FeatureSameValueNX != 0 && op.Cond.Kind == command.CondNone &&
		old.kind() == KindString && old.val() == string(op.Value)
}

// GETEX key [EX|PX|EXAT|PXAT t|PERSIST]
func (k *Keyspace) getEx(op command.GetEx, c Ctx) resp.Value {
	it := k.lookup(op.Key, c.Now)
	if it == nil {
		return resp.Nil
	}
	if it.kind() != KindString {
		return wrongType
	}
	if op.ExpireOpt != "" {
		e, err := command.ParseExpiry(op.Cmd, op.ExpireOpt, op.ExpireArg)
		if err != nil {
			return errReply(err)
		}
		op.Expire = e
	}
	deadline, ok := deadlineFor(op.Expire, c)
	if !ok {
		return invalidExpire(op.Cmd)
	}
	reply := resp.BulkRef(it.val())
	switch op.Expire.Kind {
	case command.ExpireRel, command.ExpireAbs:
		if deadline <= c.Now {
			k.remove(it)
		} else {
			k.setDeadline(it, deadline)
		}
	case command.ExpirePersist:
		k.setDeadline(it, 0)
	}
	return reply
}

// EXPIRE key seconds [NX|XX|GT|LT] and its relatives.
func (k *Keyspace) expire(op command.Expire, c Ctx) resp.Value {
	var deadline int64
	if op.Abs {
		deadline = absToLog(c, op.Ms)
	} else {
		if op.Ms > math.MaxInt64-c.Wall {
			return invalidExpire(op.Cmd)
		}
		deadline = addSat(c.Now, op.Ms)
	}
	it := k.lookup(op.Key, c.Now)
	if it == nil {
		return resp.Zero
	}
	cur := it.deadline
	switch {
	case op.NX && cur != 0,
		op.XX && cur == 0,
		op.GT && (cur == 0 || deadline <= cur),
		op.LT && cur != 0 && deadline >= cur:
		return resp.Zero
	}
	if deadline <= c.Now {
		k.remove(it)
		return resp.One
	}
	k.setDeadline(it, deadline)
	return resp.One
}

// TTL, PTTL, EXPIRETIME, PEXPIRETIME key
func (k *Keyspace) ttl(op command.TTL, c Ctx) resp.Value {
	it := k.lookup(op.Key, c.Now)
	if it == nil {
		return resp.Int(-2)
	}
	if !it.expires() {
		return resp.Int(-1)
	}
	v := it.deadline - c.Now
	if op.Abs {
		v = logToAbs(c, it.deadline)
	}
	if v < 0 {
		v = 0
	}
	if !op.Millis {
		v = v/1000 + (v%1000+500)/1000 // (v+500)/1000, without overflowing near the int64 limit
	}
	return resp.Int(v)
}

// DELEX key [IFEQ|IFNE|IFDEQ|IFDNE v]
func (k *Keyspace) delEx(op command.DelEx, c Ctx) resp.Value {
	it := k.lookup(op.Key, c.Now)
	if it == nil {
		return resp.Zero
	}
	if op.Cond.Kind != command.CondNone {
		if it.kind() != KindString {
			return wrongType
		}
		if !condHolds(op.Cond, it.val()) {
			return resp.Zero
		}
	}
	k.remove(it)
	return resp.One
}

// INCR, INCRBY, DECR, DECRBY key [n]
func (k *Keyspace) incr(op command.Incr, c Ctx) resp.Value {
	it := k.lookup(op.Key, c.Now)
	var cur int64
	var deadline int64
	if it != nil {
		if it.kind() != KindString {
			return wrongType
		}
		v, ok := command.ParseInt([]byte(it.val()))
		if !ok {
			return resp.Error(string(command.ErrNotInt))
		}
		cur, deadline = v, it.deadline
	}
	if (op.By < 0 && cur < 0 && op.By < math.MinInt64-cur) || (op.By > 0 && cur > 0 && op.By > math.MaxInt64-cur) {
		return resp.Error(string(command.ErrOverflow))
	}
	cur += op.By
	k.put(op.Key, strconv.AppendInt(nil, cur, 10), deadline, c.Index)
	return resp.Int(cur)
}

// GETRANGE key start end
func (k *Keyspace) getRange(op command.GetRange, c Ctx) resp.Value {
	it := k.lookup(op.Key, c.Now)
	if it == nil {
		return emptyBulk
	}
	if it.kind() != KindString {
		return wrongType
	}
	start, end, n := op.Start, op.End, int64(len(it.val()))
	if start < 0 && end < 0 && start > end {
		return emptyBulk
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return emptyBulk
	}
	return resp.BulkRef(it.val()[start : end+1])
}

// KEYS pattern
func (k *Keyspace) keys(op command.Keys, c Ctx) resp.Value {
	out := []resp.Value{}
	all := bytes.Equal(op.Pattern, []byte("*"))
	k.items.Scan(func(it *item) bool {
		if (it.deadline == 0 || it.deadline > c.Now) && (all || command.Match(op.Pattern, []byte(it.key()))) {
			out = append(out, resp.BulkString(it.key()))
		}
		return true
	})
	return resp.Array(out...)
}

// SCAN cursor [MATCH p] [COUNT n] [TYPE t]. The cursor is the scan-order hash of
// the next key, so every key present for the whole scan is returned, whatever is
// added or removed meanwhile, as Redis guarantees.
func (k *Keyspace) scan(op command.Scan, c Ctx) resp.Value {
	keys := []resp.Value{}
	var next uint64
	var visited int64
	var lastHash uint32
	start := &item{hash: uint32(min(op.Cursor, math.MaxUint32))}
	k.items.Ascend(start, func(it *item) bool {
		if op.Cursor > math.MaxUint32 { // past every hash: the scan is over
			return false
		}
		if visited >= op.Count && it.hash != lastHash {
			next = uint64(it.hash)
			return false
		}
		visited++
		lastHash = it.hash
		if it.deadline != 0 && it.deadline <= c.Now {
			return true
		}
		if op.Match != nil && !command.Match(op.Match, []byte(it.key())) {
			return true
		}
		if op.Type != nil && !bytes.EqualFold(op.Type, []byte(it.kind().String())) {
			return true
		}
		keys = append(keys, resp.BulkString(it.key()))
		return true
	})
	return resp.Array(resp.BulkString(strconv.FormatUint(next, 10)), resp.Array(keys...))
}
