// Package multiraft runs every Raft group a node holds from one driver
// goroutine over go.etcd.io/raft's RawNodes, with one writer goroutine for
// their storage, so that the groups share the node's costs: one
// Storage.Save (one journal record, one fdatasync) for every group's entries
// of the moment, one frame per peer per turn carrying every group's
// messages, one tick for all. It is the engine issue 50 asks for; lockd's
// groups still run on hashicorp/raft (DESIGN.md says what is left before
// they move).
package multiraft
