package group

import (
	"context"
	"errors"
	"hash/fnv"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/lockd/lockd/raftstore/multiraft"
)

// engineRaft is one group of the node-wide engine (package multiraft) as a
// group's consensus: the same contracts as hashiRaft, in hashicorp/raft's
// types (its futures, errors, server ids), so that a Store can run on either
// (issue 50). Not yet used by a Store: Open still starts hashicorp/raft.
type engineRaft struct {
	node  *multiraft.Node
	g     multiraft.Group
	self  raft.ServerID
	peers *enginePeers

	trailing atomic.Uint64 // SetTrailingLogs's, for ReloadableConfig
	leaderCh chan bool     // LeaderCh's: the latest news only, as hashicorp/raft's
	stop     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
}

var _ consensus = (*engineRaft)(nil)

// transferWait bounds a leadership transfer's wait for the leadership to
// move (the target catches up, then campaigns); transferRetry is how often
// the request is made again meanwhile.
const (
	transferWait  = 5 * time.Second
	transferRetry = 200 * time.Millisecond
)

// newEngineRaft returns group g of node as a consensus, this node being
// self among peers. The caller has added the group to the node.
func newEngineRaft(node *multiraft.Node, g multiraft.Group, self raft.ServerID, peers *enginePeers) *engineRaft {
	e := &engineRaft{node: node, g: g, self: self, peers: peers, leaderCh: make(chan bool, 1), stop: make(chan struct{})}
	e.wg.Add(1)
	go e.watchLeading()
	return e
}

// enginePeers names the engine's numeric node ids as lockd's node ids
// (raft.ServerID) and peer addresses.
type enginePeers struct {
	mu   sync.RWMutex
	byID map[uint64]raft.Server
}

func newEnginePeers() *enginePeers { return &enginePeers{byID: map[uint64]raft.Server{}} }

// engineID is node id's number in the engine: its FNV-1a hash (0 is not an
// id; a collision among a cluster's nodes has odds of about n²/2⁶⁵).
func engineID(id raft.ServerID) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	if n := h.Sum64(); n != 0 {
		return n
	}
	return 1
}

// add records id at addr and returns its engine id.
func (p *enginePeers) add(id raft.ServerID, addr raft.ServerAddress) uint64 {
	return p.learn(id, addr, true)
}

// learn records id at addr, replacing what was known of id only with
// replace, and returns its engine id.
func (p *enginePeers) learn(id raft.ServerID, addr raft.ServerAddress, replace bool) uint64 {
	n := engineID(id)
	p.mu.Lock()
	if _, known := p.byID[n]; replace || !known {
		p.byID[n] = raft.Server{ID: id, Address: addr}
	}
	p.mu.Unlock()
	return n
}

// server returns the node of engine id n.
func (p *enginePeers) server(n uint64) (raft.Server, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s, ok := p.byID[n]
	return s, ok
}

// Resolve gives a NetTransport the peer address of engine id n.
func (p *enginePeers) Resolve(n uint64) (string, bool) {
	s, ok := p.server(n)
	return string(s.Address), ok
}

// engineFuture is a hashicorp/raft future (ApplyFuture, IndexFuture, and
// Future) over the engine's outcome: wait runs once, at the first call.
type engineFuture struct {
	once  sync.Once
	wait  func() (any, uint64, error)
	val   any
	index uint64
	err   error
}

func (f *engineFuture) get() {
	f.once.Do(func() { f.val, f.index, f.err = f.wait() })
}

func (f *engineFuture) Error() error          { f.get(); return f.err }
func (f *engineFuture) Response() interface{} { f.get(); return f.val }
func (f *engineFuture) Index() uint64         { f.get(); return f.index }
func (f *engineFuture) Open() (*raft.SnapshotMeta, io.ReadCloser, error) {
	return nil, nil, errors.New("raftstore: the engine's snapshots are its own")
}

// failed is a future that failed before it started.
func failed(err error) *engineFuture {
	return &engineFuture{wait: func() (any, uint64, error) { return nil, 0, err }}
}

// engineErr maps the engine's outcomes onto hashicorp/raft's, which the
// group's callers tell apart (mapApplyErr).
func engineErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, multiraft.ErrNotLeader), errors.Is(err, multiraft.ErrNoGroup):
		return raft.ErrNotLeader
	case errors.Is(err, multiraft.ErrLeadershipLost):
		return raft.ErrLeadershipLost
	case errors.Is(err, multiraft.ErrStopped):
		return raft.ErrRaftShutdown
	}
	return err
}

// proposal is a future over an engine proposal.
func (e *engineRaft) proposal(cmd []byte) *engineFuture {
	p, err := e.node.ProposeAsync(e.g, cmd)
	if err != nil {
		return failed(engineErr(err))
	}
	return &engineFuture{wait: func() (any, uint64, error) {
		v, err := p.Result(context.Background()) // answered at apply, at a leadership loss, or at a stop
		return v, p.Index(), engineErr(err)
	}}
}

// Apply implements consensus; the timeout is hashicorp/raft's for
// enqueueing, which the engine does at once.
func (e *engineRaft) Apply(cmd []byte, _ time.Duration) raft.ApplyFuture {
	if len(cmd) == 0 {
		return failed(errors.New("raftstore: empty command")) // the engine's barrier
	}
	return e.proposal(cmd)
}

// Barrier implements consensus (an IndexFuture: the barrier's index).
func (e *engineRaft) Barrier(time.Duration) raft.Future { return e.proposal(nil) }

// Snapshot implements consensus: the engine takes it at its next turn.
func (e *engineRaft) Snapshot() raft.SnapshotFuture {
	e.node.TakeSnapshot(e.g)
	return failed(nil)
}

func (e *engineRaft) status() multiraft.Status {
	st, _ := e.node.Status(e.g)
	return st
}

func (e *engineRaft) AppliedIndex() uint64 { return e.status().Applied }
func (e *engineRaft) CommitIndex() uint64  { return e.status().Commit }
func (e *engineRaft) LastIndex() uint64    { return e.status().Last }
func (e *engineRaft) CurrentTerm() uint64  { return e.status().Term }

// State implements consensus: Leader, Follower (with or without a leader
// known), or Shutdown once the node stopped.
func (e *engineRaft) State() raft.RaftState {
	select {
	case <-e.node.Done():
		return raft.Shutdown
	default:
	}
	if e.status().Leading {
		return raft.Leader
	}
	return raft.Follower
}

// LeaderWithID implements consensus; empty when no leader is known or its
// node is not among the peers.
func (e *engineRaft) LeaderWithID() (raft.ServerAddress, raft.ServerID) {
	if s, ok := e.peers.server(e.status().Lead); ok {
		return s.Address, s.ID
	}
	return "", ""
}

// LastContact implements consensus: the engine's followers watch their
// leader themselves (every tick), so a group never pokes them.
func (e *engineRaft) LastContact() time.Time { return time.Now() }

// PokeFollower implements consensus: nothing to do (LastContact).
func (e *engineRaft) PokeFollower() error { return nil }

// VerifyLeader implements consensus: a ReadIndex round.
func (e *engineRaft) VerifyLeader() raft.Future {
	return &engineFuture{wait: func() (any, uint64, error) {
		return nil, 0, engineErr(e.node.Read(context.Background(), e.g))
	}}
}

// LeaderCh implements consensus.
func (e *engineRaft) LeaderCh() <-chan bool { return e.leaderCh }

// watchLeading feeds leaderCh until Shutdown: true when this node takes
// the leadership, false when it loses it; a value not yet read is replaced
// by the newer one.
func (e *engineRaft) watchLeading() {
	defer e.wg.Done()
	ch := make(chan struct{}, 1)
	stop := e.WatchLeader(ch) // watching before the first look: no change falls between
	defer stop()
	leading := false
	for {
		if now := e.status().Leading; now != leading {
			leading = now
			select {
			case <-e.leaderCh:
			default:
			}
			e.leaderCh <- now
		}
		select {
		case <-ch:
		case <-e.stop:
			return
		case <-e.node.Done():
			return
		}
	}
}

// WatchLeader implements consensus. The next change's channel is taken
// before each signal is sent, so that a change while the receiver reads
// the leader sends another.
func (e *engineRaft) WatchLeader(ch chan<- struct{}) (stop func()) {
	changed := e.node.LeaderChanged(e.g)
	done := make(chan struct{})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			select {
			case <-changed:
				changed = e.node.LeaderChanged(e.g)
				select {
				case ch <- struct{}{}:
				default:
				}
			case <-done:
				return
			case <-e.stop:
				return
			case <-e.node.Done():
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// LeadershipTransfer implements consensus: to the first other voter.
func (e *engineRaft) LeadershipTransfer() raft.Future {
	voters, _, err := e.node.Members(e.g)
	if err != nil {
		return failed(engineErr(err))
	}
	for _, v := range voters {
		if s, ok := e.peers.server(v); ok && s.ID != e.self {
			return e.transfer(v)
		}
	}
	return failed(errors.New("raftstore: no other voter to hand the leadership to"))
}

// LeadershipTransferToServer implements consensus.
func (e *engineRaft) LeadershipTransferToServer(id raft.ServerID, _ raft.ServerAddress) raft.Future {
	return e.transfer(engineID(id))
}

// transfer asks the engine to hand the leadership to node to and waits,
// bounded, until this node no longer leads.
func (e *engineRaft) transfer(to uint64) raft.Future {
	if !e.status().Leading {
		return failed(raft.ErrNotLeader)
	}
	e.node.TransferLeadership(e.g, to)
	return &engineFuture{wait: func() (any, uint64, error) {
		timer := time.NewTimer(transferWait)
		defer timer.Stop()
		again := time.NewTicker(transferRetry)
		defer again.Stop()
		for {
			changed := e.node.LeaderChanged(e.g)
			if !e.status().Leading {
				return nil, 0, nil
			}
			select {
			case <-changed:
			case <-again.C: // Raft drops a transfer the target did not finish within an election timeout
				e.node.TransferLeadership(e.g, to)
			case <-timer.C:
				return nil, 0, errors.New("raftstore: leadership transfer timed out")
			case <-e.node.Done():
				return nil, 0, raft.ErrRaftShutdown
			}
		}
	}}
}

// BootstrapCluster implements consensus: an engine group starts with its
// voters (multiraft.GroupConfig), so there is nothing to bootstrap.
func (e *engineRaft) BootstrapCluster(raft.Configuration) raft.Future {
	return failed(raft.ErrCantBootstrap)
}

// GetConfiguration implements consensus: the voters and learners this
// replica applied, named by the peers.
func (e *engineRaft) GetConfiguration() raft.ConfigurationFuture {
	voters, learners, err := e.node.Members(e.g)
	var conf raft.Configuration
	for _, set := range []struct {
		ids []uint64
		s   raft.ServerSuffrage
	}{{voters, raft.Voter}, {learners, raft.Nonvoter}} {
		for _, n := range set.ids {
			srv, ok := e.peers.server(n)
			if !ok {
				srv = raft.Server{ID: raft.ServerID(strconv.FormatUint(n, 10))}
			}
			srv.Suffrage = set.s
			conf.Servers = append(conf.Servers, srv)
		}
	}
	return &engineConfig{engineFuture: failed(engineErr(err)), conf: conf}
}

type engineConfig struct {
	*engineFuture
	conf raft.Configuration
}

func (c *engineConfig) Configuration() raft.Configuration { return c.conf }

// change is a future over a membership change; one that names addr carries
// the member's context, so that every replica learns where it is.
func (e *engineRaft) change(t pb.ConfChangeType, id raft.ServerID, addr raft.ServerAddress) raft.IndexFuture {
	n := engineID(id)
	cc := pb.ConfChangeV2{Changes: []pb.ConfChangeSingle{{Type: t, NodeID: n}}}
	if addr != "" {
		e.peers.add(id, addr)
		cc.Context = memberContext(id, addr)
	}
	return &engineFuture{wait: func() (any, uint64, error) {
		index, err := e.node.ChangeMembers(context.Background(), e.g, cc)
		return nil, index, engineErr(err)
	}}
}

// AddVoter, AddNonvoter, DemoteVoter and RemoveServer implement consensus
// (prevIndex and timeout are hashicorp/raft's; the engine takes one change
// at a time and refuses a second: multiraft.ErrChangeRefused).
func (e *engineRaft) AddVoter(id raft.ServerID, addr raft.ServerAddress, _ uint64, _ time.Duration) raft.IndexFuture {
	return e.change(pb.ConfChangeAddNode, id, addr)
}

func (e *engineRaft) AddNonvoter(id raft.ServerID, addr raft.ServerAddress, _ uint64, _ time.Duration) raft.IndexFuture {
	return e.change(pb.ConfChangeAddLearnerNode, id, addr)
}

func (e *engineRaft) DemoteVoter(id raft.ServerID, _ uint64, _ time.Duration) raft.IndexFuture {
	return e.change(pb.ConfChangeAddLearnerNode, id, "")
}

func (e *engineRaft) RemoveServer(id raft.ServerID, _ uint64, _ time.Duration) raft.IndexFuture {
	return e.change(pb.ConfChangeRemoveNode, id, "")
}

// Stats implements consensus: the keys a group's INFO reads.
func (e *engineRaft) Stats() map[string]string {
	st := e.status()
	voters, _, _ := e.node.Members(e.g)
	state := "Follower"
	if st.Leading {
		state = "Leader"
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	return map[string]string{
		"state": state, "term": u(st.Term), "commit_index": u(st.Commit), "applied_index": u(st.Applied),
		"last_log_index": u(st.Last), "last_snapshot_index": u(st.Snapshot), "num_peers": strconv.Itoa(max(len(voters)-1, 0)),
	}
}

// ReloadableConfig implements consensus: what SetTrailingLogs set.
func (e *engineRaft) ReloadableConfig() raft.ReloadableConfig {
	return raft.ReloadableConfig{TrailingLogs: e.trailing.Load()}
}

// SetTrailingLogs implements consensus: the group's next snapshots keep n
// entries (multiraft.Node.SetTrailing).
func (e *engineRaft) SetTrailingLogs(n uint64) error {
	e.trailing.Store(n)
	e.node.SetTrailing(e.g, n)
	return nil
}

// Shutdown implements consensus: this group's watchers stop; the node, which
// runs every group, is its owner's to stop.
func (e *engineRaft) Shutdown() raft.Future {
	e.once.Do(func() { close(e.stop) })
	e.wg.Wait()
	return failed(nil)
}
