package group

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// admin runs a membership operation on the leader.
func (s *Store) admin(ctx context.Context, op command.Admin) resp.Value {
	switch op.Action {
	case "members":
		return s.Members(ctx)
	case "await": // asked by a follower for one of its waiters (askLeader)
		return s.awaitOutcome(ctx, op.ID, op.Addr)
	case "status": // asked by another node for RAFT MEMBERS
		return resp.Array(resp.Int(int64(s.raft.AppliedIndex())), resp.Int(int64(s.raft.LastIndex())), resp.BulkString(s.cfg.ClientAddr))
	}
	if s.raft.State() != raft.Leader {
		return command.ErrorReply(ErrNotApplied)
	}
	var f raft.Future
	switch op.Action {
	case "add":
		if op.ID == "" || op.Addr == "" {
			return resp.Error("ERR node id and peer address are required")
		}
		f = s.raft.AddVoter(raft.ServerID(op.ID), raft.ServerAddress(op.Addr), 0, s.cfg.ApplyTimeout)
	case "remove":
		f = s.raft.RemoveServer(raft.ServerID(op.ID), 0, s.cfg.ApplyTimeout)
	case "moveslots":
		if s.cfg.nodeAdmin != nil {
			if v, ok := s.cfg.nodeAdmin(ctx, op); ok {
				return v
			}
		}
		return resp.Error("ERR slots can only be moved between the groups of a sharded node")
	case "transfer":
		if op.ID == s.cfg.NodeID {
			return resp.OK // it leads already (a sharded node transfers every group)
		}
		if op.ID == "" {
			f = s.raft.LeadershipTransfer()
		} else {
			addr := ""
			for _, srv := range s.Configuration() {
				if string(srv.ID) == op.ID {
					addr = string(srv.Address)
				}
			}
			if addr == "" {
				return resp.Error("ERR no such node: " + op.ID)
			}
			f = s.raft.LeadershipTransferToServer(raft.ServerID(op.ID), raft.ServerAddress(addr))
		}
	default:
		return resp.Error(string(command.ErrSyntax))
	}
	if err := f.Error(); err != nil {
		return resp.Error("ERR " + op.Action + " failed: " + err.Error())
	}
	return resp.OK
}

// ShardMap is the replicated shard map this group holds (group 0), or nil.
func (s *Store) ShardMap() []byte { return s.m.shardMap() }

// Configuration is the group's latest configuration (latestServers).
func (s *Store) Configuration() []raft.Server { return latestServers(s.raft) }

// Members lists the configuration as this node knows it, with each member's
// RESP address, applied index and lag behind this node's last log index (asked
// over the peer port; applied -1 and no RESP address when a member does not
// answer within a second).
func (s *Store) Members(ctx context.Context) resp.Value {
	leaderAddr, leaderID := s.raft.LeaderWithID()
	servers := s.Configuration()
	applied := make([]int64, len(servers))
	clientAddr := make([]string, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		if srv.Address == s.trans.LocalAddr() {
			applied[i] = int64(s.raft.AppliedIndex())
			clientAddr[i] = s.cfg.ClientAddr
			continue
		}
		wg.Add(1)
		go func(i int, addr string) {
			defer wg.Done()
			applied[i] = -1
			c, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			b, err := s.fwd.Call(c, addr, command.EncodeRequests([]command.Request{{Op: command.Admin{Action: "status"}, Spec: command.AdminSpec}}))
			if err != nil {
				return
			}
			if v, _, err := resp.ReadValue(b); err == nil && len(v.Elems) == 1 && len(v.Elems[0].Elems) >= 2 {
				applied[i] = v.Elems[0].Elems[0].Int
				if len(v.Elems[0].Elems) >= 3 {
					clientAddr[i] = v.Elems[0].Elems[2].String()
				}
			}
		}(i, string(srv.Address))
	}
	wg.Wait()
	last := int64(s.raft.LastIndex())
	var out []resp.Value
	for i, srv := range servers {
		lag := int64(-1)
		if applied[i] >= 0 {
			lag = max(last-applied[i], 0)
		}
		out = append(out, resp.Map(
			resp.BulkString("id"), resp.BulkString(string(srv.ID)),
			resp.BulkString("addr"), resp.BulkString(string(srv.Address)),
			resp.BulkString("resp_addr"), resp.BulkString(clientAddr[i]),
			resp.BulkString("suffrage"), resp.BulkString(srv.Suffrage.String()),
			resp.BulkString("leader"), resp.Bool(srv.ID == leaderID && srv.Address == leaderAddr),
			resp.BulkString("applied_index"), resp.Int(applied[i]),
			resp.BulkString("lag"), resp.Int(lag),
		))
	}
	return resp.Array(out...)
}
