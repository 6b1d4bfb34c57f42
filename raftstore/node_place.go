package raftstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/placement"
	"github.com/lockd/lockd/resp"
)

// Placing groups on the nodes (issue 49). Each group has r = min(R, N)
// voters, R the replication factor (-replicas, or placement.DefaultReplicas
// of the node count N). While r = N every node hosts every group, as before:
// RAFT ADD and REMOVE change every group's configuration at once and the
// balance loop spreads leaders (preferredLeader). Once r < N the groups are
// placed: group 0 holds every node (the others as non-voters, so that each
// reads the shard map, ACL and settings locally), a data group only its
// voters, and the leader of group 0 runs the balancer (placeStep): it reads
// every group's configuration and leader, asks placement.Rebalance for the
// moves toward a balanced placement (spread over nodes and zones, leaders
// spread), and runs one group's moves per tick. An Add is a non-voter first,
// promoted once it has caught up, so a group never waits for an empty
// replica; a Remove comes after its Add, so a group never has fewer voters
// than a majority of r. RAFT ADD of a node to a placed cluster makes it a
// non-voter of group 0 (the balancer gives it its share); RAFT REMOVE moves
// its replicas to the others first, then takes it out of group 0.

// placed reports whether a cluster of nodes nodes places its groups (fewer
// voters than nodes) under this node's replication factor.
func (n *Node) placed(nodes int) bool {
	return nodes > 1 && len(n.gs()) > 1 && replicasFor(n.cfg.Replicas, nodes) < nodes
}

// allPlacing reports whether every member of group 0 runs a lockd with
// placement, as far as the last refresh of the address book tells.
func (n *Node) allPlacing() bool {
	for _, srv := range n.gs()[0].Configuration() {
		if string(srv.ID) == n.cfg.NodeID {
			continue
		}
		if _, _, placing := n.addrs.zoneOf(string(srv.ID)); !placing {
			return false
		}
	}
	return true
}

// moveCatchUp bounds the wait for a new replica to catch up before it is
// made a voter.
const moveCatchUp = 2 * time.Minute

// catchUpSlack is how far behind the leader's log a new replica may be when
// it is made a voter (it then catches up as any follower does).
const catchUpSlack = 256

// placer is the balancer's state on this node (meaningful while it leads
// group 0).
type placer struct {
	mu      sync.Mutex
	leaving map[string]bool // nodes RAFT REMOVE is draining
	moving  []placement.Move
	last    error
	runMu   sync.Mutex // one placeStep at a time
}

// setMoving records the moves in progress (RAFT GROUPS shows them).
func (p *placer) setMoving(m []placement.Move, err error) {
	p.mu.Lock()
	p.moving, p.last = m, err
	p.mu.Unlock()
}

// placeNodes is the nodes the balancer places groups on: group 0's
// configuration less the nodes being drained, each with its zone. ok is
// false while a node's zone is unknown, it did not answer lately, or it runs
// a lockd from before placement (a rolling upgrade): no move is started on
// a guess, nor one an older node would not follow.
func (n *Node) placeNodes() (nodes []placement.Node, peerAddr map[string]string, ok bool) {
	n.place.mu.Lock()
	leaving := maps.Clone(n.place.leaving) // placeAdmin changes the map
	n.place.mu.Unlock()
	peerAddr = map[string]string{}
	for _, srv := range n.gs()[0].Configuration() {
		id := string(srv.ID)
		peerAddr[id] = string(srv.Address)
		if leaving[id] {
			continue
		}
		zone, seen, placing := n.addrs.zoneOf(id)
		if id == n.cfg.NodeID {
			zone, seen, placing = n.cfg.Zone, time.Now(), true
		}
		if time.Since(seen) > 3*balanceEvery || !placing {
			return nil, nil, false
		}
		nodes = append(nodes, placement.Node{ID: id, Zone: zone})
	}
	return nodes, peerAddr, true
}

// currentPlacement reads the voters of groups 0..count-1, each group's
// leader first. ok is false while a group's leader is unknown.
func (n *Node) currentPlacement(count int) (placement.Placement, bool) {
	p := placement.Placement{Groups: make([]placement.Group, count)}
	for g := range count {
		servers, leader := n.groupServers(g)
		if leader == "" && !n.ownsSlots(g) && countVoters(servers) == 0 {
			continue // added, not placed yet (RAFT ADDGROUPS): no voters, nothing to move
		}
		if leader == "" {
			return p, false
		}
		var voters []string
		for _, srv := range servers {
			if srv.Suffrage != raft.Voter {
				continue
			}
			if string(srv.ID) == leader {
				voters = append([]string{leader}, voters...)
			} else {
				voters = append(voters, string(srv.ID))
			}
		}
		p.Groups[g].Voters = voters
	}
	return p, true
}

// placeStep is one tick of the balancer on group 0's leader: the moves of
// one group, in order. It reports whether the placement was already
// balanced (nothing to do).
func (n *Node) placeStep(ctx context.Context) (settled bool, err error) {
	n.place.runMu.Lock()
	defer n.place.runMu.Unlock()
	if len(n.gs()) == 1 || !n.gs()[0].IsLeader() {
		return true, nil
	}
	if n.growing.Load() > 0 {
		return false, nil // RAFT ADDGROUPS places its groups; moves wait
	}
	nodes, peerAddr, ok := n.placeNodes()
	if !ok {
		return false, nil
	}
	n.refreshRemote(ctx)
	cur, ok := n.currentPlacement(len(n.gs()))
	if !ok {
		return false, nil
	}
	if done, err := n.finishGrowth(ctx); done {
		return false, err
	}
	if grew, err := n.growWithNodes(ctx, len(nodes)); grew {
		return false, err // placed by ADDGROUPS; the next tick balances the rest
	}
	r := replicasFor(n.cfg.Replicas, len(nodes))
	moves, err := placement.Rebalance(cur, nodes, r, n.homes(nodes))
	if err != nil {
		return false, err
	}
	// A group with no voters (added, not placed yet) has no leader to run
	// a move: RAFT ADDGROUPS places it.
	moves = slices.DeleteFunc(moves, func(m placement.Move) bool { return len(cur.Groups[m.Group].Voters) == 0 })
	if min(r, len(nodes)) == len(nodes) {
		// Every node hosts every group: leaders are the balance loop's.
		moves = slices.DeleteFunc(moves, func(m placement.Move) bool { return m.Lead != "" })
	}
	if len(moves) == 0 {
		n.place.setMoving(nil, nil)
		return true, nil
	}
	g := moves[0].Group
	end := 0
	for end < len(moves) && moves[end].Group == g {
		end++
	}
	n.place.setMoving(moves[:end], nil)
	for _, m := range moves[:end] {
		n.log.Info("placement move", "move", m.String())
		if err := n.runMove(ctx, m, peerAddr); err != nil {
			err = fmt.Errorf("%s: %w", m, err)
			n.place.setMoving(nil, err)
			n.log.Warn("placement move failed", "err", err)
			return false, err
		}
	}
	n.place.setMoving(nil, nil)
	return false, nil
}

// errNoAddr: a move names a node that group 0 no longer lists.
var errNoAddr = errors.New("node not in the cluster")

// runMove runs one placement move through group m.Group's leader.
func (n *Node) runMove(ctx context.Context, m placement.Move, peerAddr map[string]string) error {
	g := m.Group
	switch {
	case m.Add != "":
		addr := peerAddr[m.Add]
		if addr == "" {
			return errNoAddr
		}
		if g != 0 { // group 0 holds every node already, as a non-voter
			if err := n.groupAdmin(ctx, g, "learner", m.Add, addr); err != nil {
				return err
			}
		}
		if err := n.awaitCaughtUp(ctx, g, m.Add, addr); err != nil {
			return err
		}
		return n.groupAdmin(ctx, g, "add", m.Add, addr)
	case m.Remove != "":
		n.place.mu.Lock()
		gone := n.place.leaving[m.Remove]
		n.place.mu.Unlock()
		if g == 0 && !gone {
			return n.groupAdmin(ctx, 0, "demote", m.Remove, "")
		}
		return n.groupAdmin(ctx, g, "remove", m.Remove, "")
	default:
		return n.groupAdmin(ctx, g, "transfer", m.Lead, "")
	}
}

// groupAdmin runs a membership action on group g's leader.
func (n *Node) groupAdmin(ctx context.Context, g int, action, id, addr string) error {
	v := n.do(ctx, g, []command.Request{{Op: command.Admin{Action: action, ID: id, Addr: addr}, Spec: command.AdminSpec}})[0]
	if v.IsError() {
		return errors.New(v.String())
	}
	return nil
}

// awaitCaughtUp waits until node id (peer address addr) has applied group
// g's log to within catchUpSlack of its leader's last index, polling.
func (n *Node) awaitCaughtUp(ctx context.Context, g int, id, addr string) error {
	end := time.Now().Add(moveCatchUp)
	for {
		leader, _ := n.groupLeaderAddr(ctx, g)
		if leader != "" {
			_, last, ok1 := n.memberStatus(ctx, g, leader)
			applied, _, ok2 := n.memberStatus(ctx, g, addr)
			if ok1 && ok2 && applied+catchUpSlack >= last {
				return nil
			}
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s did not catch up with group %d in %s", id, g, moveCatchUp)
		}
		if !n.pause(ctx, 100*time.Millisecond) {
			return context.Cause(ctx)
		}
	}
}

// groupLeaderAddr is the peer address of group g's leader as this node sees
// it (its own Store's view when a member, else asked).
func (n *Node) groupLeaderAddr(ctx context.Context, g int) (string, string) {
	if s := n.gs()[g]; n.member(g) {
		addr, id := s.Raft().LeaderWithID()
		return string(addr), string(id)
	}
	return n.remoteLeader(ctx, g, false)
}

// memberStatus asks the node at addr for its applied and last index in
// group g.
func (n *Node) memberStatus(ctx context.Context, g int, addr string) (applied, last uint64, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	b, err := n.gs()[g].Call(ctx, addr, command.EncodeRequests([]command.Request{{Op: command.Admin{Action: "status"}, Spec: command.AdminSpec}}))
	if err != nil {
		return 0, 0, false
	}
	v, _, err := resp.ReadValue(b)
	if err != nil || len(v.Elems) != 1 || len(v.Elems[0].Elems) < 2 {
		return 0, 0, false
	}
	e := v.Elems[0].Elems
	return uint64(max(e[0].Int, 0)), uint64(max(e[1].Int, 0)), true
}

// drainTimeout bounds RAFT REMOVE of a node of a placed cluster: its
// replicas are re-created on the other nodes first.
const drainTimeout = 4 * time.Minute

// placeAdmin runs RAFT ADD and REMOVE of a placed cluster on group 0's
// leader (nodeAdmin): "nodeadd" makes the node a non-voter of group 0 (the
// balancer then moves its share onto it), "noderemove" drains the node (the
// balancer moves every replica it holds, waiting for each) and then takes it
// out of group 0.
func (n *Node) placeAdmin(ctx context.Context, op command.Admin) resp.Value {
	switch op.Action {
	case "nodeadd":
		if op.ID == "" || op.Addr == "" {
			return resp.Error("ERR node id and peer address are required")
		}
		for _, srv := range n.gs()[0].Configuration() {
			if string(srv.ID) == op.ID {
				return resp.OK // already a member (a retried join)
			}
		}
		if err := n.groupAdmin(ctx, 0, "learner", op.ID, op.Addr); err != nil {
			return resp.Error(err.Error())
		}
		return resp.OK
	}
	// noderemove
	known := false
	for _, srv := range n.gs()[0].Configuration() {
		known = known || string(srv.ID) == op.ID
	}
	if !known {
		return resp.Error("ERR no such node: " + op.ID)
	}
	if op.ID == n.cfg.NodeID {
		// The balancer runs here: hand group 0 to another voter, whose
		// balancer then drains this node.
		if err := n.groupAdmin(ctx, 0, "transfer", "", ""); err != nil {
			return resp.Error(err.Error())
		}
		return n.doRetrying(ctx, 0, []command.Request{{Op: op, Spec: command.AdminSpec}})[0]
	}
	n.place.mu.Lock()
	if n.place.leaving == nil {
		n.place.leaving = map[string]bool{}
	}
	n.place.leaving[op.ID] = true
	n.place.mu.Unlock()
	defer func() {
		n.place.mu.Lock()
		delete(n.place.leaving, op.ID)
		n.place.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	for {
		n.refreshRemote(ctx)
		if !n.holdsReplicas(op.ID) {
			break
		}
		if _, err := n.placeStep(ctx); err != nil {
			n.log.Warn("draining a node: a move failed; trying again", "node", op.ID, "err", err)
		}
		if n.holdsReplicas(op.ID) && !n.pause(ctx, 100*time.Millisecond) {
			return resp.Error("ERR the node still holds replicas: " + strconv.Quote(op.ID) + " (" + context.Cause(ctx).Error() + ")")
		}
	}
	// A non-voter left by a move that failed half way, then group 0.
	for g := len(n.gs()) - 1; g >= 0; g-- {
		servers, _ := n.groupServers(g)
		if !hasID(servers, op.ID) {
			continue
		}
		if err := n.groupAdmin(ctx, g, "remove", op.ID, ""); err != nil {
			return resp.Error(err.Error())
		}
	}
	return resp.OK
}

// hasID reports whether servers lists node id.
func hasID(servers []raft.Server, id string) bool {
	return slices.ContainsFunc(servers, func(s raft.Server) bool { return string(s.ID) == id })
}

// holdsReplicas reports whether node id is a voter of any group (as far as
// this node knows).
func (n *Node) holdsReplicas(id string) bool {
	for g := range n.gs() {
		servers, _ := n.groupServers(g)
		for _, srv := range servers {
			if string(srv.ID) == id && srv.Suffrage == raft.Voter {
				return true
			}
		}
	}
	return false
}

// homes maps the groups holding a -home-zones tag's slot to its zone, for
// the zones some node of nodes is in (a home in no node's zone is ignored,
// as is a second tag's zone for a group that has one).
func (n *Node) homes(nodes []placement.Node) map[int]string {
	if len(n.cfg.HomeZones) == 0 {
		return nil
	}
	m := n.ShardMap()
	out := map[int]string{}
	for _, tag := range slices.Sorted(maps.Keys(n.cfg.HomeZones)) {
		zone := n.cfg.HomeZones[tag]
		if !slices.ContainsFunc(nodes, func(nd placement.Node) bool { return nd.Zone == zone }) {
			continue
		}
		g := m.GroupOf([]byte(tag))
		if _, taken := out[g]; !taken {
			out[g] = zone
		}
	}
	return out
}

// placeTick runs the balancer in the background (one placeStep at a time; a
// tick that finds one running does nothing).
func (n *Node) placeTick() {
	if !n.place.runMu.TryLock() {
		return
	}
	n.place.runMu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-n.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		if _, err := n.placeStep(ctx); err != nil {
			n.log.Warn("placement", "err", err)
		}
	}()
}

// movesReply answers "moves" (asked of group 0's leader): the placement
// moves under way, each as [group, "g3 +n7"], and the last move's error (""
// none) as the final element.
func (n *Node) movesReply() resp.Value {
	n.place.mu.Lock()
	moves, err := n.place.moving, n.place.last
	n.place.mu.Unlock()
	var out []resp.Value
	for _, m := range moves {
		out = append(out, resp.Array(resp.Int(int64(m.Group)), resp.BulkString(m.String())))
	}
	last := ""
	if err != nil {
		last = err.Error()
	}
	return resp.Array(append(out, resp.BulkString(last))...)
}

// moveAskTimeout bounds RAFT GROUPS' question to group 0's leader.
const moveAskTimeout = 500 * time.Millisecond

// movesInProgress asks group 0's leader for the placement moves under way,
// by group ("g3 +n7,g3 -n2"); empty when there are none, the cluster is
// not placed, or the leader did not answer in time.
func (n *Node) movesInProgress(ctx context.Context) map[int]string {
	out := map[int]string{}
	if len(n.gs()) == 1 {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, moveAskTimeout)
	defer cancel()
	v := n.gs()[0].Do(ctx, []command.Request{{Op: command.Admin{Action: "moves"}, Spec: command.AdminSpec}})[0]
	if v.Kind != resp.KindArray || len(v.Elems) == 0 {
		return out
	}
	for _, e := range v.Elems[:len(v.Elems)-1] {
		if len(e.Elems) != 2 {
			continue
		}
		g := int(e.Elems[0].Int)
		if out[g] != "" {
			out[g] += ","
		}
		out[g] += e.Elems[1].String()
	}
	return out
}
