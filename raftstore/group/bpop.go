package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// popBoard connects the blocked pops (BLPOP … BZPOPMAX) of this node's
// clients with the wakes the state machine emits for them (fsm's bpop.go).
// The node sends each client's blocking pop as POP.WAIT tag … under a tag of
// its own (newPopTag), registered here before the request leaves, and every
// outcome of a tagged pop — answered at once, served by a later write (the
// popped elements, popped in that entry on every replica), timed out by the
// log, moved with its slot, and the node's own POP.CANCEL — comes as a wake
// for its tag from this node's own apply: no polling, no message from the
// leader, and no outcome lost with a reply that did not come back.
type popBoard struct {
	mu      sync.Mutex
	waiting map[string]chan fsm.Wake
	blocked atomic.Int64 // this node's clients queued in a pop now (tryPop): INFO's blocked_clients
	timed   atomic.Int64 // of those, the ones with a timeout: INFO's clients_in_timeout_table
}

// tags returns the tags registered now.
func (b *popBoard) tags() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([][]byte, 0, len(b.waiting))
	for tag := range b.waiting {
		out = append(out, []byte(tag))
	}
	return out
}

// renewPops renews, every third of fsm.PopLease, the leases of the pops this
// node holds the clients of (POP.RENEW, up to 1000 tags an entry), until
// the store closes: a waiter whose node died lapses instead of waiting for
// ever, and takes no element meant for a live client.
func (s *Store) renewPops() {
	defer s.wg.Done()
	every := time.Duration(max(fsm.PopLease/3, 1)) * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
		}
		tags := s.pops.tags()
		for len(tags) > 0 {
			n := min(len(tags), 1000)
			req, err := ParseRequest("", append([][]byte{[]byte("POP.RENEW")}, tags[:n]...))
			tags = tags[n:]
			if err != nil {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), every)
			s.route(ctx, []command.Request{req})
			cancel()
		}
	}
}

// popTagBase makes this process's tags unlike any other's (a node ID is
// reused across restarts); popTagSeq numbers them.
var (
	popTagBase = func() string {
		var b [8]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	popTagSeq atomic.Uint64
)

// newPopTag returns a tag no other request of the cluster carries.
func (s *Store) newPopTag() []byte {
	return []byte(s.cfg.NodeID + "/" + popTagBase + "/" + strconv.FormatUint(popTagSeq.Add(1), 10))
}

// deliver hands the blocked pops' wakes among ws to the requests waiting
// for them and returns the other wakes (lock waiters') and how many pop
// wakes no request on this node was waiting for (others nodes' clients').
// Called from the apply goroutine; never blocks.
func (b *popBoard) deliver(ws []fsm.Wake) (rest []fsm.Wake, unclaimed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range ws {
		if !w.Pop {
			rest = append(rest, w)
			continue
		}
		ch, ok := b.waiting[w.Tag]
		if !ok || w.Tag == "" {
			if w.Waiter != 0 { // not an answer at once, which its node has
				unclaimed++
			}
			continue
		}
		select {
		case ch <- w:
		default: // never: a tag has at most an answer and a cancel's wake
		}
	}
	return rest, unclaimed
}

// register returns the channel on which tag's wakes arrive.
func (b *popBoard) register(tag string) chan fsm.Wake {
	ch := make(chan fsm.Wake, 4)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting == nil {
		b.waiting = map[string]chan fsm.Wake{}
	}
	b.waiting[tag] = ch
	return ch
}

func (b *popBoard) unregister(tag string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiting, tag)
}

// blockingPop runs the blocking pop r (op) for a client whose request
// arrived at start: tagged, alone through the log, then waiting for its
// outcome (awaitPop). A pop whose entry proves not to have applied (its
// reply was lost with a leader, and POP.CANCEL's wake says nothing answered
// it) is sent again, with what is left of its timeout.
func (s *Store) blockingPop(ctx context.Context, r command.Request, op command.BlockingPop, start time.Time) resp.Value {
	args := r.Args
	if op.Tag != nil { // a POP.WAIT from a client: its inner pop, under a tag of ours
		args, op.Tag = args[2:], nil
		r.Args = args
	}
	for attempt := 1; ; attempt++ {
		tag := s.newPopTag()
		ch := s.pops.register(string(tag))
		v, again := s.tryPop(ctx, r.User, args, op, tag, ch, start)
		s.pops.unregister(string(tag))
		if !again {
			return v
		}
		if attempt >= maxPopTries {
			return command.ErrorReply(ErrUnknownOutcome)
		}
		if op.Timeout > 0 {
			left := op.Timeout - time.Since(start).Milliseconds()
			if left <= 0 {
				return resp.NilArray // a timeout's reply
			}
			args = op.WithTimeout(r.Args, left)
		}
	}
}

// maxPopTries bounds how often blockingPop sends a pop again.
const maxPopTries = 3

// tryPop sends args as POP.WAIT tag args and returns the client's reply, or
// again when the pop surely did nothing and may be sent again.
func (s *Store) tryPop(ctx context.Context, user string, args [][]byte, op command.BlockingPop, tag []byte, ch chan fsm.Wake, start time.Time) (resp.Value, bool) {
	tr, err := ParseRequest(user, command.PopWaitArgs(tag, args))
	if err != nil {
		return command.ErrorReply(err), false
	}
	v := s.route(ctx, []command.Request{tr})[0]
	if _, queued := fsm.QueuedWaiter(v); !queued {
		if v.Outcome != outcome.Unknown {
			return v, false // answered at once, or refused (nothing applied)
		}
		return s.settlePop(ctx, op, tag, ch, true) // its entry may or may not apply
	}
	s.pops.blocked.Add(1) // queued: the client is blocked until tryPop returns
	defer s.pops.blocked.Add(-1)
	var timeout <-chan time.Time
	if op.Timeout > 0 {
		s.pops.timed.Add(1)
		defer s.pops.timed.Add(-1)
		timer := time.NewTimer(time.Until(start.Add(time.Duration(op.Timeout) * time.Millisecond)))
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		select {
		case w := <-ch:
			if w.Cancel { // a POP.CANCEL this node did not send
				if withdrawn(w) {
					return resp.Value{}, true // nothing popped: queue again
				}
				continue
			}
			if w.Lapsed { // its lease ran out (renewals did not commit): queue again
				return resp.Value{}, true
			}
			return popReply(w, op), false
		case <-timeout:
		case <-ctx.Done():
		case <-s.closed:
			return command.ErrorReply(ErrUnknownOutcome), false
		}
		return s.settlePop(ctx, op, tag, ch, false)
	}
}

// settlePop ends a tagged pop's wait from this node: POP.CANCEL goes through
// the log, and this node's apply decides. An answer for the tag before the
// cancel's own wake is the pop's (served, timed out, moved, or answered at
// once by an entry whose reply was lost); else a withdrawn waiter answers a
// timeout's null array — or, when its entry's outcome was unknown, nothing
// was popped and it is sent again; a cancel that found nothing, with no
// answer before it, means the pop's entry never applied: sent again.
func (s *Store) settlePop(ctx context.Context, op command.BlockingPop, tag []byte, ch chan fsm.Wake, unknown bool) (resp.Value, bool) {
	v := s.cancelPop(op.Keys[0], tag)
	bound := s.cfg.ApplyTimeout + ElectionWait
	if v.IsError() && op.Timeout > 0 {
		// The cancel may not commit: the waiter's deadline in the log ends it.
		bound += time.Duration(op.Timeout)*time.Millisecond + 2*ElectionWait
	}
	wait := time.NewTimer(bound)
	defer wait.Stop()
	for {
		select {
		case w := <-ch:
			if w.Lapsed { // gone without popping
				if unknown && ctx.Err() == nil {
					return resp.Value{}, true
				}
				return resp.NilArray, false
			}
			if !w.Cancel {
				return popReply(w, op), false
			}
			if withdrawn(w) && !unknown {
				return resp.NilArray, false // a timeout's reply
			}
			if ctx.Err() != nil {
				return resp.NilArray, false // the client is gone: nothing to send again
			}
			return resp.Value{}, true
		case <-wait.C:
			if v.IsError() {
				return v, false
			}
			return command.ErrorReply(ErrUnknownOutcome), false
		case <-s.closed:
			return command.ErrorReply(ErrUnknownOutcome), false
		}
	}
}

// withdrawn reports a POP.CANCEL's wake that removed the waiter (its reply
// 1): the pop left without popping.
func withdrawn(w fsm.Wake) bool {
	return w.Cancel && w.Reply != nil && w.Reply.Kind == resp.KindInt && w.Reply.Int == 1
}

// popReply is the client's reply to its pop's wake.
func popReply(w fsm.Wake, op command.BlockingPop) resp.Value {
	if w.Moved || w.Reply == nil {
		return command.MovedReply(shard.Slot(op.Keys[0]))
	}
	return *w.Reply
}

// cancelPop withdraws the pop tagged tag through the log (POP.CANCEL key
// tag), retrying (bounded) while there is no leader or its outcome is
// unknown; it is idempotent. Its reply matters less than its wake
// (settlePop): each applied cancel yields one, and settlePop takes the
// first.
func (s *Store) cancelPop(key, tag []byte) resp.Value {
	req, err := ParseRequest("", [][]byte{[]byte("POP.CANCEL"), key, tag})
	if err != nil {
		return resp.Error("ERR internal: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout+ElectionWait)
	defer cancel()
	for {
		v := s.route(ctx, []command.Request{req})[0]
		if !v.IsError() || !v.Outcome.Refused() && v.Outcome != outcome.Unknown {
			return v // POP.CANCEL is idempotent: an unknown outcome is tried again
		}
		if s.pause(ctx, 20*time.Millisecond) != nil {
			return v
		}
	}
}

// BlockedHere is how many of this node's clients are blocked in this group
// now — in a blocking pop queued in the log and waiting for its outcome, or
// in LOCK.ACQUIRE … WAIT — and how many of those wait with a timeout (every
// lock waiter has one): INFO's blocked_clients and clients_in_timeout_table,
// as Redis counts its blocked clients.
func (s *Store) BlockedHere() (blocked, timed int) {
	locks := s.waits.count()
	return int(s.pops.blocked.Load()) + locks, int(s.pops.timed.Load()) + locks
}

// BlockedPops is the number of blocked pops waiting in this node's replica
// of the group's state (every node's clients', not only this node's).
func (s *Store) BlockedPops() int {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.m.ks.PopWaiters()
}
