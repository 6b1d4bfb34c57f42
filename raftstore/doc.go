// Package raftstore is lockd's replicated store: a Node, one lockd
// process's share of the cluster, runs one or more Raft groups (package
// raftstore/group: each a group.Store, the keyspace of raftstore/fsm
// replicated by hashicorp/raft) on one peer port, and routes every request
// to the group that owns its keys. raftstore imports group, never the
// reverse.
//
// The request path, from a front door (redisproto, httpapi) to a reply:
//
//  1. Node.Do (route.go) sends each request of a connection's batch to the
//     group that owns its keys, splitting or fanning out the few that span
//     groups (the command table's route kind), and answers in order; a
//     request refused because its slot moved, or because no leader was
//     ready, is sent again (bounded).
//  2. group.Store.Do runs a group's part: forwarded to the leader from a
//     follower, proposed to Raft on the leader, applied by every replica
//     through fsm.Keyspace (the group package's doc has this part).
//  3. Every reply carries its outcome (resp.Value.Outcome): what the router
//     decides by (moved, refused, no session), never the text.
//
// Files: node.go (OpenNode, Close, the shard map this node routes by),
// route.go (Node.Do), node_move.go (slot moves), node_sessions.go (sessions
// across groups), node_info.go (INFO, RAFT GROUPS, the cluster view, leader
// spreading), node_place.go (placement: the balancer, RAFT ADD/REMOVE of a
// placed cluster), node_remote.go (relaying groups this node does not host), api.go (the group's names the rest of lockd uses through
// raftstore: Config, Peer, the defaults), faults.go (FaultClock; only with
// the tag faults). One group is package group; the adapters around
// hashicorp/raft that need no group (log cache, log bridge, proxy dials) are
// package raftio. DESIGN.md has the mechanism of both levels in full and
// the decisions with their numbers.
package raftstore
