package redisproto

import (
	"strconv"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// RAFT ADD id peer-addr | RAFT REMOVE id | RAFT TRANSFER [id] | RAFT MEMBERS —
// cluster membership, one command each, sent to any node.
func init() {
	handle("raft|add", func(c *conn, a [][]byte) resp.Value {
		return c.storeOp(command.Admin{Action: "add", ID: string(a[2]), Addr: string(a[3])}, command.AdminSpec)
	})
	handle("raft|remove", func(c *conn, a [][]byte) resp.Value {
		return c.storeOp(command.Admin{Action: "remove", ID: string(a[2])}, command.AdminSpec)
	})
	handle("raft|transfer", func(c *conn, a [][]byte) resp.Value {
		if len(a) > 3 {
			return resp.Error(string(command.ErrSyntax))
		}
		op := command.Admin{Action: "transfer"}
		if len(a) == 3 {
			op.ID = string(a[2])
		}
		return c.storeOp(op, command.AdminSpec)
	})
	handle("raft|members", func(c *conn, _ [][]byte) resp.Value {
		return c.storeOp(command.Admin{Action: "members"}, command.AdminSpec)
	})
	handle("raft|groups", func(c *conn, _ [][]byte) resp.Value {
		return c.storeOp(command.Admin{Action: "groups"}, command.AdminSpec)
	})
	handle("raft|moveslots", func(c *conn, a [][]byte) resp.Value {
		for _, x := range a[2:] {
			if _, err := strconv.ParseUint(string(x), 10, 16); err != nil {
				return resp.Error("ERR slot and group must be non-negative integers")
			}
		}
		return c.storeOp(command.Admin{Action: "moveslots", ID: string(a[2]) + "-" + string(a[3]), Addr: string(a[4])}, command.AdminSpec)
	})
	handle("raft|addgroups", func(c *conn, a [][]byte) resp.Value {
		if n, err := strconv.ParseUint(string(a[2]), 10, 8); err != nil || n == 0 {
			return resp.Error("ERR the number of groups to add must be a positive integer")
		}
		return c.storeOp(command.Admin{Action: "addgroups", ID: string(a[2])}, command.AdminSpec)
	})
	handle("raft|help", func(*conn, [][]byte) resp.Value {
		return help("RAFT", "ADD <node-id> <peer-addr>", "    Add a voter to the cluster (run it on any node).",
			"REMOVE <node-id>", "    Remove a node from the cluster.", "TRANSFER [<node-id>]",
			"    Hand leadership to the node, or to any up-to-date voter.", "MEMBERS",
			"    List the members: id, address, suffrage, leader, applied index.", "GROUPS",
			"    List the Raft groups: leader, term, commit/applied/last index, voters, slots.",
			"MOVESLOTS <from> <to> <group>", "    Move slots from..to (inclusive) to a group, online, with their locks and sessions.",
			"ADDGROUPS <count>", "    Add Raft groups, placed on the nodes, and move their share of the slots to them.")
	})
}
