package group

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
)

// Lingering: a LOCK.ACQUIRE … WAIT whose name is held by someone else joins
// the name's queue, and its client hears nothing until a release grants it,
// so nobody waits for that entry to commit. Proposed alone, though, it takes
// a commit (an fsync on a majority) of its own, and on a hot name it arrives
// just before the write that matters: the holder who was granted by the same
// release sends its LOCK.RELEASE a moment later, and that release — the next
// hand-over — then waits behind the queued acquire's fsync (issue 9: two log
// writes per hand-over on the one-group cluster, 9,332 for 5,023 hand-overs).
//
// So the leader holds such an acquire back (lingers it) for at most
// lingerMax and proposes it just before the next write of its group, into
// the same batch: the two share one commit. Held entries are proposed in the
// order they were held, before the write that releases them (and before any
// write proposed after it), and a held entry whose time is up releases every
// held entry the same way, so the log keeps the order in which the leader
// took them. Only the order of entries
// in the log decides anything (FIFO position, grants); a held entry is
// stamped with log time when it is proposed.
//
// The guess that an acquire will queue (fsm.Keyspace.WouldWait) reads the
// leader's applied state; a wrong guess costs that acquire at most
// lingerMax, never a changed outcome.

// lingerMax bounds how long an acquire that is expected to queue waits for
// another write to share its commit. A hand-over's release follows the
// queued acquire by about a client round trip, 0.1-0.3 ms on an idle
// machine but often more than 1 ms on a loaded one; and waiting longer costs
// nothing, as the acquire's client waits for a release anyway (only an
// acquire the guess got wrong pays it). One group, 3 nodes, 16 waiters on
// one name, 8 s on the 2-core VM: with 1 ms 32% of the lingering acquires
// went alone (1.28 log writes per hand-over, 626 hand-overs/s), with 3 ms
// 0.8% (1.02, 814/s); `make bench-ab AB_GROUPS=1`, 4 pairs: 1.17x the
// hand-overs, a single node (8 pairs) 0.77x and 1.06x: noise.
const lingerMax = 3 * time.Millisecond

// lingering holds the entries a leader lingers.
type lingering struct {
	mu   sync.Mutex
	held []*heldEntry
	n    atomic.Int32 // len(held), zeroed once they are proposed: a write with nothing to release skips the lock
}

// heldEntry is one lingering proposal; fut receives its future once it is
// proposed (by whichever goroutine releases it).
type heldEntry struct {
	args [][]byte // a command entry's (command.KindCommand)
	fut  chan raft.ApplyFuture
}

// proposeLate proposes the blocking acquire op (its command entry's args)
// with the next write of this group, or after lingerMax, whichever comes
// first, when the machine expects it to queue; else at once. Called from
// doLocal for the last request of a batch (Do ends one at a blocking
// acquire); blocks for at most lingerMax before it hands the entry to Raft.
func (s *Store) proposeLate(ctx context.Context, op command.LockAcquire, args [][]byte) (raft.ApplyFuture, error) {
	if !s.ready.Load() {
		return s.propose(ctx, command.KindCommand, args)
	}
	if now, _ := s.clock.read(); !s.m.wouldWait(op, now) {
		return s.propose(ctx, command.KindCommand, args)
	}
	h := &heldEntry{args: args, fut: make(chan raft.ApplyFuture, 1)}
	s.linger.mu.Lock()
	s.linger.held = append(s.linger.held, h)
	s.linger.n.Store(int32(len(s.linger.held)))
	s.linger.mu.Unlock()
	s.metrics.lingered.Add(1)
	wait := lingerMax
	if s.cfg.lingerFor > 0 {
		wait = s.cfg.lingerFor
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case f := <-h.fut:
		return f, nil
	case <-t.C:
	case <-ctx.Done():
	case <-s.closed:
	}
	s.metrics.lingeredAlone.Add(int64(s.releaseHeld())) // every held entry, h among them, unless a write took them meanwhile
	return <-h.fut, nil
}

// releaseHeld proposes every lingering entry, in the order they were held,
// and returns how many it proposed. propose and applyNow call it before they
// hand their own entry to Raft, so that the held entries and theirs share a
// batch; a write that finds others releasing waits until they are proposed,
// so it never goes into the log before them. It blocks only as propose does,
// while Raft's (buffered) apply channel is full; a held entry's future
// answers ErrNotLeader if this node no longer leads.
func (s *Store) releaseHeld() int {
	if s.linger.n.Load() == 0 {
		return 0
	}
	s.linger.mu.Lock()
	defer s.linger.mu.Unlock()
	held := s.linger.held
	for _, h := range held {
		now, wall := s.clock.read()
		e := command.Entry{Kind: command.KindCommand, Time: now, Wall: wall, Args: h.args}
		h.fut <- s.raft.Apply(e.Encode(), 0)
	}
	s.linger.held = nil
	s.linger.n.Store(0)
	return len(held)
}
