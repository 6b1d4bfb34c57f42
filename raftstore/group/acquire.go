package group

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
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
// none) arrives. It has room for two outcomes, this node's apply and the
// leader's answer to askLeader, so that neither sender ever blocks.
func (b *waitBoard) register(id uint64) chan uint64 {
	ch := make(chan uint64, 2)
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

// awaitGrant waits for the outcome of a queued acquire: the wake of the entry
// that granted or dropped it, or the end of the client's wait (measured from
// when the request arrived), or the client's disconnection. When the wait ends
// here first, a LOCK.CANCEL goes through the log and decides: a waiter granted
// meanwhile answers its token (a disconnected client's grant is given back).
func (s *Store) awaitGrant(ctx context.Context, r command.Request, op command.LockAcquire, id uint64, start time.Time) resp.Value {
	ch := s.waits.register(id)
	defer s.waits.unregister(id)
	end := start.Add(time.Duration(op.Wait) * time.Millisecond)
	timer := time.NewTimer(time.Until(end))
	defer timer.Stop()
	askCtx, stopAsking := context.WithDeadline(ctx, end)
	defer stopAsking()
	s.askLeader(askCtx, id, ch)
	release := false
	select {
	case tok := <-ch:
		return wakeReply(tok, op.Name)
	case <-timer.C:
	case <-ctx.Done():
		release = true
	case <-s.closed:
		return command.ErrorReply(ErrUnknownOutcome)
	}
	v := s.cancelWaiter(op.Name, id, release, ch)
	if release && !v.IsError() {
		return resp.Nil // any grant was given back
	}
	return v
}

// wakeReply is the client's reply to the outcome of its waiter on name: the
// token it was granted, nil when it was not, or MOVED when the name's slot
// moved to another group while it waited.
func wakeReply(tok uint64, name []byte) resp.Value {
	switch tok {
	case 0:
		return resp.Nil
	case movedWake:
		return command.MovedReply(shard.Slot(name))
	}
	return resp.Int(int64(tok))
}

// cancelWaiter withdraws waiter id through the log, retrying (bounded) while
// there is no leader; LOCK.CANCEL is idempotent.
func (s *Store) cancelWaiter(name []byte, id uint64, release bool, ch chan uint64) resp.Value {
	args := [][]byte{[]byte("LOCK.CANCEL"), name, strconv.AppendUint(nil, id, 10)}
	if release {
		args = append(args, []byte("RELEASE"))
	}
	cancelReq, err := ParseRequest("", args)
	if err != nil {
		return resp.Error("ERR internal: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout+ElectionWait)
	defer cancel()
	for {
		v := s.route(ctx, []command.Request{cancelReq})[0]
		if !v.IsError() {
			return v
		}
		select {
		case tok := <-ch: // the wake arrived while the cancel was refused
			return wakeReply(tok, name)
		case <-ctx.Done():
			return v
		case <-s.closed:
			return v
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// maxLeaderAsks bounds the waiters of one group on this node that ask the
// leader for their outcome at once (each holds a forwarded call); the others
// rely on this node's apply alone.
const maxLeaderAsks = 256

// askLeader, on a follower, asks the group's leader (over the peer port,
// without the log) for waiter id's outcome and hands it to ch when it comes
// first. The leader applies the granting entry before any follower, and a
// follower hears that it committed only from the leader's next
// AppendEntries: the answer spares a follower's waiter that wait. The grant is
// committed when the leader answers, so telling the client is safe. Returns
// at once; the asking ends with ctx, whose deadline is the end of the wait,
// or with an answer. The waiter is in the replicated lock record, so a new
// leader holds it too: when this node sees the leader change (or lose
// contact), the call to the old one ends (trackCall) and the new one is
// asked. This node's own apply wakes the waiter in any case.
func (s *Store) askLeader(ctx context.Context, id uint64, ch chan uint64) {
	if _, ok := s.leaderToForward(); !ok {
		return
	}
	if s.leaderAsks.Add(1) > maxLeaderAsks {
		s.leaderAsks.Add(-1)
		return
	}
	go func() {
		defer s.leaderAsks.Add(-1)
		for ctx.Err() == nil {
			changed := s.leaders.next()
			addr, ok := s.leaderToForward()
			if !ok && s.raft.State() == raft.Leader {
				return // this node's own apply wakes it first
			}
			if ok {
				if tok, ok := s.askOnce(ctx, addr, id); ok {
					select {
					case ch <- tok:
					default: // this node's apply was first
					}
					return
				}
			}
			// No answer: the wait ended, or that leader no longer leads.
			select {
			case <-changed:
			case <-ctx.Done():
				return
			case <-s.closed:
				return
			}
		}
	}()
}

// askOnce asks the leader at addr for waiter id's outcome (awaitOutcome) and
// reports it, or false when the leader's wait ended first, the call failed, or
// this node stopped seeing addr as the leader.
func (s *Store) askOnce(ctx context.Context, addr string, id uint64) (uint64, bool) {
	dl, _ := ctx.Deadline()
	ms := max(time.Until(dl).Milliseconds(), 1) // the leader waits no longer than this node
	req := command.EncodeRequests([]command.Request{{Op: command.Admin{Action: "await", ID: strconv.FormatUint(id, 10),
		Addr: strconv.FormatInt(ms, 10)}, Spec: command.AdminSpec}})
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	untrack := s.trackCall(addr, cancel)
	defer untrack()
	b, err := s.fwd.Call(ctx, addr, req)
	if err != nil {
		return 0, false
	}
	v, _, err := resp.ReadValue(b)
	if err != nil || v.Kind != resp.KindArray || len(v.Elems) != 1 || v.Elems[0].Kind != resp.KindBulk {
		return 0, false // no outcome yet (the leader's own wait ended) or an old leader
	}
	tok, err := strconv.ParseUint(v.Elems[0].String(), 10, 64)
	return tok, err == nil
}

// awaitOutcome answers a follower's askLeader: waiter id's outcome once this
// node applies it (at once when it already has), as a decimal bulk string, or
// nil when msText milliseconds (at most a minute) or ctx end first. Nothing
// goes through the log.
func (s *Store) awaitOutcome(ctx context.Context, idText, msText string) resp.Value {
	id, err1 := strconv.ParseUint(idText, 10, 64)
	ms, err2 := strconv.ParseInt(msText, 10, 64)
	if err1 != nil || err2 != nil || ms <= 0 {
		return resp.Error("ERR internal: bad waiter id or wait")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(min(ms, 60_000))*time.Millisecond)
	defer cancel()
	ch := s.waits.register(id)
	defer s.waits.unregister(id)
	select {
	case tok := <-ch:
		return resp.BulkString(strconv.FormatUint(tok, 10))
	case <-ctx.Done():
		return resp.Nil
	case <-s.closed:
		return resp.Nil
	}
}
