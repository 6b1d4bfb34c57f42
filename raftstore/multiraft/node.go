package multiraft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Group names a Raft group: the same number on every node that holds it.
type Group = uint32

// The outcomes a caller can act on, as typed values (errors.Is).
var (
	// ErrNotLeader: this node does not lead the group (now); ask the leader
	// (Node.Status names it when known). Nothing was proposed.
	ErrNotLeader = errors.New("multiraft: not the group's leader")
	// ErrNoGroup: this node holds no replica of the group.
	ErrNoGroup = errors.New("multiraft: no such group on this node")
	// ErrLeadershipLost: the node stopped leading the group after it took
	// the proposal and before the entry applied here. The entry may still
	// be committed by the next leader: the outcome is unknown.
	ErrLeadershipLost = errors.New("multiraft: leadership lost; the outcome is unknown")
	// ErrStopped: the node stopped; for a proposal the outcome is unknown.
	ErrStopped = errors.New("multiraft: node stopped")
	// ErrChangeRefused: Raft refused a membership change (another is in
	// flight, or it is invalid); nothing was proposed.
	ErrChangeRefused = errors.New("multiraft: membership change refused")
	// ErrGroupExists: AddGroup of a group the node already holds.
	ErrGroupExists = errors.New("multiraft: group already on this node")
)

// StateMachine is a group's replicated state. Its methods are called on the
// node's driver goroutine and must not block: every group of the node waits
// for them.
type StateMachine interface {
	// Apply applies committed commands, in log order, exactly once per
	// index after the replica starts (a restarted replica applies again from
	// the index after its snapshot's, or after GroupConfig.Applied), and
	// returns each command's result for its proposer, one per command.
	Apply(cmds []Command) []any
	// Snapshot captures the state as of the last command applied and
	// returns what writes it out. The capture runs on the driver and must be
	// quick (a view of immutable state, or a copy); the write runs on a
	// goroutine of its own while commands go on applying.
	Snapshot() (write func() ([]byte, error), err error)
	// Restore replaces the state with a snapshot's (nil: the empty state).
	Restore(snapshot []byte) error
}

// AppliedIndexer is a StateMachine that wants to know the index it has
// applied up to, entries it never sees included (barriers, a new leader's
// empty entry, membership changes): AppliedIndex is called on the driver
// after each turn's Apply calls, with the group's applied index.
type AppliedIndexer interface {
	AppliedIndex(index uint64)
}

// Command is one committed command of a group.
type Command struct {
	Index uint64
	Data  []byte
	id    uint64 // the proposal's, to answer its proposer
}

// Transport carries a node's frames to its peers. Send hands over every
// message the node has for peer to in one turn, all groups together
// (AppendMessage's layout); it must not block for long and must not keep frame
// after it returns. A frame it cannot deliver may be dropped: Raft resends.
// The receiving side passes each frame to its Node's Receive.
type Transport interface {
	Send(to uint64, frame []byte)
}

// Config is a Node's identity, its disk and wire, and its timing.
type Config struct {
	// ID is this node's Raft id in every group it holds (not 0).
	ID uint64
	// Storage keeps every group's log and hard state (not nil).
	Storage Storage
	// Transport sends frames to peers (not nil).
	Transport Transport
	// Tick is the logical clock's period (10 ms when 0); ElectionTicks
	// (100 when 0) and HeartbeatTicks (10 when 0) count it.
	Tick                          time.Duration
	ElectionTicks, HeartbeatTicks int
	// SnapshotEntries is how many entries a group applies between two
	// snapshots of its state machine (8192 when 0); TrailingEntries how
	// many of them stay in the log after one (1024 when 0), so that a
	// follower that far behind catches up from the log.
	SnapshotEntries, TrailingEntries uint64
	// OnMember, when set, is told each member context a replica learns (a
	// group's first voters', an added member's, a snapshot's: members.go),
	// in AddGroup or on the driver: it must not block. Called again for
	// what a restart learns again.
	OnMember func(g Group, id uint64, ctx []byte)
}

// Node drives every Raft group a process holds from one goroutine: per turn
// it steps what arrived, sends each peer one frame carrying every group's
// messages, hands every group's storage appends to the writer goroutine as
// one job (which makes them durable with one Storage.Save and then sends the
// messages that waited for them), and applies every group's committed
// entries.
type Node struct {
	cfg Config
	box mailbox

	// The driver's own: the groups and per-turn scratch.
	groups map[Group]*replica
	list   []*replica
	turn   turnScratch

	// views are the groups as other goroutines see them (leader, term),
	// replaced whole when a group is added.
	views atomic.Pointer[map[Group]*view]

	startMu sync.Mutex // AddGroup before Start adds the group itself
	started bool

	writes     chan writeJob // the driver's storage appends, to the writer
	writerDone chan struct{}
	snapshots  sync.WaitGroup // snapshots being written, which hand their job to the writer

	fatal atomic.Pointer[error] // why the node halted (halt), nil while it runs

	nextID  atomic.Uint64 // proposal and read ids (random start: ids survive no restart)
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once

	// Counters for benchmarks and INFO: driver turns that had a Ready,
	// Saves made, frames sent, snapshots taken.
	Turns, Saves, Frames, Snapshots atomic.Uint64
}

// view is what any goroutine may read of a group.
type view struct {
	lead, term atomic.Uint64
	leader     atomic.Bool // this node leads
	applied    atomic.Uint64
	commit     atomic.Uint64
	last       atomic.Uint64
	snap       atomic.Uint64 // the last snapshot's index
	// trailing is SetTrailing's: the entries kept after the group's next
	// snapshot, plus one (0: Config.TrailingEntries).
	trailing atomic.Uint64

	mu      sync.Mutex
	changed chan struct{} // LeaderChanged's; closed and cleared at a change
}

// notify closes the channel LeaderChanged gave out, if any.
func (v *view) notify() {
	v.mu.Lock()
	if v.changed != nil {
		close(v.changed)
		v.changed = nil
	}
	v.mu.Unlock()
}

// replica is one group on this node: the driver's alone.
type replica struct {
	g       Group
	rn      *raft.RawNode
	ms      *raft.MemoryStorage
	sm      StateMachine
	v       *view
	saved   pb.HardState         // the writer's: last hard state Save made durable (term, vote)
	written uint64               // the writer's: the index of the last snapshot it saved
	waiters map[uint64]*future   // proposals this node made as leader, by id
	pending map[uint64][]*future // reads by their ReadIndex's id, before Raft gave the index
	ready   []readAt             // reads whose index is known, waiting for apply

	conf       pb.ConfState      // as of the last entry applied
	members    map[uint64][]byte // the members' contexts, as of the last entry applied (members.go)
	snapIndex  uint64            // the last snapshot's index
	snapWanted bool              // a membership change applied since
	snapBusy   atomic.Bool       // a snapshot is being written (one at a time): set by the driver, cleared by the writer
	cmds       []Command         // Apply's batch, kept between turns

	// ccProposed are the ids of the membership changes proposed this turn.
	// Raft appends a change while another is pending as an empty entry,
	// silently; the turn's Ready shows which it did.
	ccProposed []uint64
}

type readAt struct {
	index uint64
	fs    []*future
}

// future is a proposal's or read's outcome, set once by the driver.
type future struct {
	done  chan struct{}
	val   any
	err   error
	index uint64 // the entry's, when it applied
}

func newFuture() *future { return &future{done: make(chan struct{})} }

func (f *future) resolve(val any, err error) {
	f.val, f.err = val, err
	close(f.done)
}

func (f *future) wait(ctx context.Context, stopped <-chan struct{}) (any, error) {
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-stopped:
		select {
		case <-f.done:
			return f.val, f.err
		default:
			return nil, ErrStopped // the driver answered every future before it closed stopped
		}
	}
}

type proposal struct {
	data []byte // id (8 bytes) then the command
	f    *future
}

type inMsg struct {
	g Group
	m pb.Message
}

// mailbox is what other goroutines hand the driver; wake has room for one
// signal, so a burst of arrivals costs the driver one turn.
type mailbox struct {
	mu    sync.Mutex
	props map[Group][]proposal
	msgs  []inMsg
	reads map[Group][]*future
	ctl   []func()
	wake  chan struct{}
}

func (b *mailbox) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// NewNode returns a node with no groups; Start runs its driver.
func NewNode(cfg Config) (*Node, error) {
	if cfg.ID == 0 || cfg.Storage == nil || cfg.Transport == nil {
		return nil, errors.New("multiraft: Config needs ID, Storage and Transport")
	}
	if cfg.Tick == 0 {
		cfg.Tick = 10 * time.Millisecond
	}
	if cfg.ElectionTicks == 0 {
		cfg.ElectionTicks = 100
	}
	if cfg.HeartbeatTicks == 0 {
		cfg.HeartbeatTicks = 10
	}
	if cfg.SnapshotEntries == 0 {
		cfg.SnapshotEntries = 8192
	}
	if cfg.TrailingEntries == 0 {
		cfg.TrailingEntries = 1024
	}
	n := &Node{cfg: cfg, groups: map[Group]*replica{}, stop: make(chan struct{}), stopped: make(chan struct{}),
		writes: make(chan writeJob, writeQueue), writerDone: make(chan struct{})}
	n.box.props = map[Group][]proposal{}
	n.box.reads = map[Group][]*future{}
	n.box.wake = make(chan struct{}, 1)
	n.nextID.Store(rand.Uint64())
	views := map[Group]*view{}
	n.views.Store(&views)
	return n, nil
}

// GroupConfig is one replica's start.
type GroupConfig struct {
	// Voters are the group's first members' ids; every node that holds the
	// group from its start passes the same list. Used only when the
	// group's storage is empty; none (nil) for a node that joins a running
	// group: its leader sends it a snapshot once the group adds it.
	Voters []uint64
	// Learners are the group's first non-voting members (with Voters).
	Learners []uint64
	// Members are contexts of Voters and Learners (by id; members.go), kept with the
	// group's first snapshot; used only with Voters.
	Members map[uint64][]byte
	// Applied is the highest index SM already holds (0: it holds nothing,
	// and is restored from the stored snapshot, if any): a restarted
	// replica applies from the index after it.
	Applied uint64
	SM      StateMachine
}

// AddGroup starts this node's replica of group g: from its storage when it
// has any, else as a new group of gc.Voters (or a joiner's empty replica).
// Safe before and after Start.
func (n *Node) AddGroup(g Group, gc GroupConfig) error {
	st, err := n.cfg.Storage.Load(g)
	if err != nil {
		return fmt.Errorf("multiraft: group %d: %w", g, err)
	}
	hs, snap, ents := st.HardState, st.Snapshot, st.Entries
	ms := raft.NewMemoryStorage()
	if raft.IsEmptySnap(snap) && len(gc.Voters) > 0 {
		// Every replica of a new group starts from the same first snapshot
		// (index 1, term 1, the first voters), so the group needs no
		// bootstrap entries and every member's log matches from index 2.
		// It is stored before anything else, so that a restart finds the
		// group's voters in its storage whatever it is given then.
		snap = pb.Snapshot{Data: encodeSnapshot(gc.Members, nil),
			Metadata: pb.SnapshotMetadata{Index: 1, Term: 1, ConfState: pb.ConfState{Voters: gc.Voters, Learners: gc.Learners}}}
		if raft.IsEmptyHardState(hs) {
			hs = pb.HardState{Term: 1}
		}
		if err := n.cfg.Storage.SaveSnapshot(g, snap, false); err != nil {
			return fmt.Errorf("multiraft: group %d: first snapshot: %w", g, err)
		}
	}
	applied := gc.Applied
	members := map[uint64][]byte{}
	if !raft.IsEmptySnap(snap) {
		if err := ms.ApplySnapshot(snap); err != nil {
			return err
		}
		var smData []byte
		members, smData, err = decodeSnapshot(snap.Data)
		if err != nil {
			return fmt.Errorf("multiraft: group %d: stored snapshot %d: %w", g, snap.Metadata.Index, err)
		}
		if applied < snap.Metadata.Index {
			if err := gc.SM.Restore(smData); err != nil {
				return fmt.Errorf("multiraft: group %d: restore snapshot %d: %w", g, snap.Metadata.Index, err)
			}
			applied = snap.Metadata.Index
		}
		hs.Commit = max(hs.Commit, snap.Metadata.Index) // a snapshot is committed
	}
	if len(ents) > 0 {
		if err := ms.Append(ents); err != nil {
			return fmt.Errorf("multiraft: group %d: stored log: %w", g, err)
		}
	}
	if err := ms.SetHardState(hs); err != nil {
		return err
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        n.cfg.ID,
		ElectionTick:              n.cfg.ElectionTicks,
		HeartbeatTick:             n.cfg.HeartbeatTicks,
		Storage:                   ms,
		Applied:                   applied,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		AsyncStorageWrites:        true,
		Logger:                    quiet,
	})
	if err != nil {
		return fmt.Errorf("multiraft: group %d: %w", g, err)
	}
	r := &replica{g: g, rn: rn, ms: ms, sm: gc.SM, v: &view{}, saved: hs,
		waiters: map[uint64]*future{}, pending: map[uint64][]*future{},
		conf: snap.Metadata.ConfState, snapIndex: snap.Metadata.Index, written: snap.Metadata.Index, members: members}
	n.restoreMembers(r, members) // before the driver has the replica: on this goroutine
	r.v.term.Store(hs.Term)
	r.v.applied.Store(applied)
	r.v.snap.Store(snap.Metadata.Index)
	r.v.commit.Store(hs.Commit)
	if last, err := ms.LastIndex(); err == nil {
		r.v.last.Store(last)
	}
	add := func() error {
		if _, ok := n.groups[g]; ok {
			return ErrGroupExists
		}
		n.groups[g] = r
		n.list = append(n.list, r)
		views := maps.Clone(*n.views.Load())
		views[g] = r.v
		n.views.Store(&views)
		return nil
	}
	n.startMu.Lock()
	if !n.started { // no driver yet: the groups are this goroutine's
		defer n.startMu.Unlock()
		return add()
	}
	n.startMu.Unlock()
	errc := make(chan error, 1)
	n.control(func() { errc <- add() })
	select {
	case err := <-errc:
		return err
	case <-n.stopped:
		return ErrStopped
	}
}

var quiet = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// control runs f on the driver goroutine (before Start: at its first turn).
func (n *Node) control(f func()) {
	n.box.mu.Lock()
	n.box.ctl = append(n.box.ctl, f)
	n.box.mu.Unlock()
	n.box.signal()
}

// Start runs the driver until Stop.
func (n *Node) Start() {
	n.startMu.Lock()
	defer n.startMu.Unlock()
	if !n.started {
		n.started = true
		go n.writer()
		go n.run()
	}
}

// Stop ends the driver; waiting proposals and reads fail with ErrStopped.
// Storage is the caller's to close afterwards.
func (n *Node) Stop() {
	n.Start() // a driver that never ran answers what waits, and returns
	n.once.Do(func() { close(n.stop) })
	<-n.stopped
}

// halt stops the node because of err, which leaves it unable to go on
// safely (a failed disk write: which of its writes landed is unknown): the
// driver and the writer stop, what waits fails with err, and Err reports it.
func (n *Node) halt(err error) {
	if n.fatal.CompareAndSwap(nil, &err) {
		n.once.Do(func() { close(n.stop) })
	}
}

// Err returns why the node halted by itself, or nil.
func (n *Node) Err() error {
	if p := n.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// Done is closed once the node's driver has stopped (Stop, or a halt).
func (n *Node) Done() <-chan struct{} { return n.stopped }

// stopErr is what waiters get when the driver stops: ErrStopped, wrapping
// the halt's reason if there is one.
func (n *Node) stopErr() error {
	if err := n.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return ErrStopped
}

// Campaign makes this node's replica of g stand for leader now.
func (n *Node) Campaign(g Group) {
	n.control(func() {
		if r := n.groups[g]; r != nil {
			_ = r.rn.Campaign()
		}
	})
}

// TransferLeadership asks this node's replica of g, if it leads g, to hand
// the leadership to node to (Raft's leader transfer: to campaigns once its
// log is caught up; proposals are refused meanwhile).
func (n *Node) TransferLeadership(g Group, to uint64) {
	n.control(func() {
		if r := n.groups[g]; r != nil {
			r.rn.TransferLeader(to)
		}
	})
}

// view returns group g's view, nil when this node does not hold g.
func (n *Node) view(g Group) *view { return (*n.views.Load())[g] }

// Propose replicates cmd through group g, which this node must lead, and
// returns what the group's StateMachine.Apply returned for it here. On
// ErrNotLeader or ErrNoGroup nothing was proposed; on ErrLeadershipLost,
// ErrStopped or ctx's error the outcome is unknown.
func (n *Node) Propose(ctx context.Context, g Group, cmd []byte) (any, error) {
	p, err := n.ProposeAsync(g, cmd)
	if err != nil {
		return nil, err
	}
	return p.f.wait(ctx, n.stopped)
}

// Proposal is a proposal on its way: Done closes once its outcome is known.
type Proposal struct {
	f       *future
	stopped <-chan struct{}
}

// Done is closed once Result has the outcome.
func (p *Proposal) Done() <-chan struct{} { return p.f.done }

// Result waits for the outcome: Propose's.
func (p *Proposal) Result(ctx context.Context) (any, error) { return p.f.wait(ctx, p.stopped) }

// Index is the index of the proposal's entry once it applied (after Done,
// with no error); 0 otherwise.
func (p *Proposal) Index() uint64 {
	select {
	case <-p.f.done:
		return p.f.index
	default:
		return 0
	}
}

// ProposeAsync is Propose without the wait: the refusals come at once, the
// rest through the Proposal. An empty cmd is a barrier: it applies nothing
// (the state machine never sees it), and its Result, nil, means that every
// entry before it has applied here.
func (n *Node) ProposeAsync(g Group, cmd []byte) (*Proposal, error) {
	v := n.view(g)
	if v == nil {
		return nil, ErrNoGroup
	}
	if !v.leader.Load() {
		return nil, ErrNotLeader
	}
	data := make([]byte, 8+len(cmd))
	binary.LittleEndian.PutUint64(data, n.nextID.Add(1))
	copy(data[8:], cmd)
	f := newFuture()
	n.box.mu.Lock()
	n.box.props[g] = append(n.box.props[g], proposal{data: data, f: f})
	n.box.mu.Unlock()
	n.box.signal()
	return &Proposal{f: f, stopped: n.stopped}, nil
}

// Barrier returns once every entry g committed before it has applied here,
// which needs this node to lead g (Propose of an empty command).
func (n *Node) Barrier(ctx context.Context, g Group) error {
	_, err := n.Propose(ctx, g, nil)
	return err
}

// Status is a group's replica as this node sees it.
type Status struct {
	Lead, Term uint64 // the leader known (0: none) and the term
	Leading    bool   // this node leads the group
	// Commit is the highest index known committed; Applied the highest
	// applied here; Last the last index of the log here (durable, or on
	// its way to the disk); Snapshot the index of the last snapshot taken
	// or installed here.
	Commit, Applied, Last, Snapshot uint64
}

// Status returns group g's status here; ok is false when this node does not
// hold g.
func (n *Node) Status(g Group) (st Status, ok bool) {
	v := n.view(g)
	if v == nil {
		return st, false
	}
	return Status{Lead: v.lead.Load(), Term: v.term.Load(), Leading: v.leader.Load(),
		Commit: v.commit.Load(), Applied: v.applied.Load(), Last: v.last.Load(), Snapshot: v.snap.Load()}, true
}

// SetTrailing sets how many entries group g keeps in its log after its
// snapshots from now on, instead of Config.TrailingEntries (a group that
// bounds its log in bytes). Safe from any goroutine, and from the group's
// StateMachine.Snapshot, where it applies to the snapshot being taken.
func (n *Node) SetTrailing(g Group, entries uint64) {
	if v := n.view(g); v != nil {
		v.trailing.Store(entries + 1)
	}
}

// LeaderChanged returns a channel that closes at g's next change of leader
// or term here (nil when this node does not hold g): take it, read the
// status, wait on it.
func (n *Node) LeaderChanged(g Group) <-chan struct{} {
	v := n.view(g)
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.changed == nil {
		v.changed = make(chan struct{})
	}
	return v.changed
}

// TakeSnapshot makes g's replica here take a snapshot of its state machine
// at its next turn (and compact its log behind it), as it does every
// SnapshotEntries entries.
func (n *Node) TakeSnapshot(g Group) {
	n.control(func() {
		if r := n.groups[g]; r != nil {
			r.snapWanted = true
			n.maybeSnapshot(r)
		}
	})
}

// Read returns once g's state machine here has applied every entry the
// group committed before Read was called (a linearizable read may then read
// it), which needs this node to lead g: a round of heartbeats confirms that it
// still does (Raft's ReadIndex), shared by every read of the same turn.
func (n *Node) Read(ctx context.Context, g Group) error {
	v := n.view(g)
	if v == nil {
		return ErrNoGroup
	}
	if !v.leader.Load() {
		return ErrNotLeader
	}
	f := newFuture()
	n.box.mu.Lock()
	n.box.reads[g] = append(n.box.reads[g], f)
	n.box.mu.Unlock()
	n.box.signal()
	_, err := f.wait(ctx, n.stopped)
	return err
}

// ChangeMembers proposes cc, a change of group g's members, which this node
// must lead, and returns once it applied here, with its entry's index. Raft
// takes one change at a time: a second while one is in flight is refused
// (ErrChangeRefused; ErrNotLeader's outcomes otherwise: ErrLeadershipLost,
// ErrStopped and ctx's error leave it unknown).
func (n *Node) ChangeMembers(ctx context.Context, g Group, cc pb.ConfChangeV2) (uint64, error) {
	v := n.view(g)
	if v == nil {
		return 0, ErrNoGroup
	}
	f := newFuture()
	id := n.nextID.Add(1)
	if len(cc.Context) > maxMemberContext {
		return 0, fmt.Errorf("%w: a member context of %d bytes (at most %d)", ErrChangeRefused, len(cc.Context), maxMemberContext)
	}
	cc.Context = append(binary.LittleEndian.AppendUint64(nil, id), cc.Context...)
	n.control(func() {
		r := n.groups[g]
		if r.rn.BasicStatus().RaftState != raft.StateLeader {
			f.resolve(nil, ErrNotLeader)
			return
		}
		if err := r.rn.ProposeConfChange(cc); err != nil {
			f.resolve(nil, fmt.Errorf("%w: %v", ErrChangeRefused, err))
			return
		}
		r.waiters[id] = f
		r.ccProposed = append(r.ccProposed, id) // checked against the log this turn: Raft may have dropped it
	})
	if _, err := f.wait(ctx, n.stopped); err != nil {
		return 0, err
	}
	return f.index, nil
}

// Members returns group g's voters and learners as this node's replica
// last applied them.
func (n *Node) Members(g Group) (voters, learners []uint64, err error) {
	done := make(chan struct{})
	n.control(func() {
		defer close(done)
		if r := n.groups[g]; r != nil {
			voters = append(append(voters, r.conf.Voters...), r.conf.VotersOutgoing...)
			learners = append(learners, r.conf.Learners...)
		} else {
			err = ErrNoGroup
		}
	})
	select {
	case <-done:
		return voters, learners, err
	case <-n.stopped:
		return nil, nil, ErrStopped
	}
}

// Receive takes a frame a peer's Transport sent (AppendMessage's layout) and
// queues its messages for the driver. A frame that does not parse is
// refused whole; messages for groups this node does not hold are dropped;
// after Stop every frame is refused (ErrStopped).
func (n *Node) Receive(frame []byte) error {
	select {
	case <-n.stop: // nobody would take them
		return ErrStopped
	default:
	}
	msgs, err := decodeFrame(frame, nil)
	if err != nil {
		return err
	}
	n.box.mu.Lock()
	n.box.msgs = append(n.box.msgs, msgs...)
	n.box.mu.Unlock()
	n.box.signal()
	return nil
}
