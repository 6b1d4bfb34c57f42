package raftstore

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/command"
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
		if err != nil {
			out = []resp.Value{resp.Error("ERR " + err.Error())}
		} else {
			out = s.doForwarded(ctx, reqs)
		}
		return resp.AppendValue(nil, resp.Array(out...))
	}, s.log)
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

// forwardBatch sends reqs to the leader at addr and returns its replies. A batch
// that never left this node is rejected (safe to retry); one whose answer was
// lost has an unknown outcome for its writes.
func (s *Store) forwardBatch(ctx context.Context, addr string, reqs []command.Request) []resp.Value {
	out := make([]resp.Value, len(reqs))
	// Every request with its user where the group's members all understand
	// that (owners on), else what the previous version decodes (owners.go).
	b, err := s.fwd.Call(ctx, addr, command.EncodeUserRequests(reqs, s.ownersOn(), s.restricted))
	if err == nil {
		v, _, derr := resp.ReadValue(b)
		if derr == nil && v.Kind == resp.KindArray && len(v.Elems) == len(reqs) {
			return v.Elems
		}
		if derr == nil && v.IsError() {
			err = errors.New(v.String())
		} else {
			err = forward.ErrUnknown
		}
	}
	for i, r := range reqs {
		switch {
		case errors.Is(err, forward.ErrNotSent) || !r.Spec.Write:
			out[i] = resp.Error(ErrNotApplied.Error())
		default:
			out[i] = resp.Error(ErrUnknownOutcome.Error())
		}
	}
	s.log.Debug("forwarding to the leader failed", "leader", addr, "err", err)
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
