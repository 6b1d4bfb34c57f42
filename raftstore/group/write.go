package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
)

// ParseRequest builds the Request of a command that the store itself sends (a
// cancel, a session close or keepalive, one group's part of a split command),
// parsed as the front door would parse it.
func ParseRequest(user string, args [][]byte) (command.Request, error) {
	op, spec, err := command.Parse(args)
	if err != nil {
		return command.Request{}, err
	}
	return command.Request{Args: args, Op: op, Spec: spec, User: user}, nil
}

// ElectionWait bounds how long a request waits for an election to produce a
// leader (a few election timeouts) before it is answered TRYAGAIN.
const ElectionWait = 2 * time.Second

// doLocal executes a batch on this node. A run of plain client writes is
// proposed as one batch entry (command.KindBatch; one alone as a command
// entry; every write an entry of its own with Config.NoBatchEntries, or
// while a member of the group has not said it applies them: batchEntries),
// other writes as entries of their own, back to back, so that Raft commits
// them with one fsync; log order is request order. A read waits for the
// writes before it, so it sees them.
func (s *Store) doLocal(ctx context.Context, reqs []command.Request) []resp.Value {
	out := make([]resp.Value, len(reqs))
	type pending struct {
		reqs []int // the requests the entry answers, in its order
		f    raft.ApplyFuture
		at   time.Time
	}
	var inflight []pending
	// Whether writes may share batch entries: asked once, at the first write
	// that could (the answer reads Raft's configuration: reads never need it).
	batch, batchAsked := len(reqs) > 1, false
	// A run of plain commands goes into one batch entry (command.KindBatch).
	var group []int
	var groupArgs [][][]byte
	groupSize := 0
	propose := func() {
		if len(group) == 0 {
			return
		}
		kind, args := command.KindCommand, groupArgs[0]
		if len(group) > 1 {
			kind, args = command.KindBatch, command.BatchArgs(groupArgs)
		}
		if f, err := s.propose(ctx, kind, args); err != nil {
			for _, i := range group {
				out[i] = command.ErrorReply(err)
			}
		} else {
			inflight = append(inflight, pending{reqs: group, f: f, at: time.Now()})
		}
		group, groupArgs, groupSize = nil, nil, 0
	}
	flush := func() {
		propose()
		if len(inflight) == 0 {
			return
		}
		fs := make([]raft.Future, len(inflight))
		for j, p := range inflight {
			fs[j] = p.f
		}
		err := s.awaitReplies(fs)
		for _, p := range inflight {
			took := time.Since(p.at).Seconds()
			for j, i := range p.reqs {
				if err != nil {
					out[i] = command.ErrorReply(ErrUnknownOutcome)
					continue
				}
				s.metrics.commit.Observe(took) // one sample per write, batched or not
				out[i] = s.reply(p.f, j)
				s.noteSessionResult(reqs[i].Op, out[i])
			}
		}
		inflight = nil
	}
	verified := false // a leadership confirmation covers the run of reads after it
	// One reading of the log clock serves the run of reads after a write:
	// they run at one instant, as a pipeline's reads in Redis run within the
	// same millisecond.
	var readNow, readWall int64
	clockRead := false
	for i, r := range reqs {
		if v, limited := s.rateLimited(r); limited {
			out[i] = v
			continue
		}
		if op, ok := r.Op.(command.SessionKeepalive); ok {
			flush()
			if err := s.waitReady(ctx); err != nil {
				out[i] = command.ErrorReply(err)
			} else {
				out[i] = s.keepalive(op, r.User)
			}
			clockRead = false // the reads after it read the clock again
			continue
		}
		if r.User != "" {
			if v, refused := s.checkSessions(r); refused { // owners.go
				out[i] = v
				continue
			}
		}
		need := r.Spec.Flags
		if tx, ok := r.Op.(command.Tx); ok {
			// A transaction needs its queued commands' features (MULTI
			// RPUSH … EXEC, RESTORE inside MULTI): their rows' flags.
			for _, args := range tx.Cmds {
				if spec, ok := command.Lookup(args[0]); ok {
					need |= spec.Flags
				}
			}
		}
		if need.Has(command.FlagCollection) {
			s.ensureFeature(ctx, command.FeatureCollections) // owners.go
		}
		if need.Has(command.FlagMigration) {
			s.ensureFeature(ctx, command.FeatureMigration)
		}
		if s.readOnly(r) { // replica.go
			out[i] = resp.Error(fsm.ErrReadOnly)
			continue
		}
		if !r.Spec.Writes() {
			flush()
			if !verified {
				if err := s.ReadBarrier(ctx); err != nil {
					out[i] = command.ErrorReply(err)
					continue
				}
				verified = true
			}
			user := ""
			if _, ok := r.Op.(command.Eval); ok {
				user = s.scriptUser(r.User)
			}
			if !clockRead {
				readNow, readWall = s.clock.read()
				clockRead = true
			}
			out[i] = s.m.read(r, user, readNow, readWall)
			continue
		}
		verified, clockRead = false, false
		kind, args := command.KindCommand, r.Args
		switch op := r.Op.(type) {
		case command.Admin:
			if op.Action != "propose" {
				flush()
				out[i] = s.admin(ctx, op)
				continue
			}
			// An internal entry a Node built (a session attach, a slot move
			// step, a shard map): proposed like any write. No RESP or HTTP
			// command builds a "propose" Admin.
			e, err := command.Decode([]byte(op.Addr))
			if err != nil || !command.IsInternal(e.Kind) {
				out[i] = resp.Error("ERR internal: not an internal entry")
				continue
			}
			if (e.Kind == command.KindReplicated || e.Kind == command.KindReplication) && s.settings().Features&command.FeatureMigration == 0 {
				out[i] = resp.Error(fsm.ErrMigrationOff) // a member could not decode it
				continue
			}
			kind, args = e.Kind, s.gateInternal(e.Kind, e.Args) // owners.go
		case command.Tx:
			kind, args = command.KindTx, command.TxArgs(op)
		case command.ScriptLoad, command.ScriptFlush:
			kind, args = command.KindScript, command.ScriptArgs(op)
		case command.Eval:
			user := s.scriptUser(r.User)
			if v, ok := s.admitScript(op, user); !ok {
				out[i] = v
				continue
			}
			if user != "" {
				kind, args = command.KindScriptAs, command.ScriptAsArgs(user, r.Args)
			}
		case command.SessionOpen:
			// The session belongs to the user who opens it, once every
			// member records owners (owners.go).
			if r.User != "" && s.OwnersOn() {
				kind, args = command.KindScriptAs, command.ScriptAsArgs(r.User, r.Args)
			}
		}
		if n, most := command.Size(args), s.maxEntry(kind); n > most {
			s.metrics.tooLarge.Add(1)
			out[i] = command.ErrorReply(fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, n, most))
			continue
		}
		op, acquire := r.Op.(command.LockAcquire)
		late := acquire && op.Wait > 0 && i == len(reqs)-1
		if batch && !batchAsked {
			batch, batchAsked = s.batchEntries(), true
		}
		if kind == command.KindCommand && !late && batch {
			if n := command.Size(args); groupSize+n > min(maxBatchBytes, s.maxEntry(command.KindBatch)) {
				propose()
			}
			group, groupArgs = append(group, i), append(groupArgs, args)
			groupSize += command.Size(args)
			continue
		}
		propose()
		var f raft.ApplyFuture
		var err error
		if late {
			f, err = s.proposeLate(ctx, op, args) // lingers when it will queue (linger.go)
		} else {
			f, err = s.propose(ctx, kind, args)
		}
		if err != nil {
			out[i] = command.ErrorReply(err)
			continue
		}
		inflight = append(inflight, pending{reqs: []int{i}, f: f, at: time.Now()})
	}
	flush()
	return out
}

// maxBatchBytes bounds a batch entry (command.KindBatch): a run of writes
// larger than this goes into several, so that a deep pipeline's entries stay
// small entries (under the log's and badger's 1 MiB thresholds for large
// values, quick for a follower to write and apply between heartbeats). The
// per-entry saving is had long before: a loaded single node's batches hold
// ~30 lock commands, about 2 KB. Measured: with the bound at MaxWriteBytes
// (4 MiB), make bench-memory's pipelined fill of 1 million locks left the
// largest node at 1.91x Redis's memory 20-40 s after it (median; max 2.16x);
// at 64 KiB 1.72x and 1.35x (max 1.90x, 1.38x), the build before batch
// entries 1.49x (max 1.51x) in the same hour.
const maxBatchBytes = 64 << 10

// DefaultMaxWriteBytes is Config.MaxWriteBytes's default. A Raft entry is
// written, replicated and applied whole, and a follower's Raft loop does
// nothing else meanwhile: on the development VM a 3-node cluster kept its
// leader through single writes of 8 MiB and held elections during writes of
// 16 MiB and more (heartbeats waited behind them). It bounds one write, not
// their sum: 8 clients writing 1 MB values at once also cost the leader its
// lease (raftstore/DESIGN.md). etcd's request limit is 1.5 MiB.
const DefaultMaxWriteBytes = 4 << 20

// maxEntry is the longest entry of this kind that doLocal proposes: a
// client's write, Config.MaxWriteBytes (defaulted and capped by Open); an
// entry a node builds itself, what the log accepts.
func (s *Store) maxEntry(kind command.Kind) int {
	if command.IsInternal(kind) {
		return s.logs.MaxData()
	}
	return s.cfg.MaxWriteBytes
}

// propose stamps a command with log time and hands it to Raft, with no
// enqueue timeout (see Config.ApplyTimeout).
func (s *Store) propose(ctx context.Context, kind command.Kind, args [][]byte) (raft.ApplyFuture, error) {
	if !s.ready.Load() {
		if err := s.waitReady(ctx); err != nil {
			return nil, err
		}
	}
	s.releaseHeld()
	now, wall := s.clock.read()
	e := command.Entry{Kind: kind, Time: now, Wall: wall, Args: args}
	return s.raft.Apply(e.Encode(), 0), nil
}

// electionWaitSpent is the key of a context value that marks a request
// which already waited for an election as long as it may (Store.route):
// waitReady refuses it at once instead of waiting again.
type electionWaitSpent struct{}

// waitReady waits (bounded by ElectionWait) while this node is electing
// itself or catching up as a new leader; a node that knows another leader
// rejects at once (ErrNotApplied: the caller forwards, or the client retries
// elsewhere), before it sets up the bounded wait's timer (a follower's every
// request passes here).
func (s *Store) waitReady(ctx context.Context) error {
	if s.ready.Load() {
		return nil
	}
	if _, ok := s.leaderToForward(); ok {
		return ErrNotApplied
	}
	if ctx.Value(electionWaitSpent{}) != nil {
		return ErrNotApplied
	}
	c, cancel := context.WithTimeout(ctx, min(ElectionWait, s.cfg.ApplyTimeout))
	defer cancel()
	for !s.ready.Load() {
		if _, ok := s.leaderToForward(); ok {
			return ErrNotApplied
		}
		if err := s.pause(c, 2*time.Millisecond); err != nil {
			if errors.Is(err, ErrClosed) {
				return ErrClosed
			}
			return ErrNotApplied
		}
	}
	return nil
}

// pause waits d before something is tried again: nil, or ctx's error when
// ctx ends first, or ErrClosed when the store closes first.
func (s *Store) pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closed:
		return ErrClosed
	case <-time.After(d):
		return nil
	}
}

// applyNow proposes e as it is, without waiting for this leader to take
// office (propose does), and waits for its outcome through await: for the
// leader's own loops (expiry ticks, session expiries), which check ready
// themselves.
func (s *Store) applyNow(e command.Entry) error {
	s.releaseHeld()
	return s.await(s.raft.Apply(e.Encode(), s.cfg.ApplyTimeout))
}

// reply maps an entry's future to its reply to its j-th command: the
// entry's reply (j 0), or a batch entry's reply to that command.
func (s *Store) reply(f raft.ApplyFuture, j int) resp.Value {
	if err := f.Error(); err != nil {
		return command.ErrorReply(mapApplyErr(err))
	}
	switch r := f.Response().(type) {
	case resp.Value:
		if j == 0 {
			return r
		}
	case batchReplies:
		if j < len(r) {
			return r[j]
		}
	}
	return resp.Error("ERR internal: no reply from the state machine")
}

// mapApplyErr sorts hashicorp/raft's errors into rejected and unknown outcomes.
func mapApplyErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout),
		errors.Is(err, raft.ErrLeadershipTransferInProgress): // refused before the log
		return ErrNotApplied
	case errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, raft.ErrAbortedByRestore):
		return ErrUnknownOutcome
	}
	return ErrUnknownOutcome
}

// replyWait is one wait on Raft futures (a request batch's, or one of the
// store's own loops'), waited for by the store's replyLoop.
type replyWait struct {
	fs   []raft.Future
	err  error         // nil, or ErrClosed when the store closed first; set before done closes
	done chan struct{} // closed once every future in fs answered, or the store closed
}

// replyQueue holds the batches whose futures replyLoop has yet to see
// answered, in the order they were queued. Whoever takes a batch out of it
// (replyLoop once its futures answered, or close) ends its wait, under mu, so
// each wait ends exactly once.
type replyQueue struct {
	mu     sync.Mutex
	q      []*replyWait // q[0] is the batch replyLoop waits on
	closed bool
	kick   chan struct{} // one pending at most: the queue is no longer empty
}

func newReplyQueue() *replyQueue {
	return &replyQueue{kick: make(chan struct{}, 1)}
}

// awaitReplies waits until every future in fs answered, or returns ErrClosed
// as soon as the store is closing. hashicorp/raft never answers a future
// still in its buffered apply channel (BatchApplyCh) when it shuts down, so
// every wait on an Apply or Barrier future goes through here, or Close, which
// waits for the store's loops, may wait forever (TestWaitTimesOut hung so
// once: an expiry tick proposed as the test closed its store). The waiting
// itself is done by replyLoop, one goroutine for all of the store's waits,
// rather than by a goroutine per wait: on a single node's request path that
// goroutine's start and wake-up, and every waiter selecting on the store's
// one closed channel, cost about a fifth of the CPU per request. Blocks.
func (s *Store) awaitReplies(fs []raft.Future) error {
	rq := s.replies
	w := &replyWait{fs: fs, done: make(chan struct{})}
	rq.mu.Lock()
	if rq.closed {
		rq.mu.Unlock()
		return ErrClosed
	}
	rq.q = append(rq.q, w)
	rq.mu.Unlock()
	select {
	case rq.kick <- struct{}{}:
	default:
	}
	<-w.done
	return w.err
}

// await waits for one future through awaitReplies and returns its error, or
// ErrClosed when the store closed first. For the store's own loops.
func (s *Store) await(f raft.Future) error {
	if err := s.awaitReplies([]raft.Future{f}); err != nil {
		return err
	}
	return f.Error() // answered: returns at once
}

// replyLoop waits for the futures of the queued batches, one batch after the
// other, and ends each batch's wait when all of its futures answered. Raft
// answers a group's futures in the order they were proposed (applied in log
// order, or all failed at once when leadership is lost), so waiting in queue
// order holds nobody up for long: a batch queued behind another was almost
// always proposed after it too. It may wait forever on a future that Raft,
// shutting down, never answers; so it is not one of the loops Close waits
// for, and closing the queue (Close) ends every wait it has not ended.
func (s *Store) replyLoop() {
	rq := s.replies
	for {
		rq.mu.Lock()
		if rq.closed {
			rq.mu.Unlock()
			return
		}
		if len(rq.q) == 0 {
			rq.mu.Unlock()
			select {
			case <-rq.kick:
			case <-s.closed:
			}
			continue
		}
		w := rq.q[0]
		rq.mu.Unlock()
		for _, f := range w.fs {
			f.Error()
		}
		rq.mu.Lock()
		if !rq.closed { // else close ended its wait
			rq.q[0] = nil
			rq.q = rq.q[1:]
			close(w.done)
		}
		rq.mu.Unlock()
	}
}

// close ends every wait still queued with ErrClosed; later waits fail at
// once. Called by Close, after it closed s.closed.
func (rq *replyQueue) close() {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	if rq.closed {
		return
	}
	rq.closed = true
	for _, w := range rq.q {
		w.err = ErrClosed
		close(w.done)
	}
	rq.q = nil
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
		if pop, ok := r.Op.(command.BlockingPop); ok { // BLPOP … BZPOPMAX (bpop.go)
			out := append(make([]resp.Value, 0, len(reqs)), s.route(ctx, reqs[:i])...)
			out = append(out, s.blockingPop(ctx, r, pop, start))
			return append(out, s.Do(ctx, reqs[i+1:])...)
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

// route runs a batch here (leader) or forwards it to the leader. It is bounded
// by ElectionWait, plus what the batch itself takes at a leader: while there is
// no leader (an election) it waits until this node serves or another node is
// known to lead, and answers TRYAGAIN when neither happens in time. A batch
// whose forwarding provably did not reach the leader (forwardBatch's notSent:
// the leader changed while it waited for a connection, or the connection
// failed before it was written) is sent again, to the next leader this node
// sees, at most maxForwardTries times in all; one that may have reached the
// leader is never sent again (UNKNOWNOUTCOME for its writes).
func (s *Store) route(ctx context.Context, reqs []command.Request) []resp.Value {
	if len(reqs) == 0 {
		return nil
	}
	end := time.Now().Add(ElectionWait)
	for try := 1; ; try++ {
		changed := s.leaders.next()
		wctx, cancel := context.WithDeadline(ctx, end)
		werr := s.waitReady(wctx) // its error says no more than what follows finds out
		cancel()
		addr, ok := s.leaderToForward()
		if !ok {
			if werr != nil {
				// Not serving after the election wait: doLocal answers what
				// needs no leader and refuses the rest at once.
				ctx = context.WithValue(ctx, electionWaitSpent{}, true)
			}
			return s.doLocal(ctx, reqs)
		}
		out, notSent := s.forwardBatch(ctx, addr, reqs)
		if !notSent || try >= maxForwardTries || ctx.Err() != nil || !s.awaitOtherLeader(ctx, changed, addr, end) {
			return out
		}
	}
}
