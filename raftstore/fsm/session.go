package fsm

import (
	"math"
	"sort"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// session is a client session: its TTL and the locks it holds. Whether it is
// still alive is the leader's business (keepalives are not log entries); the
// leader ends a lapsed session with a KindSessionExpire entry.
type session struct {
	ttl  int64
	name []byte
	// owner is the user who opened it (command.MayUseSession); "" none: a
	// session opened before the group's settings turned owners on, or by a
	// request that carried no user.
	owner string
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
	ID    uint64
	TTL   int64
	Owner string // the user who owns it; "" none
}

// Sessions lists the open sessions by id.
func (k *Keyspace) Sessions() []SessionInfo {
	out := make([]SessionInfo, 0, len(k.sessions))
	for id, s := range k.sessions {
		out = append(out, SessionInfo{id, s.ttl, s.owner})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// addSession stores s as session id (not open yet), counting it for its owner.
func (k *Keyspace) addSession(id uint64, s *session) {
	if k.sessions == nil {
		k.sessions = map[uint64]*session{}
	}
	k.sessions[id] = s
	if s.owner != "" {
		if k.owned == nil {
			k.owned = map[string]int{}
		}
		k.owned[s.owner]++
	}
}

// dropSession forgets session id, if it is open, and uncounts it.
func (k *Keyspace) dropSession(id uint64) {
	s, ok := k.sessions[id]
	if !ok {
		return
	}
	delete(k.sessions, id)
	if s.owner != "" {
		if k.owned[s.owner]--; k.owned[s.owner] <= 0 {
			delete(k.owned, s.owner)
		}
	}
}

// SessionOwner returns the user who owns session id ("" none) and whether the
// session is open.
func (k *Keyspace) SessionOwner(id uint64) (string, bool) {
	s, ok := k.sessions[id]
	if !ok {
		return "", false
	}
	return s.owner, true
}

// SessionsOf returns how many open sessions user owns.
func (k *Keyspace) SessionsOf(user string) int { return k.owned[user] }

// Settings returns the replicated settings (KindSettings).
func (k *Keyspace) Settings() command.Settings { return k.settings }

// CheckSessions reports, as the reply to refuse op with, whether user may not
// use the sessions op names (command.SessionIDs): NOPERM for a session that
// belongs to another user (command.MayUseSession), NOSESSION for one that is
// not open. User "" (the store itself) may use any. It changes nothing.
func (k *Keyspace) CheckSessions(op command.Op, user string) (resp.Value, bool) {
	if user == "" {
		return resp.Value{}, false
	}
	for _, id := range command.SessionIDs(op) {
		owner, ok := k.SessionOwner(id)
		if !ok {
			return command.ErrNoSession.Reply(), true
		}
		if !command.MayUseSession(k.acl, user, owner) {
			return command.ErrSessionNoPerm.Reply(), true
		}
	}
	return resp.Value{}, false
}

// userSessionCheck refuses, once the settings turn owners on, a session
// command that runs for a user (c.User: in a script of a restricted user) on
// an open session of another user (command.MayUseSession). A session that is
// not open is left to the command, which answers NOSESSION. Top-level session
// commands carry no user: the leader checks them before they are proposed
// (raftstore), against the same owners, which never change.
func (k *Keyspace) userSessionCheck(op command.Op, c Ctx) (resp.Value, bool) {
	if c.User == "" || !k.settings.Owners() {
		return resp.Value{}, false
	}
	for _, id := range command.SessionIDs(op) {
		if owner, ok := k.SessionOwner(id); ok && !command.MayUseSession(k.acl, c.User, owner) {
			return command.ErrSessionNoPerm.Reply(), true
		}
	}
	return resp.Value{}, false
}

// applySettings is a KindSettings entry: the settings replace the group's,
// except that a feature once on stays on, but for modes
// (command.ModeFeatures), which the entry turns off again. A malformed entry
// is an error reply and changes nothing.
func (k *Keyspace) applySettings(args [][]byte) resp.Value {
	s, err := command.ParseSettingsArgs(args)
	if err != nil {
		return resp.Error("ERR bad settings entry")
	}
	s.Features |= k.settings.Features &^ command.ModeFeatures
	turnsOn := s.Features &^ k.settings.Features
	k.settings = s
	if turnsOn&command.FeatureWatchDeletes != 0 {
		k.startTombstones() // watch.go
	}
	return resp.OK
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
// command.MinSessionTTL. Once the settings turn owners on, a session opened
// for a user (c.User: a KindScriptAs entry, or a script of a restricted user)
// belongs to that user, and a user who does not manage every session is
// refused past the settings' per-user cap.
func (k *Keyspace) sessionOpen(op command.SessionOpen, c Ctx) resp.Value {
	owner := ""
	if k.settings.Owners() {
		owner = c.User
	}
	if limit := k.settings.MaxSessionsPerUser; owner != "" && limit > 0 && int64(k.owned[owner]) >= limit {
		if u, ok := command.LookupUser(k.acl, owner); !ok || !u.ManagesSessions() {
			return resp.Error(string(command.ErrMaxSessions(limit)))
		}
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
	k.addSession(c.Index, &session{ttl: ttl, name: clone(op.Name), owner: owner})
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
	k.dropSession(id) // from here on view() drops the session's waiters
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
