package group

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/command"
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
// clock from the highest applied log time. Until then nothing is served. A
// barrier that fails while this node still leads (its enqueue timed out, or a
// leadership transfer was under way and failed) is tried again after
// takeoverRetry: otherwise the group would keep a leader that never serves,
// since nothing else moves its leadership while it answers its followers.
func (s *Store) watchLeadership() {
	defer s.wg.Done()
	ch := s.raft.LeaderCh()
	var retry <-chan time.Time // armed while a failed takeover waits to be tried again
	for {
		select {
		case <-s.closed:
			return
		case isLeader := <-ch:
			s.ready.Store(false)
			retry = nil
			if !isLeader {
				s.log.Info("lost leadership")
				continue
			}
		case <-retry:
			retry = nil
			if s.raft.State() != raft.Leader {
				continue // the news is on its way on ch
			}
		}
		if !s.takeOffice() {
			retry = time.After(takeoverRetry)
		}
	}
}

// takeoverRetry is how long a leader whose takeover barrier failed waits
// before it tries again.
const takeoverRetry = 100 * time.Millisecond

// takeOffice runs a new leader's takeover (see watchLeadership) and reports
// whether this node now serves. On watchLeadership's goroutine only.
func (s *Store) takeOffice() bool {
	barrier := s.raft.Barrier(s.cfg.ApplyTimeout)
	err := s.await(barrier)
	if err == nil && s.cfg.refuseTakeover != nil && s.cfg.refuseTakeover() {
		err = raft.ErrLeadershipTransferInProgress // tests only
	}
	if err != nil {
		s.log.Warn("leader barrier failed", "err", err)
		return false
	}
	// Nothing was proposed since the barrier (writes wait for ready), so
	// the FSM reflects every entry up to the barrier's.
	s.takeover.Store(takeoverIndex(barrier, s.raft.AppliedIndex()))
	s.clock.reset(s.m.now())
	s.sessions.reset(s.openSessions(), s.now())
	// Before the first client write: a lone voter (or a group whose members
	// all said they understand owners) records owners from its first session.
	s.syncSettings()
	s.ready.Store(true)
	s.metrics.leaderChanges.Add(1)
	s.log.Info("leading", "log_time_ms", s.m.now(), "applied_index", s.takeover.Load())
	select {
	case s.m.kick <- struct{}{}:
	default:
	}
	return true
}

// takeoverIndex is the index up to which a new leader's state machine is
// complete once its takeover barrier has answered: the barrier's own index.
// Not hashicorp/raft's AppliedIndex at that moment, which its main loop
// records only after it handed the batch to the FSM goroutine, and that
// goroutine may answer the barrier first: a takeover read that lagging index
// (35, with the new term's no-op and barrier at 36 and 37), and reads, which
// wait until the machine has applied the commit index (37) whenever it is
// above the takeover, waited for entries the machine never sees (no-ops and
// barriers are not applied) until their timeout, for as long as no write
// came (TestNodeKillMovesLeaders, once in about 50 runs on a loaded CI
// machine). applied is the fallback should the future not carry an index.
func takeoverIndex(barrier raft.Future, applied uint64) uint64 {
	if f, ok := barrier.(raft.IndexFuture); ok {
		return max(f.Index(), applied)
	}
	return applied
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
