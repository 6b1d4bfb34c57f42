package group

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Bounding forwarded calls. A follower forwards to the leader its Raft knows;
// when that leader is cut off or paused, its answer may not come back until the
// fault heals. This node's Raft notices first: it stops hearing heartbeats
// (after a heartbeat timeout it clears the leader and stands for election), or
// it hears of another leader. leaderWatch turns hashicorp/raft's
// LeaderObservation into a broadcast (next) and cancels every call in flight
// to a node that is no longer this node's view of the leader, forwardGrace
// after the change: a call that provably was not sent is then routed again
// (Store.route), one whose request was written answers UNKNOWNOUTCOME.

// forwardGrace is how long a forwarded call still waits for its answer once
// this node sees another leader, or none. A leadership transfer (leader
// spreading, a clean stop) ends the old leader's term a few milliseconds
// before its answers to what it committed arrive; the grace lets those real
// answers through instead of turning them into UNKNOWNOUTCOME.
const forwardGrace = 200 * time.Millisecond

// errLeaderChanged is the cause of a forwarded call cancelled because this
// node no longer sees its destination as the group's leader.
var errLeaderChanged = errors.New("the group's leader changed, or this node lost contact with it, while the call was in flight")

// leaderWatch follows this node's view of its group's leader. The zero value
// is ready to use; Store.watchLeader feeds it.
type leaderWatch struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every change; nil until next asks
	calls   map[*watchedCall]struct{}
}

// watchedCall is a forwarded call in flight to addr.
type watchedCall struct {
	addr   string
	cancel context.CancelCauseFunc
	armed  bool // a grace timer runs; guarded by leaderWatch.mu
}

// next returns a channel closed at the next change of the leader this node
// sees. Take it before reading the leader, so that no change is missed.
func (w *leaderWatch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

// leaderAddr is the peer address of the leader this node sees ("" for none;
// its own when it leads).
func (s *Store) leaderAddr() string {
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// trackCall registers a forwarded call to addr, to be cancelled (cause
// errLeaderChanged) forwardGrace after this node stops seeing addr as the
// leader, unless it returned first. The caller must call the returned func
// when the call returns.
func (s *Store) trackCall(addr string, cancel context.CancelCauseFunc) (untrack func()) {
	c := &watchedCall{addr: addr, cancel: cancel}
	w := &s.leaders
	w.mu.Lock()
	if w.calls == nil {
		w.calls = map[*watchedCall]struct{}{}
	}
	w.calls[c] = struct{}{}
	w.mu.Unlock()
	// A change before the registration sent no news this call hears of.
	if cur := s.leaderAddr(); cur != addr {
		w.mu.Lock()
		s.armLocked(c)
		w.mu.Unlock()
	}
	return func() {
		w.mu.Lock()
		delete(w.calls, c)
		w.mu.Unlock()
	}
}

// armLocked starts c's grace timer unless it runs already; leaders.mu is
// held. When it fires, c is cancelled if it is still in flight and this node
// still sees another leader (or none); otherwise it may be armed again.
func (s *Store) armLocked(c *watchedCall) {
	if c.armed {
		return
	}
	c.armed = true
	time.AfterFunc(forwardGrace, func() {
		cur := s.leaderAddr()
		w := &s.leaders
		w.mu.Lock()
		_, inFlight := w.calls[c]
		c.armed = false
		w.mu.Unlock()
		if inFlight && cur != c.addr {
			c.cancel(errLeaderChanged)
		}
	})
}

// watchLeader feeds s.leaders from the engine's leader changes until Close.
// A change carries nothing: each one makes it read the current leader, so a
// signal dropped while one is pending loses nothing (ch has room for one).
func (s *Store) watchLeader(ch <-chan struct{}, stop func()) {
	defer s.wg.Done()
	defer stop()
	w := &s.leaders
	for {
		select {
		case <-s.closed:
			return
		case <-ch:
		}
		cur := s.leaderAddr()
		w.mu.Lock()
		if w.changed != nil {
			close(w.changed)
			w.changed = nil
		}
		for c := range w.calls {
			if c.addr != cur {
				s.armLocked(c)
			}
		}
		w.mu.Unlock()
	}
}

// observeLeader starts watchLeader on the engine's leader changes (s.wg
// counts it).
func (s *Store) observeLeader() {
	ch := make(chan struct{}, 1)
	stop := s.raft.WatchLeader(ch)
	s.wg.Add(1)
	go s.watchLeader(ch, stop)
}

// awaitOtherLeader waits until this node sees a leader other than addr (or
// none), and reports whether it does; false when end, ctx or Close came
// first. changed is leaders.next() taken before addr was read.
func (s *Store) awaitOtherLeader(ctx context.Context, changed <-chan struct{}, addr string, end time.Time) bool {
	timer := time.NewTimer(time.Until(end))
	defer timer.Stop()
	for {
		if s.leaderAddr() != addr {
			return true
		}
		select {
		case <-changed:
			changed = s.leaders.next()
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-s.closed:
			return false
		}
	}
}
