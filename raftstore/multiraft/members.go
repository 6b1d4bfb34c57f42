package multiraft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Member contexts are what a group's members are to the Node's owner (to
// lockd: a node's name and peer address), which Raft knows only by number.
// The membership change that adds a member carries its context (after the
// proposal id in ConfChangeV2.Context), every snapshot of the group carries
// every member's, and a new group's first snapshot its first voters'
// (GroupConfig.Members): so every replica learns them, also one restarted
// or caught up from a snapshot, and tells Config.OnMember.

// snapshotVersion starts a group's snapshot data: then a uvarint count of
// member contexts, each a uvarint id, a uvarint length and the bytes; the
// rest is the state machine's snapshot.
const snapshotVersion = 1

// maxMemberContext bounds one member's context (and a transport's hello).
const maxMemberContext = 4 << 10

var errSnapshotData = errors.New("multiraft: malformed snapshot data")

// encodeSnapshot returns a group snapshot's data: members' contexts, then
// the state machine's data sm.
func encodeSnapshot(members map[uint64][]byte, sm []byte) []byte {
	ids := slices.Sorted(maps.Keys(members))
	b := []byte{snapshotVersion}
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, id)
		b = binary.AppendUvarint(b, uint64(len(members[id])))
		b = append(b, members[id]...)
	}
	return append(b, sm...)
}

// decodeSnapshot splits a group snapshot's data into its member contexts
// and the state machine's data (nil when it has none: the empty state).
func decodeSnapshot(data []byte) (members map[uint64][]byte, sm []byte, err error) {
	members = map[uint64][]byte{}
	if len(data) == 0 {
		return members, nil, nil // a snapshot written before any data: the empty state
	}
	if data[0] != snapshotVersion {
		return nil, nil, fmt.Errorf("%w: version %d", errSnapshotData, data[0])
	}
	b := data[1:]
	next := func() (uint64, bool) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	count, ok := next()
	if !ok || count > uint64(len(b)) {
		return nil, nil, errSnapshotData
	}
	for range count {
		id, ok1 := next()
		size, ok2 := next()
		if !ok1 || !ok2 || size > maxMemberContext || size > uint64(len(b)) {
			return nil, nil, errSnapshotData
		}
		members[id] = slices.Clone(b[:size])
		b = b[size:]
	}
	if len(b) > 0 {
		sm = b
	}
	return members, sm, nil
}

// learnMembers records cc's member context (the one node it adds, or
// removes) in r and tells the Node's owner.
func (n *Node) learnMembers(r *replica, cc pb.ConfChangeI, ctx []byte) {
	for _, c := range cc.AsV2().Changes {
		switch c.Type {
		case pb.ConfChangeAddNode, pb.ConfChangeAddLearnerNode:
			if len(ctx) > 0 {
				r.members[c.NodeID] = slices.Clone(ctx)
				n.tellMember(r.g, c.NodeID, ctx)
			}
		case pb.ConfChangeRemoveNode:
			delete(r.members, c.NodeID)
		}
	}
}

// tellMember passes a member's context to Config.OnMember, if set.
func (n *Node) tellMember(g Group, id uint64, ctx []byte) {
	if n.cfg.OnMember != nil {
		n.cfg.OnMember(g, id, ctx)
	}
}

// restoreMembers replaces r's member contexts with a snapshot's and tells
// the Node's owner of each.
func (n *Node) restoreMembers(r *replica, members map[uint64][]byte) {
	r.members = members
	for _, id := range slices.Sorted(maps.Keys(members)) {
		n.tellMember(r.g, id, members[id])
	}
}
