package redisproto

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// ClusterViewer is implemented by a Store that knows its Raft groups, their
// members and leaders (raftstore's Node). With it, on a node whose cluster
// has several voters, CLUSTER SLOTS, SHARDS, NODES, INFO and MYID are built
// from the View and cluster-aware connections are answered -MOVED for keys
// whose group another node leads; without it, or with one voter, the door
// shows a standalone Redis's face (cluster.go) and never redirects.
type ClusterViewer interface {
	// Voters returns how many voters the cluster has, from local state: it
	// never blocks (HELLO and INFO ask it on every call).
	Voters() int
	// ClusterView returns this node's current picture of the cluster. It is
	// called from connection goroutines, concurrently, and must not block on
	// the network (a View read from local state, possibly a little stale).
	ClusterView() shard.View
}

// MOVED redirects (Redis Cluster's, byte for byte):
//
//   - A connection is cluster-aware once it sends CLUSTER SLOTS|SHARDS|NODES,
//     READONLY, READWRITE or ASKING, or from the start under Config.Redirect.
//     Plain connections are never redirected: any node serves any key (the
//     store forwards to the group's leader), which standalone clients need.
//   - On an aware connection, a keyspace command (of a valid arity) whose keys
//     all hash to one slot, whose group has a leader on another node with a
//     known RESP address, is answered "-MOVED <slot> <host>:<port>" and not
//     run. Keyless commands, commands queued inside MULTI (and so EXEC),
//     NAMESPACE.* (a prefix is not a key of one slot), keys in several slots,
//     slots whose group has no leader and slots this node leads all go to the
//     store as usual.
//
// The View is cached on the Server: a decision not to redirect (the common
// case, a client already at the leader) may use a View up to viewMaxAge old —
// being wrong costs a forwarding hop, never a wrong answer. A redirect is only
// sent on a View fetched during the connection's current batch (fetched
// afresh when the cached one says "redirect"), so two nodes never bounce a
// client between them on cached views after a leader change. Only aware
// connections ever read the View.

// viewMaxAge bounds the age of the cached View used for keys that stay here.
const viewMaxAge = 100 * time.Millisecond

// cachedView is a View and when it was fetched.
type cachedView struct {
	v  shard.View
	at time.Time
}

// viewCache holds the latest View fetched from the store (Server.views).
type viewCache struct{ p atomic.Pointer[cachedView] }

// clusterViewer returns the store as a ClusterViewer, if it is one.
func (s *Server) clusterViewer() (ClusterViewer, bool) {
	cv, ok := s.store.(ClusterViewer)
	return cv, ok
}

// clusterView returns a View at most maxAge old (0: fetched now) and keeps
// the newest one fetched for the next caller. Safe for concurrent use.
func (s *Server) clusterView(cv ClusterViewer, maxAge time.Duration) *shard.View {
	now := time.Now()
	cur := s.views.p.Load()
	if cur != nil && maxAge > 0 && now.Sub(cur.at) < maxAge {
		return &cur.v
	}
	fresh := &cachedView{v: cv.ClusterView(), at: now}
	for cur == nil || !cur.at.After(now) {
		if s.views.p.CompareAndSwap(cur, fresh) {
			break
		}
		cur = s.views.p.Load()
	}
	return &fresh.v
}

// moved decides whether a keyspace command on this connection is answered
// -MOVED instead of being run (see above). Called by the connection's own
// goroutine, outside MULTI, before the command is parsed.
func (c *conn) moved(spec *command.Spec, args [][]byte) (resp.Value, bool) {
	if !c.clusterAware || !spec.CheckArity(len(args)) {
		return resp.Value{}, false
	}
	cv, ok := c.srv.clusterViewer()
	if !ok {
		return resp.Value{}, false
	}
	slot, ok := oneSlot(command.SlotKeys(args))
	if !ok {
		return resp.Value{}, false
	}
	v := c.batchView
	if v == nil {
		v = c.srv.clusterView(cv, viewMaxAge)
	}
	addr, ok := redirectTo(v, slot)
	if ok && c.batchView == nil { // confirm on a View fetched now
		c.batchView = c.srv.clusterView(cv, 0)
		addr, ok = redirectTo(c.batchView, slot)
	}
	if !ok {
		return resp.Value{}, false
	}
	return resp.Error("MOVED " + strconv.Itoa(int(slot)) + " " + addr), true
}

// oneSlot returns the slot of keys when there is at least one and all of them
// hash to it.
func oneSlot(keys [][]byte) (uint16, bool) {
	if len(keys) == 0 {
		return 0, false
	}
	slot := shard.Slot(keys[0])
	for _, k := range keys[1:] {
		if shard.Slot(k) != slot {
			return 0, false
		}
	}
	return slot, true
}

// redirectTo returns the RESP address of the leader of slot's group when a
// client should be sent there: the group has a leader, it is not this node,
// and its address is known.
func redirectTo(v *shard.View, slot uint16) (string, bool) {
	l, ok := v.LeaderOf(slot)
	if !ok || l.ID == v.Self || l.RESPAddr == "" {
		return "", false
	}
	return l.RESPAddr, true
}
