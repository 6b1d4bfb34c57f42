package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	case "status": // asked by another node for RAFT MEMBERS, catch-up and zones
		return resp.Array(resp.Int(int64(s.raft.AppliedIndex())), resp.Int(int64(s.raft.LastIndex())), resp.BulkString(s.cfg.ClientAddr),
			resp.BulkString(s.cfg.Zone))
	case "following": // asked by the leader to confirm a read (read.go): [term, leader id, own id]
		term := s.raft.CurrentTerm() // before the leader: the term is what the leader relies on
		_, leader := s.raft.LeaderWithID()
		return resp.Array(resp.Int(int64(term)), resp.BulkString(string(leader)), resp.BulkString(s.cfg.NodeID))
	case "where": // asked by a node that does not host the group
		return s.where()
	case "bootstrap": // a group added at runtime, by group 0's leader (raftstore's node_grow.go)
		if s.engine != nil {
			return resp.Error("ERR " + ErrEngineGroups.Error())
		}
		if err := s.Bootstrap(op.Addr); err != nil {
			return resp.Error("ERR " + err.Error())
		}
		return resp.OK
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
	case "learner": // a placement move's first step: a non-voter that catches up
		if op.ID == "" || op.Addr == "" {
			return resp.Error("ERR node id and peer address are required")
		}
		f = s.raft.AddNonvoter(raft.ServerID(op.ID), raft.ServerAddress(op.Addr), 0, s.cfg.ApplyTimeout)
	case "demote": // group 0 keeps every node, as a non-voter where it holds no vote
		f = s.raft.DemoteVoter(raft.ServerID(op.ID), 0, s.cfg.ApplyTimeout)
	case "feature": // turn a feature on in a group this node asked for it (EnsureFeature)
		fl, err := strconv.ParseUint(op.ID, 10, 64)
		if err != nil {
			return resp.Error("ERR internal: bad feature")
		}
		s.ensureFeature(ctx, fl)
		return resp.OK
	case "moveslots", "nodeadd", "noderemove", "moves", "addgroups": // the Node's, on group 0's leader
		if s.cfg.nodeAdmin != nil {
			if v, ok := s.cfg.nodeAdmin(ctx, op); ok {
				return v
			}
		}
		return resp.Error("ERR only a node of several groups moves slots, places nodes or adds groups")
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

// where answers a node that does not host the group (raftstore's remote
// groups): the leader this member sees and the configuration it holds, as
// [leader peer address, leader id, then id, peer address, suffrage of each
// server], or nil when this node is not in its own latest configuration or
// sees no leader (it cannot tell where the group is).
func (s *Store) where() resp.Value {
	addr, id := s.raft.LeaderWithID()
	servers := s.Configuration()
	if addr == "" || !hasServer(servers, raft.ServerID(s.cfg.NodeID)) {
		return resp.Nil
	}
	out := []resp.Value{resp.BulkString(string(addr)), resp.BulkString(string(id))}
	for _, srv := range servers {
		out = append(out, resp.BulkString(string(srv.ID)), resp.BulkString(string(srv.Address)), resp.BulkString(srv.Suffrage.String()))
	}
	return resp.Array(out...)
}

// Bootstrap bootstraps this group, which has no Raft state, with the voters
// in spec ("id=peer-addr,…"; this node among them): a group added to a
// running cluster. A group whose configuration is spec's already (a retried
// request) is left as it is; one with another configuration, or with
// state, is an error.
func (s *Store) Bootstrap(spec string) error {
	var conf raft.Configuration
	for _, p := range strings.Split(spec, ",") {
		id, addr, ok := strings.Cut(p, "=")
		if !ok || id == "" || addr == "" {
			return errors.New("internal: bad bootstrap configuration")
		}
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(addr)})
	}
	if !hasServer(conf.Servers, raft.ServerID(s.cfg.NodeID)) {
		return errors.New("internal: this node is not among the voters it was asked to bootstrap")
	}
	if !s.cfg.Added || s.cfg.Group == 0 {
		return errors.New("internal: only a group added to a running cluster is bootstrapped on request")
	}
	err := s.raft.BootstrapCluster(conf).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		cur := s.Configuration()
		if len(cur) == len(conf.Servers) && !slices.ContainsFunc(conf.Servers, func(srv raft.Server) bool { return !hasServer(cur, srv.ID) }) {
			return nil
		}
		return errors.New("this group has state already, with another configuration")
	}
	if err != nil {
		return fmt.Errorf("bootstrap failed: %w", err)
	}
	s.log.Info("bootstrapped a group added to the cluster", "voters", len(conf.Servers))
	return nil
}

// ShardMap is the replicated shard map this group holds (group 0), or nil.
func (s *Store) ShardMap() []byte { return s.m.shardMap() }

// Configuration is the group's latest configuration (latestServers).
func (s *Store) Configuration() []raft.Server { return latestServers(s.raft) }

// Members lists the configuration as this node knows it, with each member's
// RESP address, applied index, lag behind this node's last log index and zone (asked
// over the peer port; applied -1 and no RESP address when a member does not
// answer within a second).
func (s *Store) Members(ctx context.Context) resp.Value {
	leaderAddr, leaderID := s.raft.LeaderWithID()
	servers := s.Configuration()
	applied := make([]int64, len(servers))
	clientAddr := make([]string, len(servers))
	zone := make([]resp.Value, len(servers)) // nil: no answer, or a member from before placement (its status has no zone)
	for i := range zone {
		zone[i] = resp.Nil
	}
	var wg sync.WaitGroup
	for i, srv := range servers {
		if srv.Address == s.addr {
			applied[i] = int64(s.raft.AppliedIndex())
			clientAddr[i] = s.cfg.ClientAddr
			zone[i] = resp.BulkString(s.cfg.Zone)
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
				if len(v.Elems[0].Elems) >= 4 {
					zone[i] = resp.BulkString(v.Elems[0].Elems[3].String())
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
			resp.BulkString("zone"), zone[i],
		))
	}
	return resp.Array(out...)
}
