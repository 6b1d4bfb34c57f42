package raftstore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// waitBoard connects blocked LOCK.ACQUIREs on this node with the wakes the
// state machine emits when it grants or drops their waiters. Every node applies
// every entry, so a client blocked on a follower is woken by the follower's own
// apply of the granting entry: no polling, no message from the leader.
//
// A wake may be applied before the blocked request learns its waiter id (the
// leader's QUEUED reply travels back while this node applies on); such wakes are
// kept in recent, bounded, for the request to find when it registers. If one is
// ever pushed out, the request's own timeout still settles the outcome through
// the log (LOCK.CANCEL answers the token of a waiter that was granted).
type waitBoard struct {
	mu      sync.Mutex
	waiting map[uint64]chan uint64
	recent  map[uint64]uint64
	order   []uint64 // recent's keys, oldest first
}

// recentWakes bounds the wakes kept for requests that have not registered yet.
const recentWakes = 8192

// movedWake is the outcome of a waiter whose name's slot moved to another
// group: the node queues the request again there (Node.acquire).
const movedWake = ^uint64(0)

// deliver hands the wakes of applied entries to the requests waiting for them.
// It returns how many of them no request on this node was waiting for yet
// (their requests wait on other nodes, or have not registered). Called from
// the apply goroutine; never blocks.
func (b *waitBoard) deliver(ws []fsm.Wake) (unclaimed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range ws {
		if w.Moved {
			w.Token = movedWake
		}
		if ch, ok := b.waiting[w.Waiter]; ok {
			delete(b.waiting, w.Waiter)
			ch <- w.Token
			continue
		}
		unclaimed++
		if b.recent == nil {
			b.recent = map[uint64]uint64{}
		}
		if tok, seen := b.recent[w.Waiter]; seen && tok != 0 {
			continue // a grant is never overwritten by a later drop
		}
		if _, seen := b.recent[w.Waiter]; !seen {
			b.order = append(b.order, w.Waiter)
		}
		b.recent[w.Waiter] = w.Token
		for len(b.order) > recentWakes {
			delete(b.recent, b.order[0])
			b.order = b.order[1:]
		}
	}
	return unclaimed
}

// register returns the channel on which waiter id's outcome (its token, 0 for
// none) arrives; it is buffered, so delivery never blocks.
func (b *waitBoard) register(id uint64) chan uint64 {
	ch := make(chan uint64, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if tok, ok := b.recent[id]; ok {
		delete(b.recent, id)
		ch <- tok
		return ch
	}
	if b.waiting == nil {
		b.waiting = map[uint64]chan uint64{}
	}
	b.waiting[id] = ch
	return ch
}

func (b *waitBoard) unregister(id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiting, id)
}

// count is the number of requests blocked on this node.
func (b *waitBoard) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

// Do executes a batch of commands (one client's pipeline) in order and returns
// one reply per command. A LOCK.ACQUIRE with WAIT blocks the batch (and only
// this batch: other clients are served meanwhile) until it is granted, its wait
// ends, or ctx is cancelled (the client went away); the commands after it run
// only then, as in Redis.
func (s *Store) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	start := time.Now()
	for i, r := range reqs {
		if !r.Blocks() {
			continue
		}
		op := r.Op.(command.LockAcquire)
		out := make([]resp.Value, 0, len(reqs))
		out = append(out, s.route(ctx, reqs[:i+1])...)
		if id, queued := fsm.QueuedWaiter(out[i]); queued {
			out[i] = s.awaitGrant(ctx, r, op, id, start)
		}
		return append(out, s.Do(ctx, reqs[i+1:])...)
	}
	return s.route(ctx, reqs)
}

// route runs a batch here (leader) or forwards it to the leader.
func (s *Store) route(ctx context.Context, reqs []command.Request) []resp.Value {
	if len(reqs) == 0 {
		return nil
	}
	// While there is no leader (an election), wait — bounded — until this node
	// serves or another node is known to lead, then run or forward.
	if !s.ready.Load() {
		s.awaitLeader(ctx)
	}
	if addr, ok := s.leaderToForward(); ok {
		return s.forwardBatch(ctx, addr, reqs)
	}
	return s.doLocal(ctx, reqs)
}

// awaitGrant waits for the outcome of a queued acquire: the wake of the entry
// that granted or dropped it, or the end of the client's wait (measured from
// when the request arrived), or the client's disconnection. When the wait ends
// here first, a LOCK.CANCEL goes through the log and decides: a waiter granted
// meanwhile answers its token (a disconnected client's grant is given back).
func (s *Store) awaitGrant(ctx context.Context, r command.Request, op command.LockAcquire, id uint64, start time.Time) resp.Value {
	ch := s.waits.register(id)
	defer s.waits.unregister(id)
	timer := time.NewTimer(time.Until(start.Add(time.Duration(op.Wait) * time.Millisecond)))
	defer timer.Stop()
	release := false
	select {
	case tok := <-ch:
		switch tok {
		case 0:
			return resp.Nil
		case movedWake:
			return resp.Error(string(command.MovedError(shard.Slot(op.Name))))
		}
		return resp.Int(int64(tok))
	case <-timer.C:
	case <-ctx.Done():
		release = true
	case <-s.closed:
		return resp.Error(ErrUnknownOutcome.Error())
	}
	v := s.cancelWaiter(op.Name, id, release, ch)
	if release && !v.IsError() {
		return resp.Nil // any grant was given back
	}
	return v
}

// cancelWaiter withdraws waiter id through the log, retrying (bounded) while
// there is no leader; LOCK.CANCEL is idempotent.
func (s *Store) cancelWaiter(name []byte, id uint64, release bool, ch chan uint64) resp.Value {
	args := [][]byte{[]byte("LOCK.CANCEL"), name, strconv.AppendUint(nil, id, 10)}
	if release {
		args = append(args, []byte("RELEASE"))
	}
	cancelReq, err := request("", args)
	if err != nil {
		return resp.Error("ERR internal: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout+electionWait)
	defer cancel()
	for {
		v := s.route(ctx, []command.Request{cancelReq})[0]
		if !v.IsError() {
			return v
		}
		select {
		case tok := <-ch: // the wake arrived while the cancel was refused
			switch tok {
			case 0:
				return resp.Nil
			case movedWake:
				return resp.Error(string(command.MovedError(shard.Slot(name))))
			}
			return resp.Int(int64(tok))
		case <-ctx.Done():
			return v
		case <-s.closed:
			return v
		case <-time.After(20 * time.Millisecond):
		}
	}
}
