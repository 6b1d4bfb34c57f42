// Package raftstore is lockd's replicated store: the keyspace of
// raftstore/fsm, replicated by hashicorp/raft in one or more groups.
//
// The request path, from a front door (redisproto, httpapi) to a reply:
//
//  1. Node.Do (route.go) sends each request of a connection's batch to the
//     group that owns its keys, splitting or fanning out the few that span
//     groups (the command table's route kind), and answers in order.
//  2. Store.Do (write.go) runs a group's part: on a follower it forwards the
//     part to the leader (forwarding.go, bounded by leaderwatch.go); on the
//     leader, doLocal proposes runs of writes as batch entries and waits for
//     their futures in proposal order (replyLoop); reads pass the read barrier
//     first (read.go); scripts pass admission (scripts.go).
//  3. hashicorp/raft replicates the entries (pipe.go, parallelsync.go,
//     logstore) and the machine (apply.go) applies them, all of a batch at
//     once, through fsm.Keyspace; replies come back in the futures.
//  4. A LOCK.ACQUIRE … WAIT that joined a queue answers Queued: acquire.go
//     holds the client until this node applies the grant (or the wait ends).
//  5. Every reply carries its outcome (resp.Value.Outcome): what the layers
//     above decide by, never the text (errors.go).
//
// Files: store.go (Config, Open, Close, the Raft settings), write.go,
// read.go, apply.go, acquire.go, scripts.go, forwarding.go, leaderwatch.go,
// contact.go (a silent leader), errors.go; leader.go (takeover, expiry,
// nudges), linger.go, sessions.go, owners.go, ratelimit.go, clock.go (log
// time), admin.go (membership); the adapters around hashicorp/raft:
// parallelsync.go, pipe.go, logbytes.go, logcache.go, hclogslog.go,
// dialvia.go, peerauth.go; the sharded node: node.go, route.go,
// node_move.go, node_sessions.go, node_info.go. Fault injection (faults.go,
// clockfault.go) builds only with the tag faults. DESIGN.md has the
// mechanism in full and the decisions with their numbers.
package raftstore
