package raftstore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/resp"
)

// Groups this node does not host (issue 49). With a replication factor below
// the node count, a group's voters are some nodes only (node_place.go). Every
// node still opens every group's Store: one it is not a member of holds no
// configuration (or an old one) and takes part in nothing, but its peer-port
// connection reaches the group's members. A request for such a group is
// relayed (group.Store.Relay) to the member this node last saw lead it, which
// runs it as its own client's, forwarding or blocking as needed. Where the
// group lives is asked of the nodes ("where", answered by members that see a
// leader) and kept in a remoteGroup; group 0 holds every node (the ones
// without a vote as non-voters), so that list of nodes is always local.

// remoteGroup is what this node knows of where one group lives.
type remoteGroup struct {
	mu       sync.Mutex
	leader   string // the leader's peer address; "" unknown
	leaderID string
	servers  []raft.Server // the configuration the answering member held
	asked    time.Time     // the last refresh
	asking   chan struct{} // closed when the refresh in flight ends; nil when none
}

// whereEvery is how often the balance loop refreshes what this node knows of
// the groups it does not host, so that a leader change elsewhere costs a
// relayed batch at most one extra hop (the old leader forwards) for that long.
const whereEvery = balanceEvery

// whereMinGap bounds how often one group is asked about on demand.
const whereMinGap = 50 * time.Millisecond

// member reports whether this node is a member of group g (a voter or, in
// group 0, a non-voter): its own Store's latest configuration lists it, and
// unless that Store sees a leader, no member that sees one says otherwise.
// A node removed from a group while it could not hear the removal keeps the
// old configuration and stands for election for ever (its pre-votes are
// refused): it is no member, and relays the group like any other node.
func (n *Node) member(g int) bool {
	s := n.gs()[g]
	if !s.Member() {
		return false
	}
	if s.LeaderKnown() {
		return true
	}
	servers, leader := n.remoteServers(g)
	return leader == "" || hasID(servers, n.cfg.NodeID)
}

// hosts reports whether this node serves group g's requests itself: it is a
// member, and it sees a leader or nobody else does (an election: its own
// Store waits for it).
func (n *Node) hosts(ctx context.Context, g int) bool {
	s := n.gs()[g]
	if !n.member(g) {
		return false
	}
	if s.LeaderKnown() || len(n.gs()) == 1 {
		return true
	}
	// A member that sees no leader: an election, or this node was removed
	// while it was away and never heard. Another member may know.
	addr, _ := n.remoteLeader(ctx, g, false)
	return addr == ""
}

// do runs reqs on group g: on this node's Store when it hosts g, else relayed
// to g's leader.
func (n *Node) do(ctx context.Context, g int, reqs []command.Request) []resp.Value {
	if n.hosts(ctx, g) {
		return n.gs()[g].Do(ctx, reqs)
	}
	return n.relay(ctx, g, reqs)
}

// relay sends reqs to the member of group g this node sees leading it (asking
// the nodes where it is when it does not know), and again, to the member seen
// then, while the batch provably did not reach one or was refused untouched
// (that member no longer knew a leader), within group.ElectionWait.
func (n *Node) relay(ctx context.Context, g int, reqs []command.Request) []resp.Value {
	end := time.Now().Add(group.ElectionWait)
	force := false
	for {
		addr, _ := n.remoteLeader(ctx, g, force)
		var out []resp.Value
		notSent := true
		if addr != "" {
			out, notSent = n.gs()[g].Relay(ctx, addr, reqs)
		} else {
			out = group.NotSent(reqs)
		}
		if !notSent && !allRefused(out) {
			return out
		}
		n.forgetLeader(g, addr)
		force = true
		if time.Now().After(end) || !n.pause(ctx, 20*time.Millisecond) {
			return out
		}
	}
}

// allRefused reports whether every reply says its request was not applied.
func allRefused(out []resp.Value) bool {
	for _, v := range out {
		if !isRefused(v) {
			return false
		}
	}
	return len(out) > 0
}

// remoteLeader returns the peer address and id of the leader of group g as
// this node last heard, asking the nodes when it knows none (or force, at
// most every whereMinGap). "" when nobody answered with one.
func (n *Node) remoteLeader(ctx context.Context, g int, force bool) (addr, id string) {
	r := &n.remote[g]
	r.mu.Lock()
	if r.leader != "" && !force {
		addr, id = r.leader, r.leaderID
		r.mu.Unlock()
		return addr, id
	}
	if time.Since(r.asked) < whereMinGap && r.asking == nil {
		addr, id = r.leader, r.leaderID
		r.mu.Unlock()
		return addr, id
	}
	wait := r.asking
	if wait == nil {
		wait = make(chan struct{})
		r.asking = wait
		r.mu.Unlock()
		// Not the caller's ctx: the answer is every waiter's, and one
		// caller going away must not leave them "no leader".
		n.askWhere(context.WithoutCancel(ctx), g)
		r.mu.Lock()
		r.asking = nil
		close(wait)
	} else {
		r.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
		r.mu.Lock()
	}
	addr, id = r.leader, r.leaderID
	r.mu.Unlock()
	return addr, id
}

// forgetLeader drops addr as group g's known leader.
func (n *Node) forgetLeader(g int, addr string) {
	r := &n.remote[g]
	r.mu.Lock()
	if r.leader == addr {
		r.leader, r.leaderID = "", ""
	}
	r.mu.Unlock()
}

// remoteServers is group g's configuration as this node last heard it from a
// member (nil when it never did).
func (n *Node) remoteServers(g int) (servers []raft.Server, leaderID string) {
	r := &n.remote[g]
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.servers, r.leaderID
}

// whereTimeout bounds one round of asking where a group is.
const whereTimeout = 500 * time.Millisecond

// askWhere asks every other node (group 0's configuration, and the members
// last heard of) where group g is, at once, and keeps the first answer that
// names a leader; an answer from the leader itself wins over the others
// that arrive in the same round.
func (n *Node) askWhere(ctx context.Context, g int) {
	self := raft.ServerID(n.cfg.NodeID)
	addrs := map[string]bool{}
	for _, srv := range n.gs()[0].Configuration() {
		if srv.ID != self {
			addrs[string(srv.Address)] = true
		}
	}
	old, _ := n.remoteServers(g)
	for _, srv := range old {
		if srv.ID != self {
			addrs[string(srv.Address)] = true
		}
	}
	ctx, cancel := context.WithTimeout(ctx, whereTimeout)
	defer cancel()
	type answer struct {
		from string
		v    resp.Value
	}
	ch := make(chan answer, len(addrs))
	req := command.EncodeRequests([]command.Request{{Op: command.Admin{Action: "where"}, Spec: command.AdminSpec}})
	for addr := range addrs {
		go func() {
			var v resp.Value
			if b, err := n.gs()[g].Call(ctx, addr, req); err == nil {
				if a, _, err := resp.ReadValue(b); err == nil && len(a.Elems) == 1 {
					v = a.Elems[0]
				}
			}
			ch <- answer{addr, v}
		}()
	}
	var best *answer
	for range addrs {
		a := <-ch
		if a.v.Kind != resp.KindArray || len(a.v.Elems) < 2 || (len(a.v.Elems)-2)%3 != 0 {
			continue
		}
		if best == nil || a.from == a.v.Elems[0].String() {
			best = &a
		}
		if a.from == a.v.Elems[0].String() {
			break // the leader itself
		}
	}
	r := &n.remote[g]
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = time.Now()
	if best == nil {
		r.leader, r.leaderID = "", ""
		return
	}
	e := best.v.Elems
	r.leader, r.leaderID = e[0].String(), e[1].String()
	r.servers = r.servers[:0:0]
	for i := 2; i+2 < len(e); i += 3 {
		suf := raft.Nonvoter
		if e[i+2].String() == raft.Voter.String() {
			suf = raft.Voter
		}
		r.servers = append(r.servers, raft.Server{ID: raft.ServerID(e[i].String()), Address: raft.ServerAddress(e[i+1].String()), Suffrage: suf})
	}
}

// refreshRemote asks where every group this node does not host is (the
// balance loop's tick), so that leader changes elsewhere are followed.
func (n *Node) refreshRemote(ctx context.Context) {
	var wg sync.WaitGroup
	for g, st := range n.gs() {
		if st.Member() && st.LeaderKnown() {
			continue // its own Store follows the leader
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.remoteLeader(ctx, g, true)
		}()
	}
	wg.Wait()
}

// groupServers is group g's configuration and leader id as this node knows
// them: its own when it is a member, else the last heard from a member.
func (n *Node) groupServers(g int) ([]raft.Server, string) {
	if s := n.gs()[g]; n.member(g) {
		_, id := s.Raft().LeaderWithID()
		return s.Configuration(), string(id)
	}
	return n.remoteServers(g)
}

// knownLeader is the leader of group g this node last heard of (from a
// member: where), with no network call.
func (n *Node) knownLeader(g int) (addr, id string) {
	r := &n.remote[g]
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leader, r.leaderID
}

// ensureFeature turns feature f on in group g before a write that needs it
// (group.Store.EnsureFeature): here when this node leads g, else on g's
// leader (the admin action "feature", forwarded or relayed).
func (n *Node) ensureFeature(ctx context.Context, g int, f uint64) {
	if s := n.gs()[g]; s.IsLeader() {
		s.EnsureFeature(ctx, f)
		return
	}
	n.do(ctx, g, []command.Request{{Op: command.Admin{Action: "feature", ID: strconv.FormatUint(f, 10)}, Spec: command.AdminSpec}})
}
