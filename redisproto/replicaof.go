package redisproto

import (
	"context"
	"net"
	"strconv"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Replicator is implemented by a Store that can follow a Redis master
// (raftstore.Node; issue 48): REPLICAOF/SLAVEOF, ROLE, INFO replication and
// CONFIG masteruser|masterauth use it. A Store without it answers as a Redis
// master that cannot become a replica.
type Replicator interface {
	// ReplicaOf follows the master at addr (host:port), or none ("");
	// already reports that addr was followed already. An error's text is
	// the whole error reply.
	ReplicaOf(ctx context.Context, addr string) (already bool, err error)
	// ReplicationInfo is INFO's replication section while following a
	// master (nil otherwise).
	ReplicationInfo() [][2]string
	// Role is ROLE's content (master true: the rest is unset).
	Role() (master bool, host string, port int64, state string, offset int64)
	// SetMasterAuth and MasterAuth are CONFIG SET|GET masteruser and
	// masterauth.
	SetMasterAuth(user, pass string)
	MasterAuth() (user, pass string)
	// SetStopOnUnsupported and StopOnUnsupported are CONFIG SET|GET
	// lockd-replica-unsupported stop|count.
	SetStopOnUnsupported(stop bool)
	StopOnUnsupported() bool
}

func init() {
	handle("replicaof", cmdReplicaOf)
	handle("slaveof", cmdReplicaOf)
	handle("role", cmdRole)
}

// REPLICAOF host port | NO ONE (and SLAVEOF), as Redis 7.0's replicaofCommand
// answers, for the whole cluster: every group follows the master, clients'
// writes are refused (READONLY) until REPLICAOF NO ONE.
func cmdReplicaOf(c *conn, a [][]byte) resp.Value {
	r, ok := c.srv.store.(Replicator)
	if !ok {
		return resp.Error("ERR REPLICAOF is not available on this server")
	}
	addr := ""
	if !(command.EqualFold(a[1], "no") && command.EqualFold(a[2], "one")) {
		port, ok := command.ParseInt(a[2]) // as Redis's string2ll: no '+', no leading zero
		if !ok || port < 0 || port > 65535 {
			return resp.Error("ERR Invalid master port")
		}
		addr = net.JoinHostPort(string(a[1]), strconv.FormatInt(port, 10))
	}
	already, err := r.ReplicaOf(c.srv.ctx, addr)
	switch {
	case err != nil:
		return resp.Error(err.Error()) // a whole error reply (Replicator)
	case already:
		return resp.Simple("OK Already connected to specified master")
	}
	return resp.OK
}

// ROLE: ["master", 0, []] while the cluster follows no master (lockd keeps no
// Redis replication offset of its own, and its replicas are Raft's), else
// ["slave", host, port, state, offset] as a Redis replica answers.
func cmdRole(c *conn, _ [][]byte) resp.Value {
	r, ok := c.srv.store.(Replicator)
	if !ok {
		return resp.Array(resp.BulkString("master"), resp.Int(0), resp.Array())
	}
	master, host, port, state, offset := r.Role()
	if master {
		return resp.Array(resp.BulkString("master"), resp.Int(0), resp.Array())
	}
	return resp.Array(resp.BulkString("slave"), resp.BulkString(host), resp.Int(port), resp.BulkString(state), resp.Int(offset))
}
