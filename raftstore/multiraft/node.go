package multiraft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
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
	// (Node.Leader names it when known). Nothing was proposed.
	ErrNotLeader = errors.New("multiraft: not the group's leader")
	// ErrNoGroup: this node holds no replica of the group.
	ErrNoGroup = errors.New("multiraft: no such group on this node")
	// ErrLeadershipLost: the node stopped leading the group after it took
	// the proposal and before the entry applied here. The entry may still
	// be committed by the next leader: the outcome is unknown.
	ErrLeadershipLost = errors.New("multiraft: leadership lost; the outcome is unknown")
	// ErrStopped: the node stopped; for a proposal the outcome is unknown.
	ErrStopped = errors.New("multiraft: node stopped")
	// ErrGroupExists: AddGroup of a group the node already holds.
	ErrGroupExists = errors.New("multiraft: group already on this node")
)

// StateMachine is a group's replicated state. Apply is called on the node's
// driver goroutine with each committed command in log order, exactly once per
// index after the replica starts (a restarted replica applies again from the
// index its Config.Applied names); what it returns is the proposer's result.
// It must not block: every group of the node waits for it.
type StateMachine interface {
	Apply(index uint64, cmd []byte) any
}

// Transport carries a node's frames to its peers. Send hands over every
// message the node has for peer to in one turn, all groups together
// (EncodeFrame's layout); it must not block for long and must not keep frame
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
}

// Node drives every Raft group a process holds from one goroutine: per turn
// it steps what arrived, makes every group's new entries and hard states
// durable with one Storage.Save, sends each peer at most two frames carrying
// every group's messages (a leader's appends before the Save, what needs
// the Save after it), and applies every group's committed entries.
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

	nextID  atomic.Uint64 // proposal and read ids (random start: ids survive no restart)
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once

	// Counters for benchmarks and INFO: driver turns that had a Ready,
	// Saves made, frames sent.
	Turns, Saves, Frames atomic.Uint64
}

// view is what any goroutine may read of a group.
type view struct {
	lead, term atomic.Uint64
	leader     atomic.Bool // this node leads
	applied    atomic.Uint64
}

// replica is one group on this node: the driver's alone.
type replica struct {
	g       Group
	rn      *raft.RawNode
	ms      *raft.MemoryStorage
	sm      StateMachine
	v       *view
	saved   pb.HardState       // last hard state Save made durable (term, vote)
	waiters map[uint64]*future // proposals this node made as leader, by id
	props   []proposal         // proposals taken this turn
	reads   []*future          // reads taken this turn, before their ReadIndex
	pending map[uint64][]*future
	ready   []readAt // reads whose index is known, waiting for apply
}

type readAt struct {
	index uint64
	fs    []*future
}

// future is a proposal's or read's outcome, set once by the driver.
type future struct {
	done chan struct{}
	val  any
	err  error
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
			return nil, ErrStopped
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
	n := &Node{cfg: cfg, groups: map[Group]*replica{}, stop: make(chan struct{}), stopped: make(chan struct{})}
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
	// group's storage is empty.
	Voters []uint64
	// Applied is the highest index SM already holds (0: it is empty): after
	// a restart the replica applies from the index after it.
	Applied uint64
	SM      StateMachine
}

// AddGroup starts this node's replica of group g: from its storage when it
// has any, else as a new group of gc.Voters. Safe before and after Start.
func (n *Node) AddGroup(g Group, gc GroupConfig) error {
	hs, ents, err := n.cfg.Storage.Load(g)
	if err != nil {
		return fmt.Errorf("multiraft: group %d: %w", g, err)
	}
	ms := raft.NewMemoryStorage()
	// Every replica starts from the same first snapshot (index 1, term 1,
	// the first voters), so a new group needs no bootstrap entries and every
	// member's log matches from index 2.
	if err := ms.ApplySnapshot(pb.Snapshot{Metadata: pb.SnapshotMetadata{
		Index: 1, Term: 1, ConfState: pb.ConfState{Voters: gc.Voters},
	}}); err != nil {
		return err
	}
	if raft.IsEmptyHardState(hs) {
		hs = pb.HardState{Term: 1}
	}
	hs.Commit = max(hs.Commit, 1) // the first snapshot is committed
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
		Applied:                   max(gc.Applied, 1),
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		Logger:                    quiet,
	})
	if err != nil {
		return fmt.Errorf("multiraft: group %d: %w", g, err)
	}
	r := &replica{g: g, rn: rn, ms: ms, sm: gc.SM, v: &view{}, saved: hs,
		waiters: map[uint64]*future{}, pending: map[uint64][]*future{}}
	r.v.term.Store(hs.Term)
	r.v.applied.Store(max(gc.Applied, 1))
	add := func() error {
		if _, ok := n.groups[g]; ok {
			return ErrGroupExists
		}
		n.groups[g] = r
		n.list = append(n.list, r)
		old := *n.views.Load()
		views := make(map[Group]*view, len(old)+1)
		for k, v := range old {
			views[k] = v
		}
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

// Campaign makes this node's replica of g stand for leader now.
func (n *Node) Campaign(g Group) {
	n.control(func() {
		if r := n.groups[g]; r != nil {
			_ = r.rn.Campaign()
		}
	})
}

// Leader returns the id of the node g's replica here believes leads it (0:
// none known) and its term; ok is false when this node does not hold g.
func (n *Node) Leader(g Group) (lead, term uint64, ok bool) {
	v := (*n.views.Load())[g]
	if v == nil {
		return 0, 0, false
	}
	return v.lead.Load(), v.term.Load(), true
}

// Applied returns the highest index g's replica here has applied.
func (n *Node) Applied(g Group) uint64 {
	if v := (*n.views.Load())[g]; v != nil {
		return v.applied.Load()
	}
	return 0
}

// Propose replicates cmd through group g, which this node must lead, and
// returns what the group's StateMachine.Apply returned for it here. On
// ErrNotLeader or ErrNoGroup nothing was proposed; on ErrLeadershipLost,
// ErrStopped or ctx's error the outcome is unknown.
func (n *Node) Propose(ctx context.Context, g Group, cmd []byte) (any, error) {
	v := (*n.views.Load())[g]
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
	return f.wait(ctx, n.stopped)
}

// Read returns once g's state machine here has applied every entry the
// group committed before Read was called (a linearizable read may then read
// it), which needs this node to lead g: a round of heartbeats confirms that it
// still does (Raft's ReadIndex), shared by every read of the same turn.
func (n *Node) Read(ctx context.Context, g Group) error {
	v := (*n.views.Load())[g]
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

// Receive takes a frame a peer's Transport sent (EncodeFrame's layout) and
// queues its messages for the driver. A frame that does not parse is
// refused whole; messages for groups this node does not hold are dropped.
func (n *Node) Receive(frame []byte) error {
	var msgs []inMsg
	if err := DecodeFrame(frame, func(g Group, m pb.Message) {
		msgs = append(msgs, inMsg{g, m})
	}); err != nil {
		return err
	}
	n.box.mu.Lock()
	n.box.msgs = append(n.box.msgs, msgs...)
	n.box.mu.Unlock()
	n.box.signal()
	return nil
}
