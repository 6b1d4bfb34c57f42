package redisproto

import (
	"crypto/sha1"
	"encoding/hex"
	"net"
	"strconv"
	"strings"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// CLUSTER KEYSLOT|INFO|MYID|SLOTS|SHARDS|NODES, READONLY, READWRITE, ASKING:
// the view a cluster-aware client (go-redis ClusterClient, redis-cli -c) needs.
// Every slot belongs to the one Raft group; its leader is the slots' master and
// the other members are its replicas. Any node also serves any key (a follower
// forwards), so a client with a stale view is still answered, never redirected.
func init() {
	c := local("cluster", -2, nil)
	subcmd(c, "keyslot", 3, func(_ *conn, a [][]byte) resp.Value { return resp.Int(int64(shard.Slot(a[2]))) })
	subcmd(c, "myid", 2, func(c *conn, _ [][]byte) resp.Value { return resp.BulkString(nodeID(c.myRaftID())) })
	subcmd(c, "info", 2, cmdClusterInfo)
	subcmd(c, "slots", 2, cmdClusterSlots)
	subcmd(c, "shards", 2, cmdClusterShards)
	subcmd(c, "nodes", 2, cmdClusterNodes)
	subcmd(c, "help", 2, func(*conn, [][]byte) resp.Value {
		return help("CLUSTER", "INFO", "    Return information about the cluster.", "KEYSLOT <key>",
			"    Return the hash slot for <key>.", "MYID", "    Return the node id.", "NODES",
			"    Return cluster configuration seen by node. Output format:",
			"    <id> <ip:port@cport> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
			"SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
			"SLOTS", "    Return information about slots range mappings. Each range is made of:",
			"    start, end, master and replicas IP addresses, ports and ids")
	})
	for _, n := range []string{"readonly", "readwrite", "asking"} {
		local(n, 1, func(*conn, [][]byte) resp.Value { return resp.OK })
	}
}

// member is one Raft member as RAFT MEMBERS reports it.
type member struct {
	raftID, peerAddr, respAddr string
	leader                     bool
	applied                    int64
}

// members asks the store for the membership, leader first.
func (c *conn) members() []member {
	v := c.storeOp(command.Admin{Action: "members"}, command.AdminSpec)
	var out []member
	for _, m := range v.Elems {
		var x member
		for i := 0; i+1 < len(m.Elems); i += 2 {
			val := m.Elems[i+1]
			switch m.Elems[i].String() {
			case "id":
				x.raftID = val.String()
			case "addr":
				x.peerAddr = val.String()
			case "resp_addr":
				x.respAddr = val.String()
			case "leader":
				x.leader = val.Kind == resp.KindBool && val.Int != 0 || val.Kind == resp.KindInt && val.Int == 1
			case "applied_index":
				x.applied = val.Int
			}
		}
		if x.leader {
			out = append([]member{x}, out...)
		} else {
			out = append(out, x)
		}
	}
	return out
}

// myRaftID is this node's Raft id.
func (c *conn) myRaftID() string { return pairValue(c.srv.store.Stats(), "raft_node_id", "") }

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

func cmdClusterInfo(c *conn, _ [][]byte) resp.Value {
	ms := c.members()
	state, assigned := "fail", 0
	if len(ms) > 0 && ms[0].leader {
		state, assigned = "ok", shard.Slots
	}
	epoch := term(c)
	lines := [][2]string{
		{"cluster_state", state}, {"cluster_slots_assigned", strconv.Itoa(assigned)},
		{"cluster_slots_ok", strconv.Itoa(assigned)}, {"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", strconv.Itoa(shard.Slots - assigned)},
		{"cluster_known_nodes", strconv.Itoa(len(ms))}, {"cluster_size", "1"},
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

// clusterNode is a member's [ip, port, id, metadata] entry of CLUSTER SLOTS.
func clusterNode(m member) resp.Value {
	host, port := hostPort(m.respAddr)
	return resp.Array(resp.BulkString(host), resp.Int(port), resp.BulkString(nodeID(m.raftID)), resp.EmptyList)
}

// reachable lists the members with a known RESP address, leader first; nil
// while there is no leader.
func reachable(ms []member) []member {
	if len(ms) == 0 || !ms[0].leader {
		return nil
	}
	var out []member
	for _, m := range ms {
		if m.respAddr != "" {
			out = append(out, m)
		}
	}
	return out
}

// slotMap is the slot map this node serves: every slot in the one Raft group
// (several groups, with a replicated map, are issue 7's next step).
var slotMap, _ = shard.NewMap(1)

func cmdClusterSlots(c *conn, _ [][]byte) resp.Value {
	ms := reachable(c.members())
	if len(ms) == 0 {
		return resp.EmptyList
	}
	var out []resp.Value
	for _, r := range slotMap.Ranges() {
		entry := []resp.Value{resp.Int(int64(r.From)), resp.Int(int64(r.To))}
		for _, m := range ms { // the group's leader first, then its replicas
			entry = append(entry, clusterNode(m))
		}
		out = append(out, resp.Array(entry...))
	}
	return resp.Array(out...)
}

func cmdClusterShards(c *conn, _ [][]byte) resp.Value {
	ms := c.members()
	if len(ms) == 0 || !ms[0].leader {
		return resp.EmptyList
	}
	var nodes []resp.Value
	for i, m := range ms {
		host, port := hostPort(m.respAddr)
		role, health := "replica", "online"
		if i == 0 {
			role = "master"
		}
		if m.respAddr == "" {
			health = "failed"
		}
		nodes = append(nodes, resp.Map(
			resp.BulkString("id"), resp.BulkString(nodeID(m.raftID)),
			resp.BulkString("port"), resp.Int(port),
			resp.BulkString("ip"), resp.BulkString(host),
			resp.BulkString("endpoint"), resp.BulkString(host),
			resp.BulkString("role"), resp.BulkString(role),
			resp.BulkString("replication-offset"), resp.Int(max(m.applied, 0)),
			resp.BulkString("health"), resp.BulkString(health),
		))
	}
	return resp.Array(resp.Map(
		resp.BulkString("slots"), resp.Array(resp.Int(0), resp.Int(shard.Slots-1)),
		resp.BulkString("nodes"), resp.Array(nodes...),
	))
}

func cmdClusterNodes(c *conn, _ [][]byte) resp.Value {
	ms := c.members()
	me := c.myRaftID()
	epoch := term(c)
	master := "-"
	if len(ms) > 0 && ms[0].leader {
		master = nodeID(ms[0].raftID)
	}
	var b strings.Builder
	for i, m := range ms {
		var flags []string
		if m.raftID == me {
			flags = append(flags, "myself")
		}
		role, of, slots, link := "slave", master, "", "connected"
		if i == 0 && m.leader {
			role, of, slots = "master", "-", " 0-16383"
		}
		flags = append(flags, role)
		if m.respAddr == "" {
			flags, link = append(flags, "fail"), "disconnected"
		}
		_, peerPort := hostPort(m.peerAddr)
		b.WriteString(nodeID(m.raftID) + " " + m.respAddr + "@" + strconv.FormatInt(peerPort, 10) + " " +
			strings.Join(flags, ",") + " " + of + " 0 0 " + epoch + " " + link + slots + "\n")
	}
	return resp.Verbatim(b.String())
}
