// Package group is one Raft group of lockd's replicated store: a Store is a
// hashicorp/raft instance, its state machine (the keyspace of
// raftstore/fsm), its log and snapshots, and the leader's duties (log time,
// expiry ticks, session timers, rate limits, takeover). raftstore's Node
// runs one Store per group on one peer port (OpenShared); Open runs a group
// alone on a port of its own. Nothing here imports raftstore.
//
// The request path of a group's part of a batch (Node.Do sends it here):
//
//  1. Store.Do (write.go): on a follower it forwards the part to the leader
//     (forwarding.go, bounded by leaderwatch.go); on the leader, doLocal
//     proposes runs of writes as batch entries and waits for their futures
//     in proposal order (replyLoop); reads pass the read barrier first
//     (read.go); scripts pass admission (scripts.go).
//  2. hashicorp/raft replicates the entries (pipe.go, parallelsync.go,
//     logstore) and the machine (apply.go) applies them, all of a batch at
//     once, through fsm.Keyspace; replies come back in the futures.
//  3. A LOCK.ACQUIRE … WAIT that joined a queue answers Queued: acquire.go
//     holds the client until this node applies the grant (or the wait ends).
//  4. Every reply carries its outcome (resp.Value.Outcome): what the layers
//     above decide by, never the text (errors.go).
//
// Files: store.go (Config, Open, OpenShared, Close, the Raft settings),
// write.go, read.go, apply.go, acquire.go, scripts.go, forwarding.go,
// leaderwatch.go, contact.go (a silent leader), errors.go; leader.go
// (takeover, expiry, nudges), linger.go, sessions.go, owners.go,
// ratelimit.go, clock.go (log time), admin.go (membership), metrics.go,
// acl.go, logbytes.go (the log bounded by bytes), peerauth.go (who may speak
// on the peer port); parallelsync.go (the durability rule at its four
// seams) and pipe.go (appendpipe wiring, batch-entry versions), which
// install into this group's state machine and Raft and so live here rather
// than in raftstore/raftio. Fault injection (faults.go, clockfault.go)
// builds only with the tag faults; nofaults.go stands in for faults.go
// otherwise. raftstore's DESIGN.md has the mechanism in full.
package group
