package multiraft

import (
	"fmt"
	"runtime"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The writer is the node's second goroutine: it makes the groups' storage
// appends durable while the driver goes on stepping messages, so that a
// node's fsync never stalls its other groups' rounds (etcd raft's
// asynchronous storage writes). Every append queued while the last write
// was under way, of every group, goes to disk in one Save.

// appendJob is one group's MsgStorageAppend: entries, hard state, a
// snapshot from the leader, and the messages to deliver once they are
// durable.
type appendJob struct {
	r *replica
	m pb.Message
}

// snapJob is a snapshot of a state machine at index, written out: to make
// the log's snapshot, save, then compact the log to compactTo (0: nothing to
// drop).
type snapJob struct {
	r         *replica
	index     uint64
	conf      pb.ConfState
	data      []byte
	compactTo uint64
}

// writeJob is what one driver turn hands the writer.
type writeJob struct {
	appends []appendJob
	snaps   []snapJob
}

// writeQueue bounds the turns waiting for the writer; a driver that gets
// this far ahead of the disk waits for it.
const writeQueue = 256

// mergeJobs bounds the turns one write takes together.
const mergeJobs = 64

// toWrite hands job to the writer (the driver only).
func (n *Node) toWrite(job writeJob) { n.writes <- job }

// writer writes the queued jobs until the driver closes the queue.
func (n *Node) writer() {
	defer close(n.writerDone)
	frames := map[uint64][]byte{}
	for job := range n.writes {
		if n.Err() != nil {
			continue // halted: nothing more is written
		}
		runtime.Gosched() // the other groups' appends of this moment join this write (as in the driver)
		jobs := []writeJob{job}
	more:
		for len(jobs) < mergeJobs {
			select {
			case j, ok := <-n.writes:
				if !ok {
					break more
				}
				jobs = append(jobs, j)
			default:
				break more
			}
		}
		n.write(jobs, frames)
	}
}

// write makes jobs durable in order: runs of appends with one Save (a
// group's appends of several turns merged), a snapshot on its own; then
// fills the in-memory logs, sends the responses meant for peers (one frame
// per peer) and hands the driver those meant for this node, after what a
// snapshot from a leader needs done first (restore).
func (n *Node) write(jobs []writeJob, frames map[uint64][]byte) {
	var (
		ups   []Update
		at    = map[Group]int{}
		done  []appendJob
		local []inMsg
		ctls  []func()
	)
	flush := func() bool {
		if len(ups) > 0 {
			if err := n.cfg.Storage.Save(ups); err != nil {
				n.halt(fmt.Errorf("multiraft: storage: %w", err)) // nothing more can be trusted to be on disk
				return false
			}
			n.Saves.Add(1)
		}
		for _, a := range done {
			if len(a.m.Entries) > 0 {
				if err := a.r.ms.Append(a.m.Entries); err != nil {
					n.halt(fmt.Errorf("multiraft: group %d: memory log: %w", a.r.g, err))
					return false
				}
			}
			if a.m.Term != 0 { // a hard state
				_ = a.r.ms.SetHardState(pb.HardState{Term: a.m.Term, Vote: a.m.Vote, Commit: a.m.Commit})
			}
			for _, resp := range a.m.Responses {
				if resp.To == n.cfg.ID {
					local = append(local, inMsg{a.r.g, resp})
				} else {
					frames[resp.To] = AppendMessage(frames[resp.To], a.r.g, &resp)
				}
			}
		}
		clear(ups)
		ups = ups[:0]
		clear(at)
		done = done[:0]
		return true
	}
	for _, job := range jobs {
		for _, a := range job.appends {
			r := a.r
			if snap := a.m.Snapshot; snap != nil && !raft.IsEmptySnap(*snap) {
				if !flush() || !n.installSnapshot(r, snap) {
					return
				}
				ctls = append(ctls, func() { n.restore(r, snap) })
			}
			var hs *pb.HardState
			if a.m.Term != 0 && (a.m.Term != r.saved.Term || a.m.Vote != r.saved.Vote) {
				hs = &pb.HardState{Term: a.m.Term, Vote: a.m.Vote, Commit: a.m.Commit}
				r.saved = *hs
			}
			if len(a.m.Entries) > 0 || hs != nil {
				i, ok := at[r.g]
				if !ok {
					i = len(ups)
					at[r.g] = i
					ups = append(ups, Update{Group: r.g})
				}
				ups[i].Entries = mergeEntries(ups[i].Entries, a.m.Entries)
				if hs != nil {
					ups[i].HardState = hs
				}
			}
			done = append(done, a)
		}
		for _, sj := range job.snaps {
			if !flush() || !n.saveSnapshot(sj) {
				return
			}
		}
	}
	if !flush() {
		return
	}
	n.send(frames)
	if len(local) > 0 || len(ctls) > 0 {
		n.box.mu.Lock()
		n.box.ctl = append(n.box.ctl, ctls...)
		n.box.msgs = append(n.box.msgs, local...)
		n.box.mu.Unlock()
		n.box.signal()
	}
}

// installSnapshot makes snap, a snapshot from r's leader, the group's
// stored snapshot and log here; false when the node halted.
func (n *Node) installSnapshot(r *replica, snap *pb.Snapshot) bool {
	if err := n.cfg.Storage.SaveSnapshot(r.g, *snap, true); err != nil {
		n.halt(fmt.Errorf("multiraft: storage: %w", err))
		return false
	}
	if err := r.ms.ApplySnapshot(*snap); err != nil && err != raft.ErrSnapOutOfDate {
		n.halt(fmt.Errorf("multiraft: group %d: apply snapshot: %w", r.g, err))
		return false
	}
	r.written = snap.Metadata.Index
	return true
}

// saveSnapshot makes sj, a snapshot of this node's state machine, the log's
// snapshot, saves it and compacts the log behind it; it skips one that a
// newer snapshot from the leader overtook, or whose entries are not in the
// log here yet. False when the node halted.
func (n *Node) saveSnapshot(sj snapJob) bool {
	r := sj.r
	defer r.snapBusy.Store(false)
	if last, _ := r.ms.LastIndex(); sj.index <= r.written || sj.index > last {
		return true
	}
	snap, err := r.ms.CreateSnapshot(sj.index, &sj.conf, sj.data)
	if err == raft.ErrSnapOutOfDate {
		return true
	} else if err != nil {
		n.halt(fmt.Errorf("multiraft: group %d: snapshot at %d: %w", r.g, sj.index, err))
		return false
	}
	if err := n.cfg.Storage.SaveSnapshot(r.g, snap, false); err != nil {
		n.halt(fmt.Errorf("multiraft: storage: %w", err))
		return false
	}
	r.written = sj.index
	if first, _ := r.ms.FirstIndex(); sj.compactTo >= first {
		if err := r.ms.Compact(sj.compactTo); err != nil && err != raft.ErrCompacted {
			n.halt(fmt.Errorf("multiraft: group %d: compact to %d: %w", r.g, sj.compactTo, err))
			return false
		}
		if err := n.cfg.Storage.Compact(r.g, sj.compactTo); err != nil {
			n.halt(fmt.Errorf("multiraft: storage: %w", err))
			return false
		}
	}
	return true
}

// mergeEntries returns a's entries followed by b's, b replacing a's from
// its first index on (a follower's log overwritten by a new leader).
func mergeEntries(a, b []pb.Entry) []pb.Entry {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	k := 0
	for k < len(a) && a[k].Index < b[0].Index {
		k++
	}
	return append(a[:k:k], b...)
}
