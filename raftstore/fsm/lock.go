package fsm

import (
	"bytes"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
)

// KindLock is a lock record (LOCK.* commands): its mode and holders, each with
// its own fencing token and lease.
const KindLock Kind = 3

// lockRec is a lock record. Like every item it is immutable once stored: a
// change stores a copy.
type lockRec struct {
	mode    command.LockMode
	limit   int64 // semaphore size; 1 exclusive; 0 shared (unbounded)
	holders []holder
}

type holder struct {
	owner    []byte
	session  uint64 // 0: a lease; else held while the session lives
	token    uint64
	count    int64 // re-entry count (REENTRANT), 1 otherwise
	since    int64 // log time of the grant
	deadline int64 // log time the lease ends
}

// live returns the holders whose lease has not ended at now.
func (r *lockRec) live(now int64) []holder {
	var out []holder
	for _, h := range r.holders {
		if h.deadline > now {
			out = append(out, h)
		}
	}
	return out
}

// lockOf returns the live lock record at name: (nil, nil) when free or absent,
// an error reply when the key holds another type.
func (k *Keyspace) lockOf(name []byte, now int64) (*item, []holder, *resp.Value) {
	it := k.lookup(name, now)
	if it == nil {
		return nil, nil, nil
	}
	if it.kind != KindLock {
		return nil, nil, &wrongType
	}
	return it, it.lock.live(now), nil
}

// storeLock stores a record with the given holders (none: the key is deleted).
// The item's deadline is the latest lease, so an abandoned lock disappears.
func (k *Keyspace) storeLock(name []byte, old *item, rec lockRec, token uint64) {
	if len(rec.holders) == 0 {
		if old != nil {
			k.remove(old)
		}
		return
	}
	var deadline int64
	for _, h := range rec.holders {
		deadline = max(deadline, h.deadline)
	}
	if old != nil && token == 0 {
		token = old.token
	}
	k.putItem(&item{hash: hashKey(name), key: string(name), kind: KindLock, lock: &rec, deadline: deadline, token: token})
}

// LOCK.ACQUIRE name owner [PX ms] [SHARED | LIMIT n] [REENTRANT]: the token of
// the grant, or nil when the lock is not available. An owner that already holds
// the lock gets its grant back (idempotent after an unknown outcome); with
// REENTRANT the hold is counted.
func (k *Keyspace) lockAcquire(op command.LockAcquire, c Ctx) resp.Value {
	it, live, errv := k.lockOf(op.Name, c.Now)
	if errv != nil {
		return *errv
	}
	deadline := addSat(c.Now, op.TTL)
	if op.Session != 0 {
		if _, ok := k.sessions[op.Session]; !ok {
			return resp.Error(string(command.ErrNoSession))
		}
		deadline = sessionBound
		defer k.sessionHold(op.Session, op.Name)
	}
	if len(live) > 0 {
		rec := it.lock
		if rec.mode != op.Mode {
			return resp.Nil
		}
		if rec.mode == command.LockSemaphore && rec.limit != op.Limit {
			return resp.Error("ERR LIMIT does not match the semaphore's limit")
		}
		for i, h := range live {
			if bytes.Equal(h.owner, op.Owner) && h.session == op.Session {
				hs := append([]holder(nil), live...)
				if op.Reentrant {
					hs[i].count++
				}
				hs[i].deadline = max(hs[i].deadline, deadline)
				k.storeLock(op.Name, it, lockRec{mode: rec.mode, limit: rec.limit, holders: hs}, 0)
				return resp.Int(int64(h.token))
			}
		}
		if rec.mode == command.LockExclusive || (rec.mode == command.LockSemaphore && int64(len(live)) >= rec.limit) {
			return resp.Nil
		}
		hs := append(append([]holder(nil), live...), holder{owner: clone(op.Owner), session: op.Session, token: c.Index, count: 1, since: c.Now, deadline: deadline})
		k.storeLock(op.Name, it, lockRec{mode: rec.mode, limit: rec.limit, holders: hs}, c.Index)
		return resp.Int(int64(c.Index))
	}
	h := holder{owner: clone(op.Owner), session: op.Session, token: c.Index, count: 1, since: c.Now, deadline: deadline}
	k.storeLock(op.Name, it, lockRec{mode: op.Mode, limit: op.Limit, holders: []holder{h}}, c.Index)
	return resp.Int(int64(c.Index))
}

// findHolder returns the index of the live holder with token, or -1.
func findHolder(live []holder, token int64) int {
	for i, h := range live {
		if int64(h.token) == token {
			return i
		}
	}
	return -1
}

// changeHolder applies change to a copy of the live holders when token is one
// of them, stores the result and answers 1; 0 when the token holds nothing.
func (k *Keyspace) changeHolder(name []byte, token int64, c Ctx, change func(hs []holder, i int) []holder) resp.Value {
	it, live, errv := k.lockOf(name, c.Now)
	if errv != nil {
		return *errv
	}
	i := findHolder(live, token)
	if i < 0 {
		return resp.Zero
	}
	hs := change(append([]holder(nil), live...), i)
	k.storeLock(name, it, lockRec{mode: it.lock.mode, limit: it.lock.limit, holders: hs}, 0)
	return resp.One
}

// LOCK.RELEASE name token: 1 released (or one re-entry undone), 0 not a holder.
func (k *Keyspace) lockRelease(op command.LockRelease, c Ctx) resp.Value {
	return k.changeHolder(op.Name, op.Token, c, func(hs []holder, i int) []holder {
		if hs[i].count > 1 {
			hs[i].count--
			return hs
		}
		return append(hs[:i], hs[i+1:]...)
	})
}

// LOCK.EXTEND name token ms: 1 when the holder's lease now ends ms from now (a
// session's lock lives as long as its session: unchanged).
func (k *Keyspace) lockExtend(op command.LockExtend, c Ctx) resp.Value {
	return k.changeHolder(op.Name, op.Token, c, func(hs []holder, i int) []holder {
		if hs[i].session == 0 {
			hs[i].deadline = addSat(c.Now, op.TTL)
		}
		return hs
	})
}

// LOCK.VALIDATE name token: 1 if the token is held now (a sequencer check).
func (k *Keyspace) lockValidate(op command.LockValidate, c Ctx) resp.Value {
	_, live, errv := k.lockOf(op.Name, c.Now)
	if errv != nil {
		return *errv
	}
	if findHolder(live, op.Token) < 0 {
		return resp.Zero
	}
	return resp.One
}

var modeNames = map[command.LockMode]string{command.LockExclusive: "exclusive", command.LockShared: "shared", command.LockSemaphore: "semaphore"}

// LOCK.INFO name: mode, limit and holders (owner, token, held_for_ms, ttl_ms,
// count); nil when the lock is free.
func (k *Keyspace) lockInfo(op command.LockInfo, c Ctx) resp.Value {
	it, live, errv := k.lockOf(op.Name, c.Now)
	if errv != nil {
		return *errv
	}
	if len(live) == 0 {
		return resp.Nil
	}
	hs := make([]resp.Value, len(live))
	for i, h := range live {
		ttl := h.deadline - c.Now
		if h.session != 0 {
			ttl = -1 // as long as the session lives
		}
		hs[i] = resp.Map(
			resp.BulkString("owner"), resp.Bulk(h.owner),
			resp.BulkString("session"), resp.Int(int64(h.session)),
			resp.BulkString("token"), resp.Int(int64(h.token)),
			resp.BulkString("held_for_ms"), resp.Int(c.Now-h.since),
			resp.BulkString("ttl_ms"), resp.Int(ttl),
			resp.BulkString("count"), resp.Int(h.count),
		)
	}
	return resp.Map(
		resp.BulkString("mode"), resp.BulkString(modeNames[it.lock.mode]),
		resp.BulkString("limit"), resp.Int(it.lock.limit),
		resp.BulkString("holders"), resp.Array(hs...),
		resp.BulkString("waiters"), resp.EmptyList,
		resp.BulkString("queue_length"), resp.Zero,
	)
}
