package command

// Admin is a cluster membership operation (RAFT ADD|REMOVE|TRANSFER|MEMBERS).
// It changes the Raft configuration, not the keyspace: the store runs it on the
// leader (a follower forwards it) and it never becomes a keyspace entry.
type Admin struct {
	Action string // "add", "remove", "transfer", "members"
	ID     string // the node (transfer: "" = any voter)
	Addr   string // add: the node's peer address
}

func (Admin) isOp() {}

// AdminSpec describes Admin operations; MEMBERS is answered by any node.
var AdminSpec = &Spec{Name: "raft", Write: true}
