package group

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/multiraft"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/raftstore/raftio"
)

// Engine is the node-wide Raft engine (package multiraft) that a Node's
// groups run on instead of a hashicorp/raft instance each (Config.Engine,
// issue 50): one driver goroutine, one writer making every group's appends
// durable with one fsync, and one connection per peer carrying every
// group's messages. A Node makes it with NewEngine, hands it to each group
// through Shared.Engine, starts it once the groups are added, and closes it
// after closing them.
//
// Its members are numbered by lockd's node ids (engineID: a hash) and found
// at their peer addresses, which every replica learns as member contexts
// (memberContext: a new group's first members', an added member's, every
// snapshot's), and a node learns of a peer that dials it from the
// connection's hello (a joiner, before anything else). Adding groups to a
// running cluster (RAFT ADDGROUPS) is not built on it yet.
type Engine struct {
	node    *multiraft.Node
	storage *multiraft.LogStorage
	peers   *enginePeers
	trans   *multiraft.NetTransport
	layer   *mux.Layer
	self    raft.ServerID
	addr    raft.ServerAddress

	serving sync.WaitGroup
	once    sync.Once
}

// headerEngine is the engine's connection header on the peer port.
const headerEngine byte = 'M'

// engineTick is the engine's clock. A follower stands for election after
// heartbeatTimeout of its leader's silence (in ticks; etcd's Raft adds a
// random part up to as much again), the leader sends a heartbeat every
// engineHeartbeatTicks, and steps down after an election timeout without a
// majority (CheckQuorum), as a hashicorp/raft group does.
const (
	engineTick           = 10 * time.Millisecond
	engineHeartbeatTicks = 10
)

// NewEngine makes the engine of the node cfg describes (NodeID, Peers,
// SnapshotThreshold, TrailingLogs, Logger) on its peer port, keeping every
// group's log in sh. Nothing runs until Start.
func NewEngine(cfg Config, peer *mux.Mux, sh *logstore.Shared) (*Engine, error) {
	cfg, lg := withDefaults(cfg)
	peers := newEnginePeers()
	for _, p := range cfg.Peers {
		peers.add(raft.ServerID(p.ID), raft.ServerAddress(p.Addr))
	}
	self, addr := raft.ServerID(cfg.NodeID), raft.ServerAddress(peer.Addr().String())
	peers.add(self, addr)
	layer := peer.Handle(headerEngine)
	stream, _ := raftio.WithDialVia(cfg.DialVia, layer, nil) // fault tests: through their proxies
	trans := multiraft.NewNetTransport(stream, peers.Resolve, lg.With("module", "engine"))
	trans.Greet(memberContext(self, addr), func(hello []byte) {
		if id, at, ok := parseMemberContext(hello); ok {
			peers.learn(id, at, false) // a hello names only the dialer, and never moves a known node
		}
	})
	storage := multiraft.NewLogStorage(sh)
	var disk multiraft.Storage = storage
	if cfg.WrapEngineStorage != nil { // fault tests only
		disk = cfg.WrapEngineStorage(disk)
	}
	node, err := multiraft.NewNode(multiraft.Config{
		ID: engineID(self), Storage: disk, Transport: trans,
		OnMember: func(_ multiraft.Group, n uint64, ctx []byte) {
			if id, at, ok := parseMemberContext(ctx); ok && engineID(id) == n {
				peers.learn(id, at, true)
			}
		},
		Tick: engineTick, ElectionTicks: int(heartbeatTimeout / engineTick), HeartbeatTicks: engineHeartbeatTicks,
		SnapshotEntries: cfg.SnapshotThreshold, TrailingEntries: cmp.Or(cfg.TrailingLogs, defaultTrailingLogs),
	})
	if err != nil {
		layer.Close()
		return nil, err
	}
	return &Engine{node: node, storage: storage, peers: peers, trans: trans, layer: layer, self: self, addr: addr}, nil
}

// defaultTrailingLogs is hashicorp/raft's TrailingLogs default, which a
// group on the engine keeps as well.
const defaultTrailingLogs = 10240

// Start runs the engine: its driver, and the inbound side of its transport.
func (e *Engine) Start() {
	e.node.Start()
	e.serving.Add(1)
	go func() {
		defer e.serving.Done()
		_ = e.trans.Serve(e.node) // ends when Close closes the layer
	}()
}

// Err reports why the engine halted by itself (a failed disk write), or nil.
func (e *Engine) Err() error { return e.node.Err() }

// Close stops the engine; the groups on it are closed first, and the shared
// log after it.
func (e *Engine) Close() error {
	e.once.Do(func() {
		e.node.Stop()
		e.trans.Close()
		e.layer.Close()
		e.serving.Wait()
	})
	return e.node.Err()
}

// EngineCounters is the engine's work so far: driver turns that had
// something to do, storage saves (one fsync each), frames sent, snapshots
// taken.
type EngineCounters struct{ Turns, Saves, Frames, Snapshots uint64 }

// Counters reports the engine's work, for INFO and benchmarks.
func (e *Engine) Counters() EngineCounters {
	n := e.node
	return EngineCounters{Turns: n.Turns.Load(), Saves: n.Saves.Load(), Frames: n.Frames.Load(), Snapshots: n.Snapshots.Load()}
}

// memberContext is node id at peer address addr as a member context of
// the engine (multiraft's, and a transport hello): the id's length as a
// uvarint, the id, the address.
func memberContext(id raft.ServerID, addr raft.ServerAddress) []byte {
	b := binary.AppendUvarint(nil, uint64(len(id)))
	return append(append(b, id...), addr...)
}

// parseMemberContext reads a memberContext; ok is false for anything else.
func parseMemberContext(b []byte) (id raft.ServerID, addr raft.ServerAddress, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b)-k) || len(b)-k-int(n) == 0 {
		return "", "", false
	}
	return raft.ServerID(b[k : k+int(n)]), raft.ServerAddress(b[k+int(n):]), true
}

// engineStart is how a group of this node starts on the engine: a new
// group's first members (cfg.Peers, or this node alone, as
// bootConfiguration makes them), or none for a group this node joins
// (cfg.Join) or whose voters are other nodes (it waits to be added).
func engineStart(cfg Config) multiraft.GroupConfig {
	var gc multiraft.GroupConfig
	if cfg.Join {
		return gc
	}
	self := raft.ServerID(cfg.NodeID)
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: self}}}
	if len(cfg.Peers) > 0 {
		conf = bootConfiguration(cfg)
	}
	if !slices.ContainsFunc(conf.Servers, func(s raft.Server) bool { return s.ID == self && s.Suffrage == raft.Voter }) {
		return gc // its voters start it; a non-voter of group 0 hears from their leader
	}
	gc.Members = map[uint64][]byte{}
	for _, srv := range conf.Servers {
		n := engineID(srv.ID)
		if srv.Suffrage == raft.Voter {
			gc.Voters = append(gc.Voters, n)
		} else {
			gc.Learners = append(gc.Learners, n)
		}
		if srv.Address != "" {
			gc.Members[n] = memberContext(srv.ID, srv.Address)
		}
	}
	slices.Sort(gc.Voters)
	slices.Sort(gc.Learners)
	return gc
}

// openOnEngine is Open for a group on the node's engine (cfg.engine): no
// Raft instance, transport, snapshot store or log of its own; its machine
// is added to the engine, which restores it from the group's last snapshot
// and replays its log.
func openOnEngine(cfg Config, lg *slog.Logger) (*Store, error) {
	e := cfg.engine
	if cfg.Group < 0 || cfg.Group >= MaxGroups {
		return nil, fmt.Errorf("group %d out of range (0 to %d)", cfg.Group, MaxGroups-1)
	}
	if cfg.peer == nil {
		return nil, fmt.Errorf("group %d: a group on the engine needs its node's peer port", cfg.Group)
	}
	start := engineStart(cfg)
	logs, err := e.storage.Log(multiraft.Group(cfg.Group))
	if err != nil {
		return nil, err
	}
	metrics := cmp.Or(cfg.metrics, NewMetrics())
	cfg.MaxWriteBytes = min(cmp.Or(cfg.MaxWriteBytes, DefaultMaxWriteBytes), logs.MaxData())
	_, fwdHdr := groupHeaders(cfg.Group)
	_, dial := raftio.WithDialVia(cfg.DialVia, nil, forwardDialer(cfg.peer, fwdHdr))
	peer := &peerSide{mux: cfg.peer, fwdLayer: cfg.peer.Handle(fwdHdr), dial: dial}
	s := newStore(cfg, lg, peer, logs, e.addr, cmp.Or(cfg.TrailingLogs, defaultTrailingLogs), metrics)
	s.engine = e
	g := multiraft.Group(cfg.Group)
	start.SM = &engineMachine{m: s.m}
	if err := e.node.AddGroup(g, start); err != nil {
		peer.fwdLayer.Close()
		return nil, fmt.Errorf("group %d on the engine: %w", cfg.Group, err)
	}
	s.raft = newEngineRaft(e.node, g, e.self, e.peers)
	s.m.bytes.setTrailing = func(n uint64) { s.setTrailingLogs(s.raft, n) }
	s.startLoops(peer)
	return s, nil
}

// ErrEngineGroups refuses bootstrapping a group added to a running cluster
// on the engine (RAFT ADDGROUPS), which is not built yet.
var ErrEngineGroups = errors.New("adding groups to a running cluster is not supported on the engine (-engine) yet")
