package group

import (
	"sync"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// sessionTimers is the leader's memory of when each session lapses. A keepalive
// moves a deadline here and writes nothing to the log; when a deadline passes
// the leader proposes a KindSessionExpire entry, which releases the session's
// locks on every replica. A new leader gives every session a full TTL from the
// moment it took office (it cannot know the old leader's timers), which never
// ends a session earlier than the old leader would have.
type sessionTimers struct {
	mu       sync.Mutex
	deadline map[uint64]time.Time
}

// reset starts timing every open session afresh (on takeover).
func (t *sessionTimers) reset(sessions []sessionTTL, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deadline = make(map[uint64]time.Time, len(sessions))
	for _, s := range sessions {
		t.deadline[s.id] = now.Add(time.Duration(s.ttl) * time.Millisecond)
	}
}

type sessionTTL struct {
	id  uint64
	ttl int64
}

func (t *sessionTimers) renew(id uint64, ttl int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deadline == nil {
		t.deadline = map[uint64]time.Time{}
	}
	t.deadline[id] = now.Add(time.Duration(ttl) * time.Millisecond)
}

func (t *sessionTimers) forget(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.deadline, id)
}

// lapsed returns the sessions whose deadline has passed.
func (t *sessionTimers) lapsed(now time.Time) []uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []uint64
	for id, d := range t.deadline {
		if !now.Before(d) {
			out = append(out, id)
		}
	}
	return out
}

// openSessions reads the replicated session table.
func (s *Store) openSessions() []sessionTTL {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	var out []sessionTTL
	for _, si := range s.m.ks.Sessions() {
		out = append(out, sessionTTL{si.ID, si.TTL})
	}
	return out
}

// keepalive renews a session on the leader for user: no log write. It
// answers the TTL the session now has, NOSESSION, or NOPERM when the session
// belongs to another user (command.MayUseSession; user "" is the store).
func (s *Store) keepalive(op command.SessionKeepalive, user string) resp.Value {
	s.m.mu.RLock()
	ttl, ok := s.m.ks.SessionTTL(op.ID)
	refusal, refused := s.m.ks.CheckSessions(op, user)
	s.m.mu.RUnlock()
	if !ok {
		return command.ErrNoSession.Reply()
	}
	if refused {
		return refusal
	}
	s.sessions.renew(op.ID, ttl, s.now())
	return resp.Int(ttl)
}

// noteSessionResult starts or stops timing a session after its entry applied.
func (s *Store) noteSessionResult(op command.Op, v resp.Value) {
	switch op := op.(type) {
	case command.SessionOpen:
		// Time it by the TTL the reply reports (session_id, id, ttl_ms, ttl,
		// …), which a namespace's DEFAULTTTL and MAXTTL may have changed, not
		// by the TTL the request asked for.
		if v.Kind == resp.KindMap && len(v.Elems) >= 4 {
			s.sessions.renew(uint64(v.Elems[1].Int), v.Elems[3].Int, s.now())
		}
	case command.SessionClose:
		s.sessions.forget(op.ID)
	}
}

// sessionLoop is the leader's session expiry: every 50 ms it proposes an
// expiry entry for each lapsed session.
func (s *Store) sessionLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-tick.C:
		}
		if !s.ready.Load() {
			continue
		}
		s.syncSettings() // owners.go
		for _, id := range s.sessions.lapsed(s.now()) {
			now, wall := s.clock.read()
			e := command.Entry{Kind: command.KindSessionExpire, Time: now, Wall: wall, Args: command.SessionExpireArgs(id)}
			if err := s.applyNow(e); err != nil {
				s.log.Debug("session expiry failed", "session", id, "err", err)
				break
			}
			s.sessions.forget(id)
			s.log.Info("session expired", "session", id)
		}
	}
}

func (s *Store) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}
