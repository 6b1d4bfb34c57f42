package raftstore

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
	"github.com/prometheus/client_golang/prometheus"
)

// groupStatus is one group as this node sees it (INFO and RAFT GROUPS).
type groupStatus struct {
	group                                         int
	state, leader, members                        string // members: voter ids, ';'-separated (INFO uses commas between fields)
	term, commit, applied, lastLog, voters, slots int64
	appliedToken                                  int64 // logical index of the last command applied (Store.appliedToken)
}

// groupStatuses reads every group's status.
func (n *Node) groupStatuses() []groupStatus {
	gs := n.gs() // before the map: a map names only groups already open
	m := n.ShardMap()
	slots := make([]int64, max(len(gs), m.Groups))
	for g, c := range m.Owned() {
		slots[g] = int64(c)
	}
	out := make([]groupStatus, len(gs))
	for g, s := range gs {
		if !n.member(g) {
			// Hosted elsewhere: what this node last heard from a member.
			servers, leader := n.remoteServers(g)
			out[g] = groupStatus{group: g, state: "remote", leader: leader, members: voterIDs(servers), voters: countVoters(servers), slots: slots[g]}
			continue
		}
		st := s.Raft().Stats()
		_, leader := s.Raft().LeaderWithID()
		num := func(k string) int64 { return atoi(st[k]) }
		out[g] = groupStatus{group: g, state: strings.ToLower(s.Raft().State().String()), leader: string(leader), members: voterIDs(s.Configuration()),
			term: num("term"), commit: num("commit_index"), applied: num("applied_index"), lastLog: num("last_log_index"),
			voters: countVoters(s.Configuration()), slots: slots[g], appliedToken: int64(s.AppliedToken())}
	}
	return out
}

// voterIDs are the voters of servers, sorted, ';'-separated.
func voterIDs(servers []raft.Server) string {
	var ids []string
	for _, srv := range servers {
		if srv.Suffrage == raft.Voter {
			ids = append(ids, string(srv.ID))
		}
	}
	slices.Sort(ids)
	return strings.Join(ids, ";")
}

// countVoters is how many of servers are voters.
func countVoters(servers []raft.Server) int64 {
	n := int64(0)
	for _, srv := range servers {
		if srv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}

// Stats are INFO's raft section: the node, the shard map, group 0's Raft
// state under the single-group names (raft_state, raft_leader, …), then one
// line per group: raft_group_N:state=…,leader=…,term=…,commit_index=…,
// applied_index=…,applied_token=…,last_log_index=…,voters=…,slots=…,members=id;id;….
func (n *Node) Stats() [][2]string {
	out := n.gs()[0].Stats()
	for i := range out {
		switch out[i][0] { // group 0 speaks for itself alone
		case "raft_groups":
			out[i][1] = strconv.Itoa(len(n.gs()))
		case "raft_log_write_batches": // the node's log writes, every group's
			var sum uint64
			for _, g := range n.gs() {
				sum += g.Logs().Batches()
			}
			out[i][1] = strconv.FormatUint(sum, 10)
		}
	}
	out = append(out, [2]string{"raft_replicas", strconv.Itoa(n.cfg.Replicas)},
		[2]string{"raft_groups_created", strconv.Itoa(bootGroups(n.cfg.DataDir, len(n.gs())))},
		[2]string{"raft_groups_auto", boolDigit(n.autoGroups)},
		[2]string{"raft_engine", boolDigit(n.engine != nil)},
		[2]string{"shard_map_version", strconv.FormatUint(n.ShardMap().Version, 10)})
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, g := range n.groupStatuses() {
		out = append(out, [2]string{"raft_group_" + strconv.Itoa(g.group), "state=" + g.state + ",leader=" + g.leader +
			",term=" + i(g.term) + ",commit_index=" + i(g.commit) + ",applied_index=" + i(g.applied) +
			",applied_token=" + i(g.appliedToken) + ",last_log_index=" + i(g.lastLog) + ",voters=" + i(g.voters) + ",slots=" + i(g.slots) + ",members=" + g.members})
	}
	return out
}

// KeyspaceInfo is INFO's db0 line over every group.
func (n *Node) KeyspaceInfo() string {
	keys, expires := 0, 0
	for g, s := range n.gs() {
		if !n.member(g) {
			continue // another node's group: this copy is empty or old
		}
		k, e := s.Counts()
		keys += k
		expires += e
	}
	if keys == 0 {
		return ""
	}
	return "keys=" + strconv.Itoa(keys) + ",expires=" + strconv.Itoa(expires) + ",avg_ttl=0"
}

// LockCounters adds the groups' lock statistics. Sessions are counted in
// group 0 (where they are opened; other groups hold attached copies). The
// store metrics (leader changes, refusals) are the node's, shared by its
// groups.
func (n *Node) LockCounters() LockCounters {
	out := n.gs()[0].LockCounters()
	out.LateOps = maps.Clone(out.LateOps)
	for i, s := range n.gs()[1:] {
		if !n.member(i + 1) {
			continue // counted by the nodes that host it
		}
		c := s.LockCounters()
		out.Locks += c.Locks
		out.Holders += c.Holders
		out.Waiters += c.Waiters
		out.Blocked += c.Blocked
		out.Grants += c.Grants
		out.Releases += c.Releases
		out.Expiries += c.Expiries
		out.DelayHits += c.DelayHits
		out.QueueFull += c.QueueFull
		for ns, v := range c.LateOps {
			if out.LateOps == nil {
				out.LateOps = map[string]int64{}
			}
			out.LateOps[ns] += v
		}
	}
	return out
}

// BlockedClients is how many of this node's clients are blocked now, in a
// blocking pop (BLPOP … BZPOPMAX) or in LOCK.ACQUIRE … WAIT, over every
// group, and how many of those wait with a timeout: INFO's blocked_clients
// and clients_in_timeout_table (group.Store.BlockedHere).
func (n *Node) BlockedClients() (blocked, timed int) {
	for _, s := range n.gs() {
		b, t := s.BlockedHere()
		blocked += b
		timed += t
	}
	return blocked, timed
}

// LockInfo is INFO's "# Locks" section over every group.
func (n *Node) LockInfo() [][2]string { return group.LockInfoOf(n.LockCounters()) }

// Collectors returns the node's store instruments (shared by its groups), and
// where the groups share one log the count of its synced writes (one journal
// fdatasync each, which may hold several groups' appends): with
// lockd_raft_log_write_batches_total (every group's writes) it gives the group
// writes per fsync.
func (n *Node) Collectors() []prometheus.Collector {
	cs := n.gs()[0].Collectors()
	if sh := n.sharedLog; sh != nil {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockd_log_commits_total",
			Help: "Synced writes (one journal fdatasync each) of the node's Raft log, which every group shares."},
			func() float64 { txns, _ := sh.Commits(); return float64(txns) }))
	}
	return cs
}

// Voters returns how many voters group 0's latest configuration has: more
// than one on a cluster, one on a lone node. It reads this node's own copy of
// the configuration: no network, never blocks (HELLO's and INFO's face).
func (n *Node) Voters() int {
	v := 0
	for _, srv := range n.gs()[0].Configuration() {
		if srv.Suffrage == raft.Voter {
			v++
		}
	}
	return v
}

// ClusterView is this node's picture of the cluster, built from local Raft
// state and the address book (no network call, except a refresh of the book
// when a voter's RESP address is still unknown, at most every 200 ms).
func (n *Node) ClusterView() shard.View {
	v := shard.View{Map: n.ShardMap(), Self: n.cfg.NodeID}
	book := n.addrs.snapshot()
	for _, srv := range n.gs()[0].Configuration() {
		if _, ok := book[string(srv.ID)]; !ok && string(srv.ID) != n.cfg.NodeID && n.addrs.due(200*time.Millisecond) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			n.refreshAddrs(ctx)
			cancel()
			book = n.addrs.snapshot()
			break
		}
	}
	if n.cfg.NodeID != "" && n.cfg.ClientAddr != "" {
		book[n.cfg.NodeID] = n.cfg.ClientAddr
	}
	seen := map[string]shard.NodeAddress{}
	for g, s := range n.gs() {
		servers, leaderID := n.groupServers(g)
		leader := raft.ServerID(leaderID)
		var gv shard.GroupView
		for _, srv := range servers {
			if srv.Suffrage != raft.Voter {
				continue
			}
			id := string(srv.ID)
			m := shard.Member{ID: id, RESPAddr: book[id], PeerAddr: string(srv.Address), Leader: srv.ID == leader && leader != ""}
			if id == n.cfg.NodeID {
				m.Applied = s.Raft().AppliedIndex()
			}
			if m.Leader {
				gv.Members = append([]shard.Member{m}, gv.Members...)
			} else {
				gv.Members = append(gv.Members, m)
			}
			seen[id] = shard.NodeAddress{ID: id, RESPAddr: m.RESPAddr, PeerAddr: m.PeerAddr}
		}
		v.Groups = append(v.Groups, gv)
	}
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		v.Nodes = append(v.Nodes, seen[id])
	}
	return v
}

// addrBook remembers every node's RESP address (learned from RAFT MEMBERS
// status calls), so that the cluster view is built without network calls.
type addrBook struct {
	mu     sync.Mutex
	resp   map[string]string
	status map[string]nodeStatus // what each node said in its last answer to a refresh
	asked  time.Time             // the last refresh
}

// nodeStatus is what a node said of itself when it last answered a refresh.
type nodeStatus struct {
	zone string    // its -zone
	seen time.Time // when
	// placing: its status named its zone (a lockd with placement; no group
	// is placed while a member runs an older one)
	placing bool
}

// zoneOf is node id's zone, when it last answered (zero: never) and
// whether it runs a lockd with placement.
func (b *addrBook) zoneOf(id string) (zone string, seen time.Time, placing bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.status[id]
	return st.zone, st.seen, st.placing
}

// answered records that node id answered a refresh, in zone, and whether it
// runs a lockd with placement.
func (b *addrBook) answered(id, zone string, placing bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.status == nil {
		b.status = map[string]nodeStatus{}
	}
	b.status[id] = nodeStatus{zone: zone, seen: time.Now(), placing: placing}
}

// due reports whether the last refresh is older than d (and then counts one
// as started now).
func (b *addrBook) due(d time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.asked) < d {
		return false
	}
	b.asked = time.Now()
	return true
}

// snapshot is a copy of the book (never nil: callers add to it).
func (b *addrBook) snapshot() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]string, len(b.resp)+1)
	maps.Copy(out, b.resp)
	return out
}

func (b *addrBook) set(id, addr string) {
	if addr == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.resp == nil {
		b.resp = map[string]string{}
	}
	b.resp[id] = addr
}

// refreshAddrs asks the members of group 0 for their RESP addresses.
func (n *Node) refreshAddrs(ctx context.Context) {
	v := n.gs()[0].Members(ctx)
	for _, m := range v.Elems {
		var id, addr, zone string
		placing := false // its status says its zone: a lockd with placement
		applied := int64(-1)
		for i := 0; i+1 < len(m.Elems); i += 2 {
			switch m.Elems[i].String() {
			case "id":
				id = m.Elems[i+1].String()
			case "resp_addr":
				addr = m.Elems[i+1].String()
			case "zone":
				zone, placing = m.Elems[i+1].String(), m.Elems[i+1].Kind != resp.KindNull
			case "applied_index":
				applied = m.Elems[i+1].Int
			}
		}
		n.addrs.set(id, addr)
		if applied >= 0 {
			n.addrs.answered(id, zone, placing)
		}
	}
}

// groupsInfo is RAFT GROUPS: for each group its id, this node's state (or
// "remote" for a group it does not host), the leader, term, commit/applied/
// last index, the applied token, voters, slot count, members (the voters) and
// moving (the placement moves of the group under way, asked of group 0's
// leader; "" when none or it did not answer within moveAskTimeout).
func (n *Node) groupsInfo(ctx context.Context) resp.Value {
	moving := n.movesInProgress(ctx)
	var out []resp.Value
	for _, g := range n.groupStatuses() {
		out = append(out, resp.Map(
			resp.BulkString("group"), resp.Int(int64(g.group)),
			resp.BulkString("state"), resp.BulkString(g.state),
			resp.BulkString("leader"), resp.BulkString(g.leader),
			resp.BulkString("term"), resp.Int(g.term),
			resp.BulkString("commit_index"), resp.Int(g.commit),
			resp.BulkString("applied_index"), resp.Int(g.applied),
			resp.BulkString("applied_token"), resp.Int(g.appliedToken),
			resp.BulkString("last_log_index"), resp.Int(g.lastLog),
			resp.BulkString("voters"), resp.Int(g.voters),
			resp.BulkString("slots"), resp.Int(g.slots),
			resp.BulkString("members"), resp.BulkString(g.members),
			resp.BulkString("moving"), resp.BulkString(moving[g.group]),
		))
	}
	return resp.Array(out...)
}

func atoi(s string) int64 {
	i, _ := strconv.ParseInt(s, 10, 64)
	return i
}

// balanceEvery is how often a node checks that group leaderships are spread
// and refreshes its address book.
const balanceEvery = 2 * time.Second

// balanceLoop spreads group leaders over the nodes: group g's preferred
// leader is the (g mod voters)-th voter in id order. A node leading a group
// whose preferred leader is another voter that answers and has caught up
// hands the group over (a leadership transfer), each group at most once per
// transferBackoff, so after a node joins,
// leaves or comes back every node again leads its share.
func (n *Node) balanceLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(balanceEvery)
	defer tick.Stop()
	last := map[int]time.Time{}
	for {
		select {
		case <-n.closed:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n.refreshAddrs(ctx)
		cancel()
		if len(n.gs()) == 1 {
			continue // one group: nothing to spread
		}
		ctx, cancel = context.WithTimeout(context.Background(), whereTimeout+time.Second)
		n.refreshRemote(ctx)
		cancel()
		if n.gs()[0].IsLeader() {
			n.placeTick()
		}
		everyNode := len(n.gs()[0].Configuration())
		for g, s := range n.gs() {
			if !s.IsLeader() || time.Since(last[g]) < transferBackoff || g == 0 && n.growing.Load() > 0 {
				continue
			}
			if countVoters(s.Configuration()) != int64(everyNode) {
				continue // a placed group: the balancer moves its leader (placeStep)
			}
			pref, ok := preferredLeader(s.Configuration(), g)
			if !ok || pref.ID == raft.ServerID(n.cfg.NodeID) || !n.caughtUp(g, pref) {
				continue
			}
			last[g] = time.Now()
			if err := s.Raft().LeadershipTransferToServer(pref.ID, pref.Address).Error(); err != nil {
				n.log.Info("handing a group to its preferred leader failed", "group", g, "to", pref.ID, "err", err)
			} else {
				n.log.Info("handed a group to its preferred leader", "group", g, "to", pref.ID)
			}
		}
	}
}

// transferBackoff is the least time between two hand-overs of one group.
const transferBackoff = 10 * time.Second

// preferredLeader is group g's preferred leader among the voters.
func preferredLeader(servers []raft.Server, g int) (raft.Server, bool) {
	var voters []raft.Server
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, s)
		}
	}
	if len(voters) == 0 {
		return raft.Server{}, false
	}
	slices.SortFunc(voters, func(a, b raft.Server) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return voters[g%len(voters)], true
}

// caughtUp asks srv (over the peer port) for its applied index in group g
// and reports whether it answers and is close to this leader's log.
func (n *Node) caughtUp(g int, srv raft.Server) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	applied, _, ok := n.memberStatus(ctx, g, string(srv.Address))
	return ok && applied+1000 >= n.gs()[g].Raft().LastIndex()
}

// boolDigit is INFO's way of writing a flag: "1" or "0".
func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
