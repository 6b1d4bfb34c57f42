package command

// Admin is a cluster operation (RAFT ADD|REMOVE|TRANSFER|MEMBERS|GROUPS|
// MOVESLOTS) or a request between nodes. The membership operations change the
// Raft configuration, not the keyspace: the store runs them on the leader (a
// follower forwards them); only "propose" carries a keyspace entry.
type Admin struct {
	// Action: from RAFT, "add", "remove", "transfer", "members", "groups",
	// "moveslots", "addgroups"; only between nodes, "status" (applied index for MEMBERS),
	// "await" (a waiter's outcome for a follower) and "propose" (an internal
	// entry a Node built).
	Action string
	ID     string // the node (transfer: "" = any voter); await: the waiter id
	Addr   string // add: the node's peer address; await: the wait in ms; propose: the encoded entry
}

func (Admin) isOp() {}

// AdminSpec (door.go) is the RAFT row that every Admin request carries.
