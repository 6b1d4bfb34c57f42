// Package multiraft runs every Raft group a node holds from one driver
// goroutine over go.etcd.io/raft's RawNodes, so that the groups share the
// node's costs: one Storage.Save (one journal record, one fdatasync) per turn
// for every group's entries, at most two frames per peer per turn carrying
// every group's messages, one tick for all. It is the engine issue 50 asks
// for; the groups of lockd still run on hashicorp/raft (DESIGN.md says what
// is left before they move).
package multiraft
