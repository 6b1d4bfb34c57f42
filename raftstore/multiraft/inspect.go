package multiraft

import (
	"errors"
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/lockd/lockd/raftstore/logstore"
)

// Reading a group's log as stored, for tools that check it after the fact
// (lockd's chaos replay), with no Node running.

// GroupLog is one group's log as a LogStorage keeps it.
type GroupLog struct {
	// First is the group's first snapshot (index 1: its first members),
	// when this replica started the group; empty for a replica that joined.
	First pb.ConfState
	// FirstMembers are First's member contexts.
	FirstMembers map[uint64][]byte
	// Entries are the log's entries, from its first index.
	Entries []pb.Entry
}

// ReadGroupLog reads group g's log from sh (which no Node is writing).
func ReadGroupLog(sh *logstore.Shared, g Group) (GroupLog, error) {
	var out GroupLog
	st, err := sh.Group(int(g), nil)
	if err != nil {
		return out, err
	}
	defer st.Close()
	switch v, err := st.Get(firstSnapshotKey); {
	case errors.Is(err, logstore.ErrKeyNotFound):
	case err != nil:
		return out, err
	default:
		var snap pb.Snapshot
		if err := snap.Unmarshal(v); err != nil {
			return out, fmt.Errorf("multiraft: group %d: first snapshot: %w", g, err)
		}
		out.First = snap.Metadata.ConfState
		if out.FirstMembers, _, err = decodeSnapshot(snap.Data); err != nil {
			return out, fmt.Errorf("multiraft: group %d: first snapshot: %w", g, err)
		}
	}
	out.Entries, _, err = readEntries(g, st)
	return out, err
}

// CommandOf returns the command a log entry carries (what the group's
// StateMachine.Apply was given for it); ok is false for an entry that
// carries none: a barrier, a new leader's empty entry, a membership change.
func CommandOf(e *pb.Entry) (cmd []byte, ok bool) {
	if e.Type != pb.EntryNormal || len(e.Data) <= 8 {
		return nil, false
	}
	return e.Data[8:], true
}

// ChangeOf returns the membership change a log entry carries and its
// member context (members.go); ok is false for any other entry.
func ChangeOf(e *pb.Entry) (cc pb.ConfChangeV2, member []byte, ok bool, err error) {
	if e.Type != pb.EntryConfChange && e.Type != pb.EntryConfChangeV2 {
		return cc, nil, false, nil
	}
	c, _, member, err := decodeConfChange(e)
	if err != nil {
		return cc, nil, true, err
	}
	return c.AsV2(), member, true, nil
}
