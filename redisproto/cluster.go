package redisproto

import (
	"crypto/sha1"
	"encoding/hex"
	"net"
	"strconv"
	"strings"

	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// CLUSTER KEYSLOT|INFO|MYID|SLOTS|SHARDS|NODES|HELP, READONLY, READWRITE,
// ASKING: the view a cluster-aware client (go-redis ClusterClient, redis-py
// RedisCluster, redis-cli -c) needs, shown only where there is a cluster.
//
// The face: a node whose store is a ClusterViewer that counts more than one
// voter (raftstore.Node's Voters: its own copy of the Raft configuration, no
// network, never blocks) looks like a Redis Cluster node (clusterFace): HELLO
// says mode cluster, INFO redis_mode:cluster and cluster_enabled:1, and these
// commands answer from the View, fetched afresh for each command (only then:
// a View may wait up to a second for a voter's address). Any other node
// (one member, or a store without a View) looks like a standalone Redis
// 7.0.15: every one of these commands, given a valid arity, answers
// "-ERR This instance has cluster support disabled", as
// redis-server without cluster-enabled does, so that clients that probe
// CLUSTER SLOTS (or INFO's cluster_enabled) choose a plain client. The face
// follows the Raft configuration, not a flag: it changes when the first
// member is added or the last other one removed.
//
// On a cluster, a range of slots belongs to its group, whose leader is the
// range's master and whose other members are its replicas; in CLUSTER NODES
// every node is a master holding the slots of the groups it leads now.
//
// Any node serves any key (a follower forwards), so a plain client is never
// redirected; a connection that asks for the slot layout (SLOTS, SHARDS,
// NODES) or sends READONLY, READWRITE or ASKING on a cluster becomes
// cluster-aware and may be answered -MOVED (moved.go).
func init() {
	handle("cluster|keyslot", clusterOnly(func(_ *conn, a [][]byte, _ *shard.View) resp.Value {
		return resp.Int(int64(shard.Slot(a[2])))
	}))
	handle("cluster|myid", clusterOnly(func(_ *conn, _ [][]byte, v *shard.View) resp.Value {
		return resp.BulkString(nodeID(v.Self))
	}))
	handle("cluster|info", clusterOnly(cmdClusterInfo))
	handle("cluster|slots", clusterOnly(aware(cmdClusterSlots)))
	handle("cluster|shards", clusterOnly(aware(cmdClusterShards)))
	handle("cluster|nodes", clusterOnly(aware(cmdClusterNodes)))
	handle("cluster|help", clusterOnly(func(*conn, [][]byte, *shard.View) resp.Value {
		return help("CLUSTER", "INFO", "    Return information about the cluster.", "KEYSLOT <key>",
			"    Return the hash slot for <key>.", "MYID", "    Return the node id.", "NODES",
			"    Return cluster configuration seen by node. Output format:",
			"    <id> <ip:port@cport> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
			"SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
			"SLOTS", "    Return information about slots range mappings. Each range is made of:",
			"    start, end, master and replicas IP addresses, ports and ids")
	}))
	for _, n := range []string{"readonly", "readwrite", "asking"} {
		handle(n, clusterOnly(aware(func(*conn, [][]byte, *shard.View) resp.Value { return resp.OK })))
	}
}

// errClusterDisabled is redis-server's answer, without cluster mode, to
// every CLUSTER subcommand, READONLY, READWRITE and ASKING.
const errClusterDisabled = "ERR This instance has cluster support disabled"

// clusterOnly wraps a cluster command: on a clustered node it runs with a
// View fetched now; on any other node it answers errClusterDisabled and
// changes nothing.
func clusterOnly(run func(*conn, [][]byte, *shard.View) resp.Value) func(*conn, [][]byte) resp.Value {
	return func(c *conn, a [][]byte) resp.Value {
		cv, ok := c.srv.clusterFace()
		if !ok {
			return resp.Error(errClusterDisabled)
		}
		return run(c, a, c.srv.clusterView(cv, 0))
	}
}

// aware wraps a command that makes its connection cluster-aware.
func aware(run func(*conn, [][]byte, *shard.View) resp.Value) func(*conn, [][]byte, *shard.View) resp.Value {
	return func(c *conn, a [][]byte, v *shard.View) resp.Value {
		c.clusterAware = true
		return run(c, a, v)
	}
}

// clusterFace is the one rule for the face (see above), for every caller: it
// returns the store as a ClusterViewer and true when this node shows the
// Redis Cluster face now. Safe for concurrent use.
func (s *Server) clusterFace() (ClusterViewer, bool) {
	cv, ok := s.clusterViewer()
	if !ok {
		return nil, false
	}
	return cv, cv.Voters() > 1 // never blocks, unlike a View's refresh
}

// clustered reports whether this node shows the Redis Cluster face now
// (HELLO's mode, INFO's redis_mode and cluster_enabled).
func (s *Server) clustered() bool {
	_, ok := s.clusterFace()
	return ok
}

// mode is HELLO's mode and INFO's redis_mode: "cluster" or "standalone".
func (s *Server) mode() string {
	if s.clustered() {
		return "cluster"
	}
	return "standalone"
}

// nodeID is the 40-hex-digit cluster node id of a Raft id.
func nodeID(raftID string) string {
	sum := sha1.Sum([]byte("lockd-node:" + raftID))
	return hex.EncodeToString(sum[:])
}

func hostPort(addr string) (string, int64) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	p, _ := strconv.ParseInt(port, 10, 64)
	return host, p
}

func term(c *conn) string { return pairValue(c.srv.store.Stats(), "raft_term", "0") }

// infoReply is CLUSTER INFO: ok slots (their group has a leader), known
// nodes, nodes serving slots, and whether every group has a leader.
func infoReply(c *conn, slotsOK, known, size int, ok bool) resp.Value {
	state := "fail"
	if ok {
		state = "ok"
	}
	epoch := term(c)
	lines := [][2]string{
		{"cluster_state", state}, {"cluster_slots_assigned", strconv.Itoa(slotsOK)},
		{"cluster_slots_ok", strconv.Itoa(slotsOK)}, {"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", strconv.Itoa(shard.Slots - slotsOK)},
		{"cluster_known_nodes", strconv.Itoa(known)}, {"cluster_size", strconv.Itoa(size)},
		{"cluster_current_epoch", epoch}, {"cluster_my_epoch", epoch},
		{"cluster_stats_messages_sent", "0"}, {"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	}
	var b strings.Builder
	for _, kv := range lines {
		b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
	}
	return resp.Verbatim(b.String())
}

// slotsNode is a node's [ip, port, id, metadata] entry of CLUSTER SLOTS.
func slotsNode(raftID, respAddr string) resp.Value {
	host, port := hostPort(respAddr)
	return resp.Array(resp.BulkString(host), resp.Int(port), resp.BulkString(nodeID(raftID)), resp.EmptyList)
}

// shardsNode is a node's entry of CLUSTER SHARDS.
func shardsNode(raftID, respAddr string, master bool, applied int64) resp.Value {
	host, port := hostPort(respAddr)
	role, health := "replica", "online"
	if master {
		role = "master"
	}
	if respAddr == "" {
		health = "failed"
	}
	return resp.Map(
		resp.BulkString("id"), resp.BulkString(nodeID(raftID)),
		resp.BulkString("port"), resp.Int(port),
		resp.BulkString("ip"), resp.BulkString(host),
		resp.BulkString("endpoint"), resp.BulkString(host),
		resp.BulkString("role"), resp.BulkString(role),
		resp.BulkString("replication-offset"), resp.Int(max(applied, 0)),
		resp.BulkString("health"), resp.BulkString(health),
	)
}

// nodesLine appends a node's line of CLUSTER NODES: "id ip:port@cport flags
// master ping pong epoch link slot...", slots already formatted (each with a
// leading space).
func nodesLine(b *strings.Builder, raftID, respAddr, peerAddr string, flags []string, of, epoch, slots string) {
	link := "connected"
	if respAddr == "" {
		flags, link = append(flags, "fail"), "disconnected"
	}
	_, peerPort := hostPort(peerAddr)
	b.WriteString(nodeID(raftID) + " " + respAddr + "@" + strconv.FormatInt(peerPort, 10) + " " +
		strings.Join(flags, ",") + " " + of + " 0 0 " + epoch + " " + link + slots + "\n")
}

// group returns group g of v (no members when v does not know it).
func group(v *shard.View, g int) shard.GroupView {
	if g < 0 || g >= len(v.Groups) {
		return shard.GroupView{}
	}
	return v.Groups[g]
}

// cmdClusterInfo is CLUSTER INFO from a View: ok while every group has a leader;
// the slots ok are those whose group has one; the size counts the nodes that
// lead at least one group.
func cmdClusterInfo(c *conn, _ [][]byte, v *shard.View) resp.Value {
	slotsOK := 0
	for _, r := range v.Map.Ranges() {
		if _, ok := group(v, r.Group).Leader(); ok {
			slotsOK += int(r.To) - int(r.From) + 1
		}
	}
	allLed := true
	leaders := map[string]bool{}
	for g := range v.Map.Groups {
		l, ok := group(v, g).Leader()
		allLed = allLed && ok
		if ok {
			leaders[l.ID] = true
		}
	}
	return infoReply(c, slotsOK, len(v.Nodes), len(leaders), allLed)
}

// cmdClusterSlots is CLUSTER SLOTS from a View: each range of the map, in slot
// order, with its group's leader then the other members with a known RESP
// address. A range whose group has no leader (or a leader with no known
// address) is left out: a client sends its keys to any node, which forwards.
func cmdClusterSlots(_ *conn, _ [][]byte, v *shard.View) resp.Value {
	var out []resp.Value
	for _, r := range v.Map.Ranges() {
		g := group(v, r.Group)
		l, ok := g.Leader()
		if !ok || l.RESPAddr == "" {
			continue
		}
		entry := []resp.Value{resp.Int(int64(r.From)), resp.Int(int64(r.To)), slotsNode(l.ID, l.RESPAddr)}
		for _, m := range g.Members[1:] {
			if m.RESPAddr != "" {
				entry = append(entry, slotsNode(m.ID, m.RESPAddr))
			}
		}
		out = append(out, resp.Array(entry...))
	}
	if len(out) == 0 {
		return resp.EmptyList
	}
	return resp.Array(out...)
}

// cmdClusterShards is CLUSTER SHARDS from a View: one shard per group that has a
// leader, in group order, with its ranges as a flat from, to, from, to… list
// and its members, the leader (master) first, then the replicas.
func cmdClusterShards(_ *conn, _ [][]byte, v *shard.View) resp.Value {
	ranges := v.Map.Ranges()
	var out []resp.Value
	for gi := range v.Map.Groups {
		g := group(v, gi)
		if _, ok := g.Leader(); !ok {
			continue
		}
		var slots, nodes []resp.Value
		for _, r := range ranges {
			if r.Group == gi {
				slots = append(slots, resp.Int(int64(r.From)), resp.Int(int64(r.To)))
			}
		}
		for i, m := range g.Members {
			nodes = append(nodes, shardsNode(m.ID, m.RESPAddr, i == 0, int64(min(m.Applied, 1<<63-1))))
		}
		out = append(out, resp.Map(
			resp.BulkString("slots"), resp.Array(slots...),
			resp.BulkString("nodes"), resp.Array(nodes...),
		))
	}
	if len(out) == 0 {
		return resp.EmptyList
	}
	return resp.Array(out...)
}

// cmdClusterNodes is CLUSTER NODES from a View: one line per known node, each a
// master ("myself," for this node) listing, as maximal runs, the slots of the
// groups it leads now; a node that leads none lists no slots.
func cmdClusterNodes(c *conn, _ [][]byte, v *shard.View) resp.Value {
	runs := map[string][]shard.Range{} // node id -> its slots, in order
	for _, r := range v.Map.Ranges() {
		l, ok := group(v, r.Group).Leader()
		if !ok {
			continue
		}
		rs := runs[l.ID]
		if n := len(rs); n > 0 && int(rs[n-1].To)+1 == int(r.From) {
			rs[n-1].To = r.To // adjacent groups led by the same node
			continue
		}
		runs[l.ID] = append(rs, r)
	}
	epoch := term(c)
	var b strings.Builder
	for _, n := range v.Nodes {
		flags := []string{"master"}
		if n.ID == v.Self {
			flags = []string{"myself", "master"}
		}
		var slots strings.Builder
		for _, r := range runs[n.ID] {
			slots.WriteString(" " + strconv.Itoa(int(r.From)))
			if r.To != r.From {
				slots.WriteString("-" + strconv.Itoa(int(r.To)))
			}
		}
		nodesLine(&b, n.ID, n.RESPAddr, n.PeerAddr, flags, "-", epoch, slots.String())
	}
	return resp.Verbatim(b.String())
}
