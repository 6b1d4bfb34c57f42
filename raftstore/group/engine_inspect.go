package group

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/multiraft"
)

// EngineLogs reads every group's log of a node on the engine whose log is
// sh (no process holding it), as hashicorp/raft's log would hold it, for
// the chaos replay, which checks both alike: a command as a LogCommand of
// the same data; a membership change, and a group's first members at index
// 1, as a LogConfiguration of the members by node id; anything else (a
// barrier, a new leader's empty entry) as a LogNoop. Indexes and terms are
// the engine's. The result is indexed by group.
func EngineLogs(sh *logstore.Shared, groups int) ([][]raft.Log, error) {
	out := make([][]raft.Log, groups)
	for g := range out {
		gl, err := multiraft.ReadGroupLog(sh, multiraft.Group(g))
		if err != nil {
			return nil, err
		}
		if out[g], err = hashicorpShaped(gl); err != nil {
			return nil, fmt.Errorf("group %d: %w", g, err)
		}
	}
	return out, nil
}

// hashicorpShaped turns one group's engine log into hashicorp/raft's shape
// (EngineLogs).
func hashicorpShaped(gl multiraft.GroupLog) ([]raft.Log, error) {
	names := map[uint64]raft.Server{} // engine id → node, from every member context seen
	learn := func(n uint64, ctx []byte) {
		if id, addr, ok := parseMemberContext(ctx); ok && engineID(id) == n {
			names[n] = raft.Server{ID: id, Address: addr}
		}
	}
	for n, ctx := range gl.FirstMembers {
		learn(n, ctx)
	}
	voters, learners := map[uint64]bool{}, map[uint64]bool{}
	for _, n := range gl.First.Voters {
		voters[n] = true
	}
	for _, n := range gl.First.Learners {
		learners[n] = true
	}
	config := func(index, term uint64) (raft.Log, error) {
		var conf raft.Configuration
		for _, set := range []struct {
			ids map[uint64]bool
			s   raft.ServerSuffrage
		}{{voters, raft.Voter}, {learners, raft.Nonvoter}} {
			for _, n := range slices.Sorted(maps.Keys(set.ids)) {
				srv, ok := names[n]
				if !ok {
					return raft.Log{}, fmt.Errorf("index %d: member %d has no name", index, n)
				}
				srv.Suffrage = set.s
				conf.Servers = append(conf.Servers, srv)
			}
		}
		return raft.Log{Index: index, Term: term, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(conf)}, nil
	}
	var out []raft.Log
	if len(voters) > 0 {
		l, err := config(1, 1)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	for i := range gl.Entries {
		e := &gl.Entries[i]
		if cmd, ok := multiraft.CommandOf(e); ok {
			out = append(out, raft.Log{Index: e.Index, Term: e.Term, Type: raft.LogCommand, Data: cmd})
			continue
		}
		cc, member, ok, err := multiraft.ChangeOf(e)
		if err != nil {
			return nil, fmt.Errorf("index %d: %w", e.Index, err)
		}
		if !ok {
			out = append(out, raft.Log{Index: e.Index, Term: e.Term, Type: raft.LogNoop})
			continue
		}
		for _, c := range cc.Changes {
			switch c.Type {
			case pb.ConfChangeAddNode:
				voters[c.NodeID] = true
				delete(learners, c.NodeID)
				learn(c.NodeID, member)
			case pb.ConfChangeAddLearnerNode:
				delete(voters, c.NodeID)
				learners[c.NodeID] = true
				learn(c.NodeID, member)
			case pb.ConfChangeRemoveNode:
				delete(voters, c.NodeID)
				delete(learners, c.NodeID)
			}
		}
		l, err := config(e.Index, e.Term)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
