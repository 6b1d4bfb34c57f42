package multiraft

import (
	"encoding/binary"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// turnScratch is the driver's per-turn state, kept between turns so that a
// turn allocates little.
type turnScratch struct {
	props  map[Group][]proposal
	reads  map[Group][]*future
	msgs   []inMsg
	ctl    []func()
	frames map[uint64][]byte
	snaps  []snapSent
}

// snapSent is a snapshot sent to a follower, to report to Raft.
type snapSent struct {
	r  *replica
	to uint64
}

// run is the driver: it wakes on a tick or on the mailbox and takes a turn.
func (n *Node) run() {
	defer close(n.stopped)
	ticker := time.NewTicker(n.cfg.Tick)
	defer ticker.Stop()
	n.turn.props = map[Group][]proposal{}
	n.turn.reads = map[Group][]*future{}
	n.turn.frames = map[uint64][]byte{}
	for {
		select {
		case <-n.stop:
			n.failAll(n.stopErr())
			n.snapshots.Wait()
			close(n.writes)
			<-n.writerDone
			return
		case <-ticker.C:
			for _, r := range n.list {
				r.rn.Tick()
			}
		case <-n.box.wake:
			// Let the goroutines that are about to hand over more (peers'
			// readers, proposers, the writer) do so first: one turn then
			// takes them all. BenchmarkGroups/tcp: 1.4-1.5x the ops/s and
			// 0.6x the CPU per operation, with 1 group and with 8.
			runtime.Gosched()
		}
		if n.Err() != nil {
			continue // halted: the stop is closed
		}
		n.take()
		if n.processReady() {
			n.box.signal() // more is ready (a response stepped, entries applied)
		}
	}
}

// take steps everything the mailbox holds into the groups: control first
// (a group added this turn takes its messages), then messages, then each
// group's proposals as one MsgProp, then each group's reads as one ReadIndex.
func (n *Node) take() {
	t := &n.turn
	b := &n.box
	b.mu.Lock()
	t.ctl, b.ctl = b.ctl, t.ctl[:0]
	t.msgs, b.msgs = b.msgs, t.msgs[:0]
	t.props, b.props = b.props, t.props
	t.reads, b.reads = b.reads, t.reads
	b.mu.Unlock()

	for i, f := range t.ctl {
		f()
		t.ctl[i] = nil
	}
	for i := range t.msgs {
		im := &t.msgs[i]
		if r := n.groups[im.g]; r != nil {
			_ = r.rn.Step(im.m) // a stale or foreign message is refused by Raft; nothing to tell
		}
		t.msgs[i] = inMsg{}
	}
	for g, ps := range t.props {
		n.propose(g, ps)
		delete(t.props, g)
	}
	for g, fs := range t.reads {
		n.readIndex(g, fs)
		delete(t.reads, g)
	}
}

// propose steps a turn's proposals of group g as one MsgProp: one append to
// the leader's log, one round to the followers.
func (n *Node) propose(g Group, ps []proposal) {
	r := n.groups[g]
	if r == nil {
		for _, p := range ps {
			p.f.resolve(nil, ErrNoGroup)
		}
		return
	}
	ents := make([]pb.Entry, len(ps))
	for i, p := range ps {
		ents[i] = pb.Entry{Data: p.data}
	}
	err := r.rn.Step(pb.Message{Type: pb.MsgProp, From: n.cfg.ID, Entries: ents})
	for _, p := range ps {
		if err != nil { // not the leader (any more), or a leadership transfer under way
			p.f.resolve(nil, ErrNotLeader)
			continue
		}
		r.waiters[binary.LittleEndian.Uint64(p.data)] = p.f
	}
}

// readIndex asks group g's Raft for one read index for all of fs.
func (n *Node) readIndex(g Group, fs []*future) {
	r := n.groups[g]
	if r == nil {
		for _, f := range fs {
			f.resolve(nil, ErrNoGroup)
		}
		return
	}
	if r.rn.BasicStatus().RaftState != raft.StateLeader {
		for _, f := range fs {
			f.resolve(nil, ErrNotLeader)
		}
		return
	}
	id := n.nextID.Add(1)
	var ctx [8]byte
	binary.LittleEndian.PutUint64(ctx[:], id)
	r.pending[id] = fs
	r.rn.ReadIndex(ctx[:])
}

// processReady takes the Ready of every group that has one and handles its
// parts: messages to peers go out at once, one frame per peer for all
// groups (a leader's appends leave before its own write: the Raft thesis,
// 10.2.1); every group's storage append (entries, hard state, a snapshot,
// and the messages that must wait for them) goes to the writer as one job;
// committed entries are applied here. It reports whether a group has more
// ready already.
func (n *Node) processReady() bool {
	t := &n.turn
	var job writeJob
	busy := false
	for _, r := range n.list {
		if !r.rn.HasReady() {
			continue
		}
		busy = true
		rd := r.rn.Ready()
		for _, id := range r.ccProposed {
			r.checkChange(id, rd.Entries)
		}
		r.ccProposed = r.ccProposed[:0]
		for _, rs := range rd.ReadStates {
			if len(rs.RequestCtx) != 8 {
				continue
			}
			id := binary.LittleEndian.Uint64(rs.RequestCtx)
			if fs, ok := r.pending[id]; ok {
				delete(r.pending, id)
				r.ready = append(r.ready, readAt{rs.Index, fs})
			}
		}
		var applyResp []pb.Message
		for j := range rd.Messages {
			m := &rd.Messages[j]
			switch m.To {
			case raft.LocalAppendThread:
				job.appends = append(job.appends, appendJob{r: r, m: *m})
			case raft.LocalApplyThread:
				n.apply(r, m.Entries)
				applyResp = append(applyResp, m.Responses...)
			default:
				t.frames[m.To] = AppendMessage(t.frames[m.To], r.g, m)
				if m.Type == pb.MsgSnap {
					t.snaps = append(t.snaps, snapSent{r, m.To})
				}
			}
		}
		for _, m := range applyResp {
			_ = r.rn.Step(m)
		}
		n.answerReads(r)
		n.leadership(r, &rd)
		n.maybeSnapshot(r)
	}
	if !busy {
		return false
	}
	n.send(t.frames)
	for _, s := range t.snaps { // sent or dropped: Raft probes the follower again either way
		s.r.rn.ReportSnapshot(s.to, raft.SnapshotFinish)
	}
	clear(t.snaps)
	t.snaps = t.snaps[:0]
	if len(job.appends) > 0 {
		n.toWrite(job)
	}
	n.Turns.Add(1)
	for _, r := range n.list {
		if r.rn.HasReady() {
			return true
		}
	}
	return false
}

// leadership follows a new term or leader, after rd's entries applied: a
// replica whose term moves on, or that stops leading, fails its waiting
// proposals and reads (their outcome is the next leader's). A term change
// alone is enough: a leader may step down and win again between two Readys
// with no change of SoftState to show.
func (n *Node) leadership(r *replica, rd *raft.Ready) {
	changed := false
	if !raft.IsEmptyHardState(rd.HardState) {
		if rd.HardState.Term != r.v.term.Load() {
			r.fail(ErrLeadershipLost)
			r.v.term.Store(rd.HardState.Term)
			changed = true
		}
		r.v.commit.Store(rd.HardState.Commit)
	}
	if ss := rd.SoftState; ss != nil {
		if r.v.lead.Swap(ss.Lead) != ss.Lead { // not in the || above: the swap must run
			changed = true
		}
		leading := ss.RaftState == raft.StateLeader
		if was := r.v.leader.Swap(leading); was != leading {
			changed = true
			if was {
				r.fail(ErrLeadershipLost)
			}
		}
	}
	if n := len(rd.Entries); n > 0 {
		r.v.last.Store(rd.Entries[n-1].Index)
	}
	if changed {
		r.v.notify()
	}
}

// apply applies committed entries of r in order and answers the proposals
// this node made for them. Normal entries go to the state machine in runs, a
// membership change between two runs.
func (n *Node) apply(r *replica, ents []pb.Entry) {
	applied := r.v.applied.Load()
	cmds := r.cmds[:0]
	flush := func() {
		if len(cmds) == 0 {
			return
		}
		vals := r.sm.Apply(cmds)
		r.v.applied.Store(cmds[len(cmds)-1].Index) // before any proposer hears: Status then shows its entry applied
		for i, c := range cmds {
			var v any
			if i < len(vals) {
				v = vals[i]
			}
			r.answer(c.id, c.Index, v, nil)
			cmds[i] = Command{}
		}
		cmds = cmds[:0]
	}
	for i := range ents {
		e := &ents[i]
		if e.Index <= applied { // below a snapshot restored meanwhile
			continue
		}
		switch e.Type {
		case pb.EntryNormal:
			switch {
			case len(e.Data) > 8:
				cmds = append(cmds, Command{Index: e.Index, Data: e.Data[8:], id: binary.LittleEndian.Uint64(e.Data)})
			case len(e.Data) == 8: // a barrier: every entry before it applied
				flush()
				r.v.applied.Store(e.Index)
				r.answer(binary.LittleEndian.Uint64(e.Data), e.Index, nil, nil)
			} // else a new leader's empty entry
		case pb.EntryConfChange, pb.EntryConfChangeV2:
			flush()
			r.v.applied.Store(e.Index)
			n.applyConfChange(r, e)
			r.snapWanted = true // a joiner must find itself in the snapshot it restores
		}
		applied = e.Index
	}
	flush()
	r.cmds = cmds
	r.v.applied.Store(applied)
	if a, ok := r.sm.(AppliedIndexer); ok {
		a.AppliedIndex(applied)
	}
}

// answerReads answers the reads of r whose read index is applied.
func (n *Node) answerReads(r *replica) {
	applied := r.v.applied.Load()
	kept := r.ready[:0]
	for _, ra := range r.ready {
		if ra.index <= applied {
			for _, f := range ra.fs {
				f.resolve(nil, nil)
			}
			continue
		}
		kept = append(kept, ra)
	}
	clear(r.ready[len(kept):])
	r.ready = kept
}

// restore replaces r's state with snap's, a snapshot from the leader that
// the writer made durable: on the driver, before the append's responses
// are stepped (only then does Raft hand out the entries after it).
func (n *Node) restore(r *replica, snap *pb.Snapshot) {
	members, smData, err := decodeSnapshot(snap.Data)
	if err == nil {
		err = r.sm.Restore(smData)
	}
	if err != nil {
		n.halt(fmt.Errorf("multiraft: group %d: restore snapshot %d: %w", r.g, snap.Metadata.Index, err))
		return
	}
	r.v.applied.Store(snap.Metadata.Index)
	if r.v.last.Load() < snap.Metadata.Index {
		r.v.last.Store(snap.Metadata.Index)
	}
	r.conf = snap.Metadata.ConfState
	n.restoreMembers(r, members)
	r.snapIndex = snap.Metadata.Index
	r.v.snap.Store(r.snapIndex)
	n.answerReads(r)
}

// fail answers every proposal and read r's node is waiting for with err.
func (r *replica) fail(err error) {
	for id, f := range r.waiters {
		f.resolve(nil, err)
		delete(r.waiters, id)
	}
	for id, fs := range r.pending {
		for _, f := range fs {
			f.resolve(nil, err)
		}
		delete(r.pending, id)
	}
	for _, ra := range r.ready {
		for _, f := range ra.fs {
			f.resolve(nil, err)
		}
	}
	r.ready = r.ready[:0]
}

// failAll fails everything waiting on the driver (it is stopping).
func (n *Node) failAll(err error) {
	n.take() // proposals and reads still in the mailbox are answered too
	for _, r := range n.list {
		r.fail(err)
	}
}

// send sends each peer its frame in frames, if any, and empties them for
// the next turn (the driver's frames, the writer's).
func (n *Node) send(frames map[uint64][]byte) {
	for to, fr := range frames {
		if len(fr) > 0 {
			n.cfg.Transport.Send(to, fr)
			n.Frames.Add(1)
			frames[to] = fr[:0]
		}
	}
}

// applyConfChange applies a committed conf-change entry to r's Raft
// configuration and answers its proposer (its Context is the proposal id).
func (n *Node) applyConfChange(r *replica, e *pb.Entry) {
	cc, id, member, err := decodeConfChange(e)
	if err != nil {
		n.halt(fmt.Errorf("multiraft: group %d: committed conf change %d: %w", r.g, e.Index, err))
		return
	}
	r.conf = *r.rn.ApplyConfChange(cc)
	n.learnMembers(r, cc, member)
	r.answer(id, e.Index, nil, nil)
}

// decodeConfChange decodes conf-change entry e, the proposal id its
// Context carries (0: none, as in one this package did not propose) and
// the member context after it (members.go).
func decodeConfChange(e *pb.Entry) (cc pb.ConfChangeI, id uint64, member []byte, err error) {
	var ctx []byte
	if e.Type == pb.EntryConfChange {
		var c pb.ConfChange
		err = c.Unmarshal(e.Data)
		cc, ctx = c, c.Context
	} else {
		var c pb.ConfChangeV2
		err = c.Unmarshal(e.Data)
		cc, ctx = c, c.Context
	}
	if len(ctx) >= 8 {
		id, member = binary.LittleEndian.Uint64(ctx), ctx[8:]
	}
	return cc, id, member, err
}

// answer resolves the future of this node's proposal id (if it waits here)
// with the outcome of its entry at index.
func (r *replica) answer(id, index uint64, val any, err error) {
	if f, ok := r.waiters[id]; ok {
		delete(r.waiters, id)
		f.index = index
		f.resolve(val, err)
	}
}

// maybeSnapshot takes a snapshot of r's state machine once SnapshotEntries
// entries applied since the last one, or after a membership change (a node
// that joins restores the leader's last snapshot only if that names it a
// member): it captures the state here, has it written out on a goroutine of
// its own, and the writer then saves it and drops the log before it but for
// TrailingEntries (a follower that far behind catches up from the log, not
// from a snapshot). One snapshot of a group at a time.
func (n *Node) maybeSnapshot(r *replica) {
	applied := r.v.applied.Load()
	if r.snapBusy.Load() || applied <= r.snapIndex || (!r.snapWanted && applied < r.snapIndex+n.cfg.SnapshotEntries) {
		return
	}
	write, err := r.sm.Snapshot()
	if err != nil {
		n.halt(fmt.Errorf("multiraft: group %d: snapshot at %d: %w", r.g, applied, err))
		return
	}
	r.snapIndex, r.snapWanted = applied, false
	r.v.snap.Store(applied)
	r.snapBusy.Store(true)
	n.Snapshots.Add(1)
	job := snapJob{r: r, index: applied, conf: cloneConf(r.conf)}
	members := maps.Clone(r.members)
	trailing := n.cfg.TrailingEntries
	if t := r.v.trailing.Load(); t > 0 {
		trailing = t - 1
	}
	if applied > trailing {
		job.compactTo = applied - trailing
	}
	n.snapshots.Add(1)
	go func() {
		defer n.snapshots.Done()
		data, err := write()
		if err != nil {
			n.halt(fmt.Errorf("multiraft: group %d: snapshot at %d: %w", r.g, applied, err))
			return
		}
		job.data = encodeSnapshot(members, data)
		select {
		case n.writes <- writeJob{snaps: []snapJob{job}}:
		case <-n.stop: // the driver waits for this goroutine before it closes writes
			r.snapBusy.Store(false)
		}
	}()
}

// checkChange refuses membership change id if Raft did not append it to
// ents, the leader's new entries of the turn it was proposed in (Raft
// appends an empty entry in its place while another change is pending).
func (r *replica) checkChange(id uint64, ents []pb.Entry) {
	for i := range ents {
		if e := &ents[i]; e.Type == pb.EntryConfChangeV2 {
			if _, got, _, err := decodeConfChange(e); err == nil && got == id {
				return
			}
		}
	}
	r.answer(id, 0, nil, fmt.Errorf("%w: another change is pending", ErrChangeRefused))
}

// cloneConf copies cs for another goroutine (its slices are not shared).
func cloneConf(cs pb.ConfState) pb.ConfState {
	return pb.ConfState{Voters: slices.Clone(cs.Voters), Learners: slices.Clone(cs.Learners),
		VotersOutgoing: slices.Clone(cs.VotersOutgoing), LearnersNext: slices.Clone(cs.LearnersNext), AutoLeave: cs.AutoLeave}
}
