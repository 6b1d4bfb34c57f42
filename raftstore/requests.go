package raftstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
)

// request builds the Request of a command that the store itself sends (a
// cancel, a session close or keepalive, one group's part of a split command),
// parsed as the front door would parse it.
func request(user string, args [][]byte) (command.Request, error) {
	op, spec, err := command.Parse(args)
	if err != nil {
		return command.Request{}, err
	}
	return command.Request{Args: args, Op: op, Spec: spec, User: user}, nil
}

// electionWait bounds how long a request waits for an election to produce a
// leader (a few election timeouts) before it is answered TRYAGAIN.
const electionWait = 2 * time.Second

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
	batch := len(reqs) > 1 && s.batchEntries()
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
				out[i] = errorReply(err)
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
					out[i] = errorReply(ErrUnknownOutcome)
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
	for i, r := range reqs {
		if v, limited := s.rateLimited(r); limited {
			out[i] = v
			continue
		}
		if op, ok := r.Op.(command.SessionKeepalive); ok {
			flush()
			if err := s.waitReady(ctx); err != nil {
				out[i] = errorReply(err)
			} else {
				out[i] = s.keepalive(op, r.User)
			}
			continue
		}
		if r.User != "" {
			if v, refused := s.checkSessions(r); refused { // owners.go
				out[i] = v
				continue
			}
		}
		if !r.Spec.Write {
			flush()
			if !verified {
				if err := s.readBarrier(ctx); err != nil {
					out[i] = errorReply(err)
					continue
				}
				verified = true
			}
			if v, moved := s.m.checkRead(r); moved {
				out[i] = v
				continue
			}
			user := ""
			if _, ok := r.Op.(command.Eval); ok {
				user = s.scriptUser(r.User)
			}
			now, wall := s.clock.read()
			out[i] = s.m.read(r.Op, user, now, wall)
			continue
		}
		verified = false
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
			if r.User != "" && s.ownersOn() {
				kind, args = command.KindScriptAs, command.ScriptAsArgs(r.User, r.Args)
			}
		}
		if n, most := command.Size(args), s.maxEntry(kind); n > most {
			s.metrics.tooLarge.Add(1)
			out[i] = errorReply(fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, n, most))
			continue
		}
		op, acquire := r.Op.(command.LockAcquire)
		late := acquire && op.Wait > 0 && i == len(reqs)-1
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
			out[i] = errorReply(err)
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

// waitReady waits (bounded by electionWait) while this node is electing
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
	c, cancel := context.WithTimeout(ctx, min(electionWait, s.cfg.ApplyTimeout))
	defer cancel()
	for !s.ready.Load() {
		if _, ok := s.leaderToForward(); ok {
			return ErrNotApplied
		}
		select {
		case <-c.Done():
			return ErrNotApplied
		case <-s.closed:
			return ErrClosed
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
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
		return errorReply(mapApplyErr(err))
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

// admitScript decides, on the leader, whether a script may enter the log. It
// reports false, with the reply, for an EVALSHA of a script the replicated
// cache does not hold, a script that does not load (compile error, bad
// shebang), and a script that does not finish its dry run: a run against a
// copy of the current state with fsm.DryRunBudget and fsm.DryRunMaxAlloc (out
// of budget, out of memory, or killed by SCRIPT KILL), or that sends a write
// command larger than Config.MaxWriteBytes (ErrTooLarge, as that command sent
// by a client would be). A statically bounded script (lua.Engine.Bounded) is
// admitted without the clone and the dry run when no command it can build
// from its arguments is that large (lua.Engine.MaxCommandBytes): it runs at
// most a few thousand instructions and cannot build large values from small
// arguments, so it is not the runaway the dry run is there to stop. Every other outcome of a run
// (an error the script raises included) is left to the apply, which answers
// the same on every replica.
func (s *Store) admitScript(op command.Eval, user string) (resp.Value, bool) {
	src := op.Source
	if src == nil {
		s.m.mu.RLock()
		src, _ = s.m.ks.Script(op.SHA)
		s.m.mu.RUnlock()
		if src == nil {
			return resp.Error(lua.ErrNoScript), false
		}
	}
	// A script that does not load (it does not compile, or its shebang is
	// bad) is answered here with what the apply would answer. An EVALSHA of
	// a script the dry engine holds already skips hashing its source again.
	sha := op.SHA // the engine takes it in any case
	if op.Source != nil || !s.dry.Exists(sha) {
		var err error
		if sha, err = s.dry.Load(src); err != nil {
			return errorReply(err), false
		}
	}
	// A bounded script is admitted without a dry run only when no command it
	// can build from these arguments exceeds -max-write-bytes (the dry run
	// checks each write it makes).
	if n, bounded := s.dry.MaxCommandBytes(sha, op.Keys, op.Args); bounded && n <= int64(s.cfg.MaxWriteBytes) {
		s.metrics.scriptsBounded.Add(1)
		return resp.Value{}, true
	}
	s.m.mu.Lock()
	scratch := s.m.ks.Clone()
	s.m.mu.Unlock()
	now, wall := s.clock.read()
	kill := make(chan struct{})
	s.killMu.Lock()
	s.dryRuns[kill] = struct{}{}
	s.killMu.Unlock()
	v, tooLarge := scratch.DryRun(op, user, src, s.dry, now, wall, kill, s.cfg.MaxWriteBytes)
	s.killMu.Lock()
	delete(s.dryRuns, kill)
	s.killMu.Unlock()
	if tooLarge {
		s.metrics.tooLarge.Add(1)
		return v, false
	}
	switch {
	case lua.IsMemoryError(v):
		s.metrics.scriptsMemory.Add(1)
	case lua.IsBudgetError(v) || lua.IsKilledError(v):
		s.metrics.scriptsBudget.Add(1)
	}
	if v.IsError() && (lua.IsBudgetError(v) || lua.IsKilledError(v) || lua.IsMemoryError(v)) {
		return v, false
	}
	return resp.Value{}, true
}

// KillScripts stops the scripts in a dry run on this node. It reports whether
// there were any. A killed script is answered with lua.KilledErrorText and never
// enters the log; scripts already in the log are bounded by fsm.ApplyBudget.
func (s *Store) KillScripts() bool {
	s.killMu.Lock()
	defer s.killMu.Unlock()
	n := len(s.dryRuns)
	for ch := range s.dryRuns {
		close(ch)
		delete(s.dryRuns, ch)
	}
	return n > 0
}

// readBarrier makes the reads that follow linearizable: after it returns, this
// node has confirmed with a quorum (after the reads arrived) that it still leads,
// and has applied everything committed by then.
func (s *Store) readBarrier(ctx context.Context) error {
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
