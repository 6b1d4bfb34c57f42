package group

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
)

// ReadBarrier makes the reads that follow linearizable: after it returns, this
// node has confirmed with a quorum (answers to questions it sent after the
// reads arrived: confirmLeadership) that it still leads, and has applied
// everything committed by then.
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
	if s.alone.Load() {
		// The last confirmation found nobody to ask (a lone voter): this
		// one runs on the reader's goroutine, sparing a round's goroutine
		// and its two hand-offs, unless a voter was added since.
		c, err := s.startConfirm()
		if err != nil {
			return err
		}
		if c.t.decided() {
			commit, err := s.endConfirm(c)
			if err == nil {
				err = s.waitApplied(commit)
			}
			return err
		}
	}
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
		commit, err := s.confirmLeadership()
		if err == nil {
			err = s.waitApplied(commit)
		}
		r.err = err
		close(r.done)
		s.rmu.Lock()
		s.inflight = nil
		if s.next != nil {
			s.startRoundLocked()
		}
		s.rmu.Unlock()
	}()
}

// Confirming leadership for reads (read-index, Raft thesis §6.4). A round
// records this leader's term T and commit index C, then asks the other
// voters of the group's latest configuration (as many as a majority needs
// first: ask), over the peer port's forwarding connection (admin
// "following"), for their current term, the leader they follow and their
// id. It succeeds when this node still leads in term T and a majority of
// the voters, itself included, answered term T and this node; non-voters
// are never asked.
//
// Why that is sound: let w be a write acknowledged before a read of the
// round arrived. w was committed by the leader of some term T'. If T' > T,
// that leader had the votes of a majority, each of which had raised its
// term to T' before w was acknowledged, hence before the round began; terms
// never fall, so none of them can answer T to a question the round sent
// later, and any two majorities share a voter: the round cannot succeed.
// If T' = T, w is this node's own, and its commit index had passed w when
// it acknowledged it: C covers w. If T' < T, this node's log holds w
// (leader completeness), and its takeover barrier (ready) committed an
// entry of term T after it, so C covers w. The round then waits until the
// state machine has applied C.
//
// hashicorp/raft's VerifyLeader, used before, is not sound: every
// successful AppendEntries or heartbeat response confirms every pending
// verification, including one registered after that message was sent. A
// leader paused while its group elected another (SIGSTOP, a long GC) reads,
// once resumed, the answers its followers gave before the election, and
// they confirmed a read that arrived after the resume: it answered from its
// own, stale state (the chaos campaign, CHAOS_SEED=22;
// TestDeposedLeaderServesNoStaleRead). Here every answer is given to a
// question sent after the read arrived.
//
// A voter from before "following" answers it TRYAGAIN; while such
// voters are needed for a majority, the round falls back to VerifyLeader,
// the guarantee a cluster had before (a rolling upgrade's only difference).
// A voter that does not answer within confirmTimeout counts against the
// round, which then fails: the read is answered TRYAGAIN, and nothing
// changed. A lone voter asks no one.
func (s *Store) confirmLeadership() (commit uint64, err error) {
	c, err := s.startConfirm()
	if err != nil {
		return 0, err
	}
	return s.endConfirm(c)
}

// confirmation is a confirmation round as it starts: this leader's term and
// commit index, and the voters' tally with this node's yes counted and the
// other voters, still to be asked.
type confirmation struct {
	term, commit uint64
	t            tally
	others       []raft.Server
}

// startConfirm starts a confirmation round (ErrNotReadable when this node
// does not lead), and records in s.alone whether it had anyone to ask.
func (s *Store) startConfirm() (confirmation, error) {
	if s.raft.State() != raft.Leader {
		return confirmation{}, ErrNotReadable
	}
	c := confirmation{term: s.raft.CurrentTerm(), commit: s.raft.CommitIndex()}
	self := raft.ServerID(s.cfg.NodeID)
	voters, yes := 0, 0
	for _, srv := range s.Configuration() {
		if srv.Suffrage != raft.Voter {
			continue
		}
		voters++
		if srv.ID == self {
			yes++
		} else {
			c.others = append(c.others, srv)
		}
	}
	c.t = tally{need: voters/2 + 1, yes: yes, pending: len(c.others)}
	s.alone.Store(len(c.others) == 0)
	return c, nil
}

// endConfirm asks the voters c has not heard (only the round in flight
// asks: ask), and returns c's commit index if a majority confirmed this
// node's leadership and it still leads in c's term.
func (s *Store) endConfirm(c confirmation) (commit uint64, err error) {
	t := c.t
	if !t.decided() {
		t = s.ask(c.others, t, c.term)
	}
	switch {
	case t.confirmed():
	case t.fallback() && s.raft.VerifyLeader().Error() == nil:
	default:
		return 0, ErrNotReadable
	}
	if s.raft.State() != raft.Leader || s.raft.CurrentTerm() != c.term {
		return 0, ErrNotReadable
	}
	return c.commit, nil
}

// ask puts the question of a round of term to the voters others, toward
// t, and returns t decided. It asks first only as many as a majority needs,
// those that said yes soonest in the last round first, and the others too
// as soon as one of them answers anything but yes or hedgeAfter has passed
// (a healthy 3-node group: one question a round instead of two, measured
// in raftstore/DESIGN.md). Only the round in flight calls it.
func (s *Store) ask(others []raft.Server, t tally, term uint64) tally {
	slices.SortStableFunc(others, func(a, b raft.Server) int {
		return cmp.Compare(rank(s.quick, a.ID), rank(s.quick, b.ID))
	})
	ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
	defer cancel() // the questions still out end at once
	type reply struct {
		id raft.ServerID
		a  answer
	}
	replies := make(chan reply, len(others)) // buffered: the askers never block
	asked := 0
	more := func(n int) {
		for ; n > 0 && asked < len(others); n-- {
			srv := others[asked]
			asked++
			go func() { replies <- reply{srv.ID, s.askFollowing(ctx, srv, term)} }()
		}
	}
	more(t.need - t.yes)
	hedge := time.NewTimer(hedgeAfter)
	defer hedge.Stop()
	var quick []raft.ServerID
	for !t.decided() {
		select {
		case r := <-replies:
			t.add(r.a)
			if r.a == answerYes {
				quick = append(quick, r.id)
			} else {
				more(len(others))
			}
		case <-hedge.C:
			more(len(others))
		}
	}
	if len(quick) > 0 {
		s.quick = quick
	}
	return t
}

// rank is id's place in quick, or len(quick) when it is not there.
func rank(quick []raft.ServerID, id raft.ServerID) int {
	if i := slices.Index(quick, id); i >= 0 {
		return i
	}
	return len(quick)
}

// hedgeAfter is how long a round waits for the voters it asked first before
// it asks the others too.
const hedgeAfter = 5 * time.Millisecond

// confirmTimeout bounds a confirmation round's wait for the voters'
// answers: a leader that cannot hear a majority within it answers its reads
// TRYAGAIN (it steps down itself after LeaderLeaseTimeout without one).
const confirmTimeout = 2 * heartbeatTimeout

// answer is what one voter's answer to "following" says of a round.
type answer uint8

const (
	answerNone answer = iota // no answer: failed, timed out, or not understood as one
	answerYes                // this node's term, this node its leader
	answerNo                 // another term or leader
	answerOld                // TRYAGAIN: a lockd from before "following"
)

// followingRequest is the question a round asks every other voter.
var followingRequest = command.EncodeRequests([]command.Request{{Op: command.Admin{Action: "following"}, Spec: command.AdminSpec}})

// askFollowing asks the voter srv whether it follows this node in term.
func (s *Store) askFollowing(ctx context.Context, srv raft.Server, term uint64) answer {
	b, err := s.fwd.Call(ctx, string(srv.Address), followingRequest)
	out, err := forwardedReplies(b, err, 1)
	if err != nil {
		return answerNone
	}
	return judgeFollowing(out[0], term, s.cfg.NodeID, string(srv.ID))
}

// judgeFollowing reads a voter's answer v to "following" (admin.go: [term,
// leader id, own id]) for a round of the leader self in term, asked of the
// voter id.
func judgeFollowing(v resp.Value, term uint64, self, id string) answer {
	switch {
	case v.Outcome == outcome.NotApplied:
		// What a follower from before "following" answers an admin
		// action it does not know (TRYAGAIN: not the leader); this
		// version answers "following" with an error never.
		return answerOld
	case v.Kind != resp.KindArray || len(v.Elems) != 3:
		return answerNone
	case v.Elems[0].Int == int64(term) && v.Elems[1].String() == self && v.Elems[2].String() == id:
		return answerYes
	}
	return answerNo
}

// tally counts a round's answers toward the need of a majority of voters:
// yes and old answers so far (this node's own yes included), and pending,
// the voters yet to answer, asked or not.
type tally struct {
	need, yes, old, pending int
}

// add counts one voter's answer.
func (t *tally) add(a answer) {
	t.pending--
	switch a {
	case answerYes:
		t.yes++
	case answerOld:
		t.old++
	}
}

// confirmed: a majority answered yes.
func (t *tally) confirmed() bool { return t.yes >= t.need }

// fallback: a majority answered yes or from before "following", and no
// majority could have answered yes.
func (t *tally) fallback() bool { return !t.confirmed() && t.yes+t.old >= t.need }

// decided: the answers yet to come cannot change the outcome.
func (t *tally) decided() bool {
	return t.confirmed() || t.pending == 0 || t.yes+t.old+t.pending < t.need
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
