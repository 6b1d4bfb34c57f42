package group

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/forward"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/resp"
)

// Forwarding: a follower sends a connection's whole batch to the leader over the
// peer port ('F' connections) and relays the replies, so that a standalone Redis
// client can talk to any node. The leader runs the batch exactly as if it had
// arrived on its own RESP port (doLocal), never forwarding it again, each
// request as the user who sent it to the follower (doForwarded, owners.go).

// serveForwarded answers batches forwarded by followers. Runs until Close.
func (s *Store) serveForwarded(ln net.Listener) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.closed
		cancel()
		ln.Close()
	}()
	forward.Serve(ctx, ln, func(ctx context.Context, req []byte) []byte {
		reqs, err := command.DecodeRequests(req)
		var out []resp.Value
		switch {
		case err != nil:
			out = []resp.Value{resp.Error("ERR " + err.Error())}
		case isRelay(reqs):
			out = s.doRelayed(ctx, reqs[1:])
		default:
			out = s.doForwarded(ctx, reqs)
		}
		return command.AppendOutcomes(resp.AppendValue(nil, resp.Array(out...)), out)
	}, s.log)
}

// Relaying: a node that does not host the group (its placement put the
// group's voters elsewhere) sends a connection's batch to a member, which
// runs it as if it had arrived on its own RESP port: with Do, forwarding to
// the leader, waiting for a blocked acquire or pop, as its own clients'. A
// relayed batch is marked by a first request, Admin "relay", that a lockd
// from before placement answers with a syntax error, running the rest as a
// forwarded batch (the sender then sees one reply too many and answers
// UNKNOWNOUTCOME): placement waits until every node runs a lockd with it.

// relayAction marks a relayed batch.
const relayAction = "relay"

// isRelay reports whether a forwarded batch is relayed.
func isRelay(reqs []command.Request) bool {
	if len(reqs) == 0 {
		return false
	}
	op, ok := reqs[0].Op.(command.Admin)
	return ok && op.Action == relayAction
}

// doRelayed runs a relayed batch: refused at once (TRYAGAIN, nothing
// applied) when this node sees no leader of the group or is not in its
// configuration, so that the sender asks elsewhere instead of waiting out an
// election here; else each request as its user may (doForwarded's check),
// with Do.
func (s *Store) doRelayed(ctx context.Context, reqs []command.Request) []resp.Value {
	if s.leaderAddr() == "" || !hasServer(s.Configuration(), raft.ServerID(s.cfg.NodeID)) {
		return failedForward(reqs, true)
	}
	return s.authorized(ctx, reqs, s.Do)
}

// relayTimeout bounds a relayed batch as forwardTimeout bounds a forwarded
// one (adminForwardTimeout an operator's batch), plus the longest wait of a
// blocking command in it.
func relayTimeout(reqs []command.Request) time.Duration {
	if isAdminBatch(reqs) {
		return adminForwardTimeout
	}
	var wait time.Duration
	for _, r := range reqs {
		switch op := r.Op.(type) {
		case command.LockAcquire:
			wait = max(wait, time.Duration(op.Wait)*time.Millisecond)
		case command.BlockingPop:
			if op.Timeout == 0 {
				return 0 // blocks until the caller gives up
			}
			wait = max(wait, time.Duration(op.Timeout)*time.Millisecond)
		}
	}
	return forwardTimeout + wait
}

// Relay sends reqs, for this group, to the member at addr (its peer address)
// and returns its replies, as forwardBatch does: notSent reports that the
// batch provably never reached it, and a failed call's replies are
// failedForward's. The call ends with ctx or relayTimeout. This node need not
// be a member of the group: only the forwarding connection is this Store's.
func (s *Store) Relay(ctx context.Context, addr string, reqs []command.Request) (out []resp.Value, notSent bool) {
	if d := relayTimeout(reqs); d > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, d, errForwardTimeout)
		defer stop()
	}
	all := append([]command.Request{{Op: command.Admin{Action: relayAction}, Spec: command.AdminSpec}}, reqs...)
	// Cancelable: a client that goes away withdraws its blocked request
	// there (every member of a placed cluster understands cancel frames).
	b, err := s.fwd.CallCancelable(ctx, addr, command.EncodeUserRequests(all, true, func(string) bool { return true }))
	if out, err = forwardedReplies(b, err, len(reqs)); err == nil {
		return out, false
	}
	notSent = errors.Is(err, forward.ErrNotSent)
	s.log.Debug("relaying to a member failed", "member", addr, "err", err, "cause", context.Cause(ctx), "not_sent", notSent)
	return failedForward(reqs, notSent), notSent
}

// leaderToForward reports whether this node should send the batch to a leader: it
// is a follower that knows one.
func (s *Store) leaderToForward() (string, bool) {
	if s.raft.State() == raft.Leader {
		return "", false
	}
	addr, _ := s.raft.LeaderWithID()
	return string(addr), addr != ""
}

// forwardTimeout bounds every forwarded batch, as a backstop: a call is
// normally ended sooner by a change of leader (leaderwatch.go). It leaves room
// for what a leader may spend on a batch (an election wait, a script's dry
// run, a commit under load); the end of it answers like a lost answer.
const forwardTimeout = 10 * time.Second

// adminForwardTimeout is forwardTimeout for a batch with an operator's
// command (RAFT TRANSFER, ADD, REMOVE, MOVESLOTS, MEMBERS): such a batch is
// not cancelled when the leader changes, since a transfer changes it on
// purpose and answers only then, and a slot move may run long.
const adminForwardTimeout = 5 * time.Minute

// isAdminBatch reports whether reqs hold an operator's command (an Admin
// other than the internal "propose" a Node builds for its own entries).
func isAdminBatch(reqs []command.Request) bool {
	for _, r := range reqs {
		if op, ok := r.Op.(command.Admin); ok && op.Action != "propose" {
			return true
		}
	}
	return false
}

// errForwardTimeout is the cause of a forwarded call that ran out of
// forwardTimeout.
var errForwardTimeout = errors.New("forwarded call ran out of its time")

// maxForwardTries bounds how many times Store.route sends one batch to a
// leader: the first leader and, each time a send provably did not reach it,
// the next one.
const maxForwardTries = 3

// forwardBatch sends reqs to the leader at addr and returns its replies. The
// call ends with the leader's answer, with ctx, forwardGrace after this node
// stops seeing addr as the leader (trackCall; not for an operator's batch),
// or after forwardTimeout (adminForwardTimeout). When it fails, notSent
// reports that the batch provably never reached addr (the caller may send it
// to another leader), and out holds each request's outcome: TRYAGAIN
// (ErrNotApplied) for writes not sent, UNKNOWNOUTCOME for writes that may
// have reached it, and TRYAGAIN read not served (ErrNotReadable) for reads,
// which change nothing either way.
func (s *Store) forwardBatch(ctx context.Context, addr string, reqs []command.Request) (out []resp.Value, notSent bool) {
	admin := isAdminBatch(reqs)
	timeout := forwardTimeout
	if admin {
		timeout = adminForwardTimeout
	}
	ctx, stop := context.WithTimeoutCause(ctx, timeout, errForwardTimeout)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	untrack := func() {}
	if !admin {
		untrack = s.trackCall(addr, cancel)
	}
	// Every request with its user where the group's members all understand
	// that (owners on), else what the previous version decodes (owners.go).
	b, err := s.fwd.Call(ctx, addr, command.EncodeUserRequests(reqs, s.OwnersOn(), s.restricted))
	untrack()
	if out, err = forwardedReplies(b, err, len(reqs)); err == nil {
		return out, false
	}
	notSent = errors.Is(err, forward.ErrNotSent)
	s.log.Debug("forwarding to the leader failed", "leader", addr, "err", err, "cause", context.Cause(ctx), "not_sent", notSent)
	return failedForward(reqs, notSent), notSent
}

// forwardedReplies decodes the answer b to a forwarded batch of n requests
// (a call that returned err): the replies with their outcomes, or an error,
// forward.ErrUnknown for an answer that does not decode to n replies.
func forwardedReplies(b []byte, err error, n int) ([]resp.Value, error) {
	if err != nil {
		return nil, err
	}
	v, used, derr := resp.ReadValue(b)
	if derr == nil && v.Kind == resp.KindArray && len(v.Elems) == n {
		if derr = command.ReadOutcomes(b[used:], v.Elems); derr == nil {
			return v.Elems, nil
		}
	}
	if derr == nil && v.IsError() {
		return nil, errors.New(v.String())
	}
	return nil, forward.ErrUnknown
}

// NotSent is the outcome of each of reqs when they were sent nowhere (no
// member or leader known to send them to): nothing was applied, so every
// reply is a refusal (TRYAGAIN) a router may run again.
func NotSent(reqs []command.Request) []resp.Value { return failedForward(reqs, true) }

// failedForward is the outcome of each of reqs when their forwarded batch got
// no answer: notSent says whether it provably never reached the leader.
func failedForward(reqs []command.Request, notSent bool) []resp.Value {
	out := make([]resp.Value, len(reqs))
	for i, r := range reqs {
		switch {
		case !r.Spec.Writes():
			out[i] = command.ErrorReply(ErrNotReadable)
		case notSent:
			out[i] = command.ErrorReply(ErrNotApplied)
		default:
			out[i] = command.ErrorReply(ErrUnknownOutcome)
		}
	}
	return out
}

// forwardDialer returns a dialer of forwarding connections (header hdr: the
// group's) to a leader's peer port, as peer dials its peers (TLS, secret).
func forwardDialer(peer *mux.Mux, hdr byte) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		timeout := 10 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			if d := time.Until(dl); d < timeout {
				timeout = d
			}
		}
		return peer.Dial(addr, hdr, timeout)
	}
}
