package group

import (
	"context"
	"time"
)

// ReadBarrier makes the reads that follow linearizable: after it returns, this
// node has confirmed with a quorum (after the reads arrived) that it still leads,
// and has applied everything committed by then.
func (s *Store) ReadBarrier(ctx context.Context) error {
	if !s.ready.Load() {
		if err := s.waitReady(ctx); err != nil {
			return ErrNotReadable
		}
	}
	return s.verify(ctx)
}

// verifyRound is one leadership confirmation shared by every read that arrived
// before it started.
type verifyRound struct {
	done chan struct{}
	err  error
}

func (s *Store) verify(ctx context.Context) error {
	s.rmu.Lock()
	if s.next == nil {
		s.next = &verifyRound{done: make(chan struct{})}
	}
	r := s.next
	if s.inflight == nil {
		s.startRoundLocked()
	}
	s.rmu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ErrNotReadable
	case <-s.closed:
		return ErrClosed
	}
}

func (s *Store) startRoundLocked() {
	r := s.next
	s.next = nil
	s.inflight = r
	go func() {
		commit := s.raft.CommitIndex()
		if err := s.raft.VerifyLeader().Error(); err != nil {
			r.err = ErrNotReadable
		} else {
			r.err = s.waitApplied(commit)
		}
		close(r.done)
		s.rmu.Lock()
		s.inflight = nil
		if s.next != nil {
			s.startRoundLocked()
		}
		s.rmu.Unlock()
	}()
}

// waitApplied waits until the state machine reflects every entry up to index.
//
// hashicorp/raft's own AppliedIndex cannot be used: it moves when a batch is
// handed to the FSM goroutine, before the FSM has applied it. The machine counts
// what it applied, but it never sees no-op and barrier entries; the only such
// entries a leader commits are those of its takeover, and when the takeover
// barrier returned the machine had applied everything up to it (s.takeover).
func (s *Store) waitApplied(index uint64) error {
	if index <= s.takeover.Load() {
		return nil
	}
	deadline := time.NewTimer(s.cfg.ApplyTimeout)
	defer deadline.Stop()
	select {
	case <-s.m.appliedCh(index):
		return nil
	case <-deadline.C:
		return ErrNotReadable
	case <-s.closed:
		return ErrClosed
	}
}
