package multiraft

import (
	"encoding/binary"
	"fmt"
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
	rds    []groupReady
	ups    []Update
	frames map[uint64][]byte
}

type groupReady struct {
	r  *replica
	rd raft.Ready
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
			n.failAll(ErrStopped)
			return
		case <-ticker.C:
			for _, r := range n.list {
				r.rn.Tick()
			}
		case <-n.box.wake:
		}
		n.take()
		if n.processReady() {
			n.box.signal() // Advance left more (entries now committed, or applied)
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

// processReady takes one Ready of every group that has one and handles them
// together: one Save for all their entries and hard states, one frame per
// peer for all their messages, then each group's committed entries and
// reads. It reports whether a group has more ready already.
func (n *Node) processReady() bool {
	t := &n.turn
	t.rds = t.rds[:0]
	for _, r := range n.list {
		if r.rn.HasReady() {
			t.rds = append(t.rds, groupReady{r, r.rn.Ready()})
		}
	}
	if len(t.rds) == 0 {
		return false
	}

	// 1. A leader's appends and heartbeats leave before its own entries are
	// durable, so that its fsync runs beside its followers' (the Raft
	// thesis, 10.2.1): it counts itself only once Save returned (Advance).
	// Not in a turn that changed the group's term or vote, which must be on
	// disk before anything is sent in the new term.
	t.ups = t.ups[:0]
	for i := range t.rds {
		gr := &t.rds[i]
		rd := &gr.rd
		up := Update{Group: gr.r.g, Entries: rd.Entries}
		if !raft.IsEmptyHardState(rd.HardState) &&
			(rd.HardState.Term != gr.r.saved.Term || rd.HardState.Vote != gr.r.saved.Vote) {
			hs := rd.HardState
			up.HardState = &hs
		}
		if len(up.Entries) > 0 || up.HardState != nil {
			t.ups = append(t.ups, up)
		}
		for _, id := range gr.r.ccProposed {
			gr.r.checkChange(id, rd.Entries)
		}
		gr.r.ccProposed = gr.r.ccProposed[:0]
		if up.HardState == nil {
			for j := range rd.Messages {
				if m := &rd.Messages[j]; m.Type == pb.MsgApp || m.Type == pb.MsgHeartbeat {
					t.frames[m.To] = AppendMessage(t.frames[m.To], gr.r.g, m)
					m.To = 0 // sent
				}
			}
		}
	}
	n.sendFrames()

	// 2. Durable before any message that depends on it leaves: a
	// follower's acknowledgement, a vote. A snapshot from the leader first:
	// it replaces the whole log before it.
	for i := range t.rds {
		gr := &t.rds[i]
		if snap := gr.rd.Snapshot; !raft.IsEmptySnap(snap) {
			if err := n.cfg.Storage.SaveSnapshot(gr.r.g, snap, true); err != nil {
				panic("multiraft: storage failed: " + err.Error())
			}
			if err := gr.r.ms.ApplySnapshot(snap); err != nil {
				panic(fmt.Sprintf("multiraft: group %d: apply snapshot: %v", gr.r.g, err))
			}
		}
	}
	if len(t.ups) > 0 {
		if err := n.cfg.Storage.Save(t.ups); err != nil {
			// Nothing more can be trusted to be on disk: stop driving.
			panic("multiraft: storage failed: " + err.Error())
		}
		n.Saves.Add(1)
	}
	for i := range t.rds {
		gr := &t.rds[i]
		rd := &gr.rd
		if len(rd.Entries) > 0 {
			if err := gr.r.ms.Append(rd.Entries); err != nil {
				panic("multiraft: memory log: " + err.Error())
			}
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			_ = gr.r.ms.SetHardState(rd.HardState)
			gr.r.saved.Term, gr.r.saved.Vote = rd.HardState.Term, rd.HardState.Vote
		}
	}
	for i := range t.ups {
		t.ups[i] = Update{}
	}
	for i := range t.rds {
		gr := &t.rds[i]
		for j := range gr.rd.Messages {
			if m := &gr.rd.Messages[j]; m.To != 0 {
				t.frames[m.To] = AppendMessage(t.frames[m.To], gr.r.g, m)
			}
		}
	}
	n.sendFrames()
	for i := range t.rds { // sent or dropped: Raft probes the follower again either way
		for j := range t.rds[i].rd.Messages {
			if m := &t.rds[i].rd.Messages[j]; m.Type == pb.MsgSnap {
				t.rds[i].r.rn.ReportSnapshot(m.To, raft.SnapshotFinish)
			}
		}
	}

	// 3. Apply, answer, advance.
	for i := range t.rds {
		gr := &t.rds[i]
		n.apply(gr.r, &gr.rd)
		n.leadership(gr.r, &gr.rd)
		gr.r.rn.Advance(gr.rd)
		t.rds[i] = groupReady{}
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
	if !raft.IsEmptyHardState(rd.HardState) && rd.HardState.Term != r.v.term.Load() {
		r.fail(ErrLeadershipLost)
		r.v.term.Store(rd.HardState.Term)
	}
	if ss := rd.SoftState; ss != nil {
		r.v.lead.Store(ss.Lead)
		leading := ss.RaftState == raft.StateLeader
		if r.v.leader.Swap(leading) && !leading {
			r.fail(ErrLeadershipLost)
		}
	}
}

// apply applies rd's committed entries of r in order, answers the
// proposals this node made for them, and then the reads they satisfy.
func (n *Node) apply(r *replica, rd *raft.Ready) {
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
	applied := r.v.applied.Load()
	if !raft.IsEmptySnap(rd.Snapshot) { // a follower brought up to date by its leader
		if err := r.sm.Restore(rd.Snapshot.Data); err != nil {
			panic(fmt.Sprintf("multiraft: group %d: restore snapshot %d: %v", r.g, rd.Snapshot.Metadata.Index, err))
		}
		applied = rd.Snapshot.Metadata.Index
		r.conf = rd.Snapshot.Metadata.ConfState
		r.snapIndex = applied
	}
	// Normal entries go to the state machine in runs, a conf change between
	// two runs.
	cmds := r.cmds[:0]
	confChanged := false
	flush := func() {
		if len(cmds) == 0 {
			return
		}
		vals := r.sm.Apply(cmds)
		for i, c := range cmds {
			if f, ok := r.waiters[c.id]; ok {
				delete(r.waiters, c.id)
				var v any
				if i < len(vals) {
					v = vals[i]
				}
				f.resolve(v, nil)
			}
			cmds[i] = Command{}
		}
		cmds = cmds[:0]
	}
	for i := range rd.CommittedEntries {
		e := &rd.CommittedEntries[i]
		switch e.Type {
		case pb.EntryNormal:
			if len(e.Data) >= 8 { // not a new leader's empty entry
				cmds = append(cmds, Command{Index: e.Index, Data: e.Data[8:], id: binary.LittleEndian.Uint64(e.Data)})
			}
		case pb.EntryConfChange, pb.EntryConfChangeV2:
			flush()
			n.applyConfChange(r, e)
			confChanged = true
		}
		applied = e.Index
	}
	flush()
	r.cmds = cmds
	r.v.applied.Store(applied)
	n.maybeSnapshot(r, applied, confChanged)
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

// sendFrames sends each peer its frame of this turn, if any.
func (n *Node) sendFrames() {
	for to, fr := range n.turn.frames {
		if len(fr) > 0 {
			n.cfg.Transport.Send(to, fr)
			n.Frames.Add(1)
			n.turn.frames[to] = fr[:0]
		}
	}
}

// applyConfChange applies a committed conf-change entry to r's Raft
// configuration and answers its proposer (its Context is the proposal id).
func (n *Node) applyConfChange(r *replica, e *pb.Entry) {
	var cc pb.ConfChangeI
	var ctx []byte
	if e.Type == pb.EntryConfChange {
		var c pb.ConfChange
		if err := c.Unmarshal(e.Data); err != nil {
			panic(fmt.Sprintf("multiraft: group %d: committed conf change %d: %v", r.g, e.Index, err))
		}
		cc, ctx = c, c.Context
	} else {
		var c pb.ConfChangeV2
		if err := c.Unmarshal(e.Data); err != nil {
			panic(fmt.Sprintf("multiraft: group %d: committed conf change %d: %v", r.g, e.Index, err))
		}
		cc, ctx = c, c.Context
	}
	r.conf = *r.rn.ApplyConfChange(cc)
	if len(ctx) == 8 {
		id := binary.LittleEndian.Uint64(ctx)
		if f, ok := r.waiters[id]; ok {
			delete(r.waiters, id)
			f.resolve(nil, nil)
		}
	}
}

// maybeSnapshot takes a snapshot of r's state machine once SnapshotEntries
// entries applied since the last one, or after a membership change (force:
// a node that joins restores the leader's last snapshot only if that names
// it a member), saves it, and drops the log before it but for
// TrailingEntries (a follower that far behind catches up from the log, not
// from a snapshot). It runs on the driver: the state machine's Snapshot must
// be quick (a copy, or a view of immutable state).
func (n *Node) maybeSnapshot(r *replica, applied uint64, force bool) {
	if applied <= r.snapIndex || (!force && applied < r.snapIndex+n.cfg.SnapshotEntries) {
		return
	}
	data, err := r.sm.Snapshot()
	if err != nil {
		panic(fmt.Sprintf("multiraft: group %d: snapshot at %d: %v", r.g, applied, err))
	}
	snap, err := r.ms.CreateSnapshot(applied, &r.conf, data)
	if err != nil {
		panic(fmt.Sprintf("multiraft: group %d: snapshot at %d: %v", r.g, applied, err))
	}
	if err := n.cfg.Storage.SaveSnapshot(r.g, snap, false); err != nil {
		panic("multiraft: storage failed: " + err.Error())
	}
	r.snapIndex = applied
	if applied > n.cfg.TrailingEntries {
		if to := applied - n.cfg.TrailingEntries; to > r.logStart() {
			if err := r.ms.Compact(to); err != nil {
				panic(fmt.Sprintf("multiraft: group %d: compact to %d: %v", r.g, to, err))
			}
			if err := n.cfg.Storage.Compact(r.g, to); err != nil {
				panic("multiraft: storage failed: " + err.Error())
			}
		}
	}
	n.Snapshots.Add(1)
}

// logStart is the index of r's in-memory log's first entry less one.
func (r *replica) logStart() uint64 {
	first, _ := r.ms.FirstIndex()
	return first - 1
}

// checkChange refuses membership change id if Raft did not append it to
// ents, the leader's new entries of the turn it was proposed in (Raft
// appends an empty entry in its place while another change is pending).
func (r *replica) checkChange(id uint64, ents []pb.Entry) {
	for i := range ents {
		if e := &ents[i]; e.Type == pb.EntryConfChangeV2 {
			var cc pb.ConfChangeV2
			if cc.Unmarshal(e.Data) == nil && len(cc.Context) == 8 && binary.LittleEndian.Uint64(cc.Context) == id {
				return
			}
		}
	}
	if f, ok := r.waiters[id]; ok {
		delete(r.waiters, id)
		f.resolve(nil, fmt.Errorf("%w: another change is pending", ErrChangeRefused))
	}
}
