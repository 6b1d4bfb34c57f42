package raftstore

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/raftstore/command"
)

// tickPacing is the least time between two expiry ticks.
const tickPacing = 5 * time.Millisecond

// expiryWait is how long the expiry loop sleeps when the next deadline d (log
// time, ms) is still ahead of now: until d, but never longer than max. It is
// pure; d may be as far ahead as a PXAT allows, whose distance in
// nanoseconds would overflow a time.Duration.
func expiryWait(d, now int64, max time.Duration) time.Duration {
	if ms := d - now; ms < max.Milliseconds() {
		return time.Duration(ms) * time.Millisecond
	}
	return max
}

// expiryLoop is the leader's active expiry: when the earliest TTL deadline is
// reached in log time it proposes a tick entry, which removes every expired key
// on every replica at the same log position.
func (s *Store) expiryLoop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Second
		if s.ready.Load() {
			if d, ok := s.m.nextDeadline(); ok {
				now, wall := s.clock.read()
				if d <= now {
					e := command.Entry{Kind: command.KindTick, Time: now, Wall: wall}
					if err := s.applyNow(e); err != nil {
						s.log.Debug("expiry tick failed", "err", err)
						wait = 50 * time.Millisecond
					} else if s.m.grantReady() {
						// A waiter can be granted now (one grant per name per
						// entry): the next tick follows at once.
						continue
					} else {
						// Lazy expiry already hides expired keys; pacing the ticks
						// keeps a stream of short TTLs from costing one log entry
						// per millisecond.
						wait = tickPacing
					}
				} else {
					wait = expiryWait(d, now, wait)
				}
			}
		}
		timer.Reset(wait)
		kick := s.m.kick
		if wait == tickPacing {
			kick = nil // a write must not cut the pause after a tick short
		}
		select {
		case <-s.closed:
			return
		case <-kick:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// watchLeadership brings log time up to date when this node takes office: it
// waits until every earlier entry is applied (a barrier), then continues the
// clock from the highest applied log time. Until then nothing is served.
func (s *Store) watchLeadership() {
	defer s.wg.Done()
	ch := s.raft.LeaderCh()
	for {
		select {
		case <-s.closed:
			return
		case isLeader := <-ch:
			s.ready.Store(false)
			if !isLeader {
				s.log.Info("lost leadership")
				continue
			}
			if err := s.await(s.raft.Barrier(s.cfg.ApplyTimeout)); err != nil {
				s.log.Warn("leader barrier failed", "err", err)
				continue
			}
			// Nothing was proposed since the barrier (writes wait for ready), so
			// the FSM reflects every entry up to the applied index.
			s.takeover.Store(s.raft.AppliedIndex())
			s.clock.reset(s.m.now())
			s.sessions.reset(s.openSessions(), s.now())
			s.ready.Store(true)
			s.metrics.leaderChanges.Add(1)
			s.log.Info("leading", "log_time_ms", s.m.now(), "applied_index", s.raft.AppliedIndex())
			select {
			case s.m.kick <- struct{}{}:
			default:
			}
		}
	}
}

// nudgeFollowers asks nudgeLoop to tell the followers the new commit index
// now. Called from the apply goroutine when an applied entry granted or
// dropped waiters that no request on this node waits for: their requests
// block on followers, which wake them from their own apply of the entry, and
// a follower learns that the entry committed only from the leader's next
// AppendEntries, which without new writes comes only after commitTimeout.
// Never blocks; does nothing on a follower.
func (s *Store) nudgeFollowers() {
	if s.raft == nil || s.raft.State() != raft.Leader {
		return
	}
	select {
	case s.nudge <- struct{}{}:
	default: // one is pending: it carries this commit index too
	}
}

// nudgeLoop proposes a tick entry for each nudge (nudges that arrive
// meanwhile count as one): replicating it carries the leader's commit index,
// which covers the entry that woke the waiters, to every follower at once. A
// tick only expires what is due, as the expiry loop's ticks do.
func (s *Store) nudgeLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.closed:
			return
		case <-s.nudge:
		}
		// Through propose, like every write: it waits until this leader took
		// office (ready), so the tick is never stamped by a clock from an
		// earlier term, which would end leases early (found by the chaos
		// suite: a new leader applying its predecessor's last entries nudged
		// before its takeover barrier).
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
		f, err := s.propose(ctx, command.KindTick, nil)
		if err == nil {
			err = s.await(f)
		}
		cancel()
		if err != nil {
			s.log.Debug("nudge tick failed", "err", err)
		}
	}
}
