package fsm

import (
	"math"
	"sort"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
)

// session is a client session: its TTL and the locks it holds. Whether it is
// still alive is the leader's business (keepalives are not log entries); the
// leader ends a lapsed session with a KindSessionExpire entry.
type session struct {
	ttl   int64
	name  []byte
	locks []string // names of locks it may hold or wait for (replicated: snapshots carry it)
	// index is locks as a set, derived from it (nil until first needed; never
	// in a snapshot or shared with a Clone).
	index map[string]struct{}
}

// has reports whether name is on s's list.
func (s *session) has(name string) bool {
	if s.index == nil {
		s.index = make(map[string]struct{}, len(s.locks))
		for _, n := range s.locks {
			s.index[n] = struct{}{}
		}
	}
	_, ok := s.index[name]
	return ok
}

// SessionInfo is what the leader needs to time a session.
type SessionInfo struct {
	ID  uint64
	TTL int64
}

// Sessions lists the open sessions by id.
func (k *Keyspace) Sessions() []SessionInfo {
	out := make([]SessionInfo, 0, len(k.sessions))
	for id, s := range k.sessions {
		out = append(out, SessionInfo{id, s.ttl})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SessionTTL returns a session's TTL, if it is open.
func (k *Keyspace) SessionTTL(id uint64) (int64, bool) {
	s, ok := k.sessions[id]
	if !ok {
		return 0, false
	}
	return s.ttl, true
}

// SESSION.OPEN [TTL ms] [NAME client] [NAMESPACE prefix]: the id (this
// entry's index), the TTL the server honours and the keepalive interval (a
// third of it). A namespace's DEFAULTTTL and MAXTTL bound the TTL, never below
// command.MinSessionTTL.
func (k *Keyspace) sessionOpen(op command.SessionOpen, c Ctx) resp.Value {
	if k.sessions == nil {
		k.sessions = map[uint64]*session{}
	}
	ttl := op.TTL
	if op.Namespace != nil {
		ns := k.namespaceFor(op.Namespace)
		if !op.TTLSet && ns.DefaultTTL > 0 {
			ttl = ns.DefaultTTL
		}
		if ns.MaxTTL > 0 {
			ttl = min(ttl, ns.MaxTTL)
		}
		ttl = min(max(ttl, command.MinSessionTTL), command.MaxSessionTTL)
	}
	k.sessions[c.Index] = &session{ttl: ttl, name: clone(op.Name)}
	return resp.Map(
		resp.BulkString("session_id"), resp.Int(int64(c.Index)),
		resp.BulkString("ttl_ms"), resp.Int(ttl),
		resp.BulkString("keepalive_ms"), resp.Int(ttl/3),
	)
}

// endSession forgets a session, releases every lock it holds and withdraws its
// waiters, handing each freed lock to the next waiter in the same entry. An
// expired session (expired set: its holder failed) starts each freed lock's
// lock-delay; a closed one does not. Locks of frozen slots are left as they
// are (see thaw). It returns how many locks were released.
func (k *Keyspace) endSession(id uint64, expired bool, c Ctx) int {
	s, ok := k.sessions[id]
	if !ok {
		return 0
	}
	delete(k.sessions, id) // from here on view() drops the session's waiters
	n := 0
	for _, name := range s.locks {
		if k.frozenKey(name) {
			continue // a frozen slot's locks do not change: a thaw ends these holds
		}
		it, rec, dropped, changed, errv := k.lockOf([]byte(name), c.Now)
		if errv != nil || it == nil {
			continue
		}
		kept := rec.holders[:0:0]
		for _, h := range rec.holders {
			if h.session != id {
				kept = append(kept, h)
			}
		}
		if len(kept) != len(rec.holders) {
			n++
			changed = true
			for _, h := range rec.holders {
				if h.session != id {
					continue
				}
				if expired {
					k.holdExpired([]byte(name), h)
				} else {
					k.holdReleased([]byte(name), h)
				}
			}
			rec.holders = kept
			if expired && rec.lockDelay > 0 {
				rec.delay = max(rec.delay, addSat(c.Now, rec.lockDelay))
			}
		}
		if changed {
			k.storeLock([]byte(name), it, rec, dropped, c)
		}
	}
	if expired {
		k.publishLock(lockEvent{Event: "session-expire", Session: id, Locks: n}, nil)
	}
	return n
}

// sessionHold notes that session id may hold (or wait for) the lock name.
//
// Names stay on the list after the session lets go of them (a release, an
// expiry, a deleted key), so each call first looks at the two oldest names:
// one the session no longer holds or waits for is dropped, one it still uses
// goes to the back. A session that takes and frees many names therefore keeps
// a list of about twice what it uses, not every name it ever took. This
// depends only on the list and the keyspace, so every replica's list stays
// the same (the order decides the order in which endSession frees them).
func (k *Keyspace) sessionHold(id uint64, name []byte) {
	s := k.sessions[id]
	if s == nil { // a lease, not a session (before the copy of name below)
		return
	}
	n := string(name)
	if s.has(n) { // has builds s.index if needed: it is set below
		return
	}
	for range min(2, len(s.locks)) {
		old := s.locks[0]
		s.locks = s.locks[1:]
		if k.sessionUses(id, old) {
			s.locks = append(s.locks, old)
		} else {
			delete(s.index, old)
		}
	}
	s.locks = append(s.locks, n)
	s.index[n] = struct{}{}
}

// sessionUses reports whether the lock record at name has a holder or a
// waiter of session id, expired ones included (those are view's to decide).
func (k *Keyspace) sessionUses(id uint64, name string) bool {
	it, ok := k.items.Get(probe([]byte(name)))
	if !ok || it.kind() != KindLock {
		return false
	}
	for h := range it.holders {
		if h.session == id {
			return true
		}
	}
	for _, w := range it.lock.waiters() {
		if w.session == id {
			return true
		}
	}
	return false
}

// sessionBound is the lease deadline of a holder that a session keeps alive.
const sessionBound = math.MaxInt64
