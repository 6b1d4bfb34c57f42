package raftstore

import (
	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/appendpipe"
)

// The leader's own fsync runs while its followers write theirs.
//
// hashicorp/raft's leader writes a batch to its own log, waits for that
// write, and only then sends the batch to its followers: every commit pays
// two fsyncs in sequence (the leader's, then a follower's). Every group's
// log is written by a committer (a logstore.Shared's group, or with one
// group on the node logstore.OpenCommitted), and a leader whose group has
// another voter (asked at each write), or whose log is
// shared with other groups, has its StoreLogs return as soon as the batch
// is queued (logstore.Store.DeferSyncWhen), so the batch goes out while
// the leader's fsync runs, and a commit costs the slower of the two. A
// follower's writes do not defer, nor do a lone voter's of a log of its own
// (its OpenCommitted Store writes them on the caller's goroutine,
// WriteInlineWhen).
// hashicorp/raft then counts the leader's entry as stored before it is on
// disk; two things keep that from ever showing:
//
//   - The leader applies an entry only once its own copy is on disk
//     (machine.durable, in ApplyBatch). hashicorp/raft commits an entry once
//     a majority counting the leader has it, every follower among them on
//     disk; with the leader's copy on disk too, a majority holds it durably
//     before any client hears of it, as when the leader's write came first.
//   - Followers learn of commitment only up to what is on the leader's disk
//     (capCommit rewrites LeaderCommitIndex in the AppendEntries the leader
//     sends), so a follower never applies, and never wakes a waiter for, an
//     entry that a crash of the leader could still take from the majority.
//
// A leader that crashes before its fsync loses the entries that were not on
// disk, exactly as if it had crashed before writing them: none was applied
// anywhere, so none was acknowledged.

// capCommit is the group's Raft transport with every AppendEntries'
// LeaderCommitIndex capped at what the leader's log has on disk, pipelined
// or not. It embeds the transport as appendpipe.Inner, so hashicorp/raft
// sees its optional interfaces (pre-vote, Close).
type capCommit struct {
	appendpipe.Inner
	durable func() uint64 // logstore.Store.Durable of the group's log
}

func (t capCommit) cap(args *raft.AppendEntriesRequest) {
	if d := t.durable(); args.LeaderCommitIndex > d {
		args.LeaderCommitIndex = d
	}
}

// AppendEntries sends one AppendEntries (or heartbeat), its commit capped.
func (t capCommit) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.cap(args)
	return t.Inner.AppendEntries(id, target, args, resp)
}

// AppendEntriesPipeline opens a pipeline whose requests' commits are capped.
func (t capCommit) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Inner.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return capPipeline{p, t}, nil
}

type capPipeline struct {
	raft.AppendPipeline
	t capCommit
}

func (p capPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.t.cap(args)
	return p.AppendPipeline.AppendEntries(args, resp)
}
