package group

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/appendpipe"
	"github.com/lockd/lockd/raftstore/logstore"
)

// The leader's own fsync runs while its followers write theirs.
//
// hashicorp/raft's leader writes a batch to its own log, waits for that
// write, and only then sends the batch to its followers: every commit pays
// two fsyncs in sequence (the leader's, then a follower's). Every group's
// log is written by a committer (a logstore.Shared's group, or with one
// group on the node logstore.Open's), and a leader whose group has
// another voter (asked at each write), or whose log is
// shared with other groups, has its StoreLogs return as soon as the batch
// is queued (logstore.Store.DeferSyncWhen), so the batch goes out while
// the leader's fsync runs, and a commit costs the slower of the two. A
// follower's writes do not defer, nor do a lone voter's of a log of its own
// (its Store of logstore.Open writes them on the caller's goroutine,
// WriteInlineWhen).
// hashicorp/raft then counts the leader's entry as stored before it is on
// disk; two things keep that from ever showing:
//
//   - The leader applies an entry only once a majority of the voters holds
//     it on disk (machine.durable, in ApplyBatch; durableOnMajority):
//     either its own copy is on disk (hashicorp/raft commits an entry once
//     a majority counting the leader has it, every follower among them on
//     disk; with the leader's copy on disk too, a majority holds it durably
//     before any client hears of it, as when the leader's write came
//     first), or, for a group alone in its log, whichever comes first, a
//     majority of the voters without the leader answered that they stored
//     it (followerAcks, below). A group of a shared log waits for its own
//     disk: there the leader's fsync is the one its node's groups share, and
//     applying ahead of it measured worse (store.go).
//   - Followers learn of commitment only up to what is on the leader's disk
//     (capCommit rewrites LeaderCommitIndex in the AppendEntries the leader
//     sends), so a follower never applies, and never wakes a waiter for, an
//     entry that a crash of the leader could still take from the majority.
//
// A leader that crashes before its fsync loses the entries that were not on
// disk, exactly as if it had crashed before writing them: none was applied
// anywhere unless a majority of the other voters holds it on disk, and
// then it is committed as Raft means it (below) and the next leader has it.
//
// Why the followers' answers are enough. A follower answers an append with
// success only once the entries are in its log on disk (its writes never
// defer), and its log then matches the leader's up to the last of them.
// followerAcks keeps, per follower, the highest index so answered whose
// entry is of the term of the request (the leader's term): by Raft's commit
// rule an entry of the leader's own term stored by a majority is committed,
// and so is every entry before it; a later leader must have them all, and
// no voter ever removes them. An entry of an earlier term is not counted on
// its own (Raft's Figure 8: a majority holding it does not yet commit it).
// Only answers on a live pipeline count: when a pipeline fails or closes,
// what it reported is dropped (the follower may have restarted with
// another log), and a leader that holds none still has its own fsync.
// Followers still learn of commitment only up to the leader's disk
// (capCommit), a bound that is safe and only later than needed.

// durability owns the rule above for one group: it is the only place that
// installs its four seams, and each seam counts its use (seamUses) so that
// a test sees one bypassed (TestDurabilitySeamsHold):
//
//  1. deferral: the log store's StoreLogs returns before the fsync only for
//     a leader with another voter, or of a shared log (deferSync);
//  2. the capped commit index: every AppendEntries Raft sends carries a
//     LeaderCommitIndex no higher than the leader's durable index
//     (capCommit, from transport);
//  3. follower acknowledgements: what followers stored on disk, heard on
//     live pipelines (followerAcks, given to appendpipe as its AckObserver);
//  4. the apply wait: the machine applies an entry only once a majority of
//     the voters holds it on disk (applyWait: durableOnMajority, or the
//     group's own disk for a shared log).
type durability struct {
	log    logstore.DurableLog // what Raft writes to, as it reports durability
	acks   *followerAcks       // seam 3; nil for a group of a shared log
	raft   func() *raft.Raft   // the group's Raft (nil until it starts)
	shared bool                // the group's log is shared with other groups
	self   raft.ServerID       // this node
	early  func()              // counts a batch applied before the leader's own fsync
	uses   seamUses
}

// seamUses counts how often each seam was consulted.
type seamUses struct {
	deferAsked, capped, applyWaits atomic.Int64
}

// install puts the seams in place: the deferral and inline-write
// predicates on logs, the apply wait on m, and returns inner wrapped so
// that every AppendEntries' commit is capped: the transport Raft must use.
func (d *durability) install(logs *logstore.Store, m *machine, inner appendpipe.Inner) raft.Transport {
	logs.DeferSyncWhen(d.deferSync)
	if !d.shared {
		// A leader's write that did not defer (a lone voter's, or a
		// DeleteRange) goes to disk on Raft's goroutine as if the log had no
		// committer, when nothing is queued before it; a follower's writes go
		// through the committer. logstore asks this only for a write that did
		// not defer, so the voter count is not asked again.
		logs.WriteInlineWhen(d.leading)
	}
	m.durable = d.applyWait()
	return capCommit{Inner: inner, d: d}
}

// leading reports whether this node leads the group now.
func (d *durability) leading() bool {
	r := d.raft()
	return r != nil && r.State() == raft.Leader
}

// deferSync is seam 1: a leader with followers lets its fsync run while
// they write theirs; so does a leader of a group in a shared log, with
// followers or not: its leader loop goes on while the committer writes what
// several groups queued (a lone node of 8 groups made 0.89x the cycles/s
// writing without deferring, 2 pairs of 64 clients).
func (d *durability) deferSync() bool {
	d.uses.deferAsked.Add(1)
	r := d.raft()
	return r != nil && r.State() == raft.Leader && (d.shared || voters(r) > 1)
}

// applyWait is seam 4, machine.durable.
func (d *durability) applyWait() func(uint64) error {
	wait := d.log.WaitDurable
	if d.acks != nil {
		servers := func() []raft.Server {
			if r := d.raft(); r != nil { // a nil *raft.Raft is not a nil configured
				return latestServers(r)
			}
			return nil
		}
		wait = durableOnMajority(d.log, d.acks, servers, d.self, d.early)
	}
	return func(index uint64) error {
		d.uses.applyWaits.Add(1)
		return wait(index)
	}
}

// capCommit is the group's Raft transport with every AppendEntries'
// LeaderCommitIndex capped at what the leader's log has on disk, pipelined
// or not. It embeds the transport as appendpipe.Inner, so hashicorp/raft
// sees its optional interfaces (pre-vote, Close).
type capCommit struct {
	appendpipe.Inner
	d *durability
}

func (t capCommit) cap(args *raft.AppendEntriesRequest) {
	t.d.uses.capped.Add(1)
	if d := t.d.log.Durable(); args.LeaderCommitIndex > d {
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

// followerAcks is a group's record of what its followers stored on disk, as
// its leader's pipelines heard it (appendpipe.AckObserver): per follower,
// the highest index of an entry of the leader's term that it answered
// success for, and the pipeline that heard it. Safe for concurrent use.
type followerAcks struct {
	mu      sync.Mutex
	term    uint64 // the term of the acknowledgements held: the newest heard
	by      map[raft.ServerID]followerAck
	changed chan struct{} // closed at the next change; nil until watched
	heard   atomic.Int64  // acknowledgements reported (seam 3's use count)
}

type followerAck struct {
	pipe  uint64
	index uint64
}

var _ appendpipe.AckObserver = (*followerAcks)(nil)

// Stored records that id holds args' entries on disk, if the last is of the
// request's term; one of a newer term drops every acknowledgement of an
// older one.
func (a *followerAcks) Stored(id raft.ServerID, pipe uint64, args *raft.AppendEntriesRequest) {
	a.heard.Add(1)
	n := len(args.Entries)
	if n == 0 || args.Entries[n-1].Term != args.Term {
		return
	}
	index := args.Entries[n-1].Index
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case args.Term < a.term:
		return
	case args.Term > a.term:
		a.term = args.Term
		clear(a.by)
	}
	if a.by == nil {
		a.by = map[raft.ServerID]followerAck{}
	}
	if old, ok := a.by[id]; ok && (old.pipe > pipe || old.pipe == pipe && old.index >= index) {
		return
	}
	a.by[id] = followerAck{pipe: pipe, index: index}
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

// Ended drops what pipe, or an older pipeline to id, reported.
func (a *followerAcks) Ended(id raft.ServerID, pipe uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.by[id]; ok && old.pipe <= pipe {
		delete(a.by, id)
	}
}

// watch returns a channel closed at the next acknowledgement recorded.
func (a *followerAcks) watch() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.changed
}

// cover reports whether a majority of the voters among servers (a
// configuration) other than self have acknowledged storing index.
func (a *followerAcks) cover(index uint64, servers []raft.Server, self raft.ServerID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	voters, stored := 0, 0
	for _, srv := range servers {
		if srv.Suffrage != raft.Voter {
			continue
		}
		voters++
		if ack, ok := a.by[srv.ID]; ok && srv.ID != self && ack.index >= index {
			stored++
		}
	}
	return voters > 0 && stored >= voters/2+1
}

// durableOnMajority is machine.durable for a group whose leader may defer
// its fsync: it returns once the entry at index is on the group's own disk
// (dur) or acknowledged by a majority of the voters without this node
// (acks, judged against the latest configuration, servers), whichever comes
// first, and counts in early the batches that went ahead of the node's own
// fsync. A failed own log write is reported (ApplyBatch then stops the
// node) even when the followers hold the entry. Called by the FSM goroutine;
// blocks.
func durableOnMajority(dur logstore.DurableLog, acks *followerAcks, servers func() []raft.Server, self raft.ServerID, early func()) func(uint64) error {
	polled := make(chan struct{})
	close(polled)
	return func(index uint64) error {
		if dur.Durable() >= index {
			return nil
		}
		c := servers()
		if c == nil { // no Raft yet: its own disk only
			return dur.WaitDurable(index)
		}
		for {
			changed := acks.watch()
			if acks.cover(index, c, self) {
				if on, err := dur.WaitDurableOr(index, polled); err != nil || on {
					return err
				}
				early()
				return nil
			}
			if on, err := dur.WaitDurableOr(index, changed); err != nil || on {
				return err
			}
		}
	}
}
