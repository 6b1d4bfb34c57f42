package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/raftstore/forward"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/resp"
)

// Config configures a Store.
type Config struct {
	// NodeID names this node in the Raft configuration.
	NodeID string
	// DataDir holds the Raft log (badger) and snapshots.
	DataDir string
	// PeerAddr is the address the peer (Raft) port binds, e.g. "127.0.0.1:7379".
	PeerAddr string
	// Peers are the voters of a new cluster, this node included, used only when
	// the data directory holds no Raft state yet. Empty: a single-node cluster of
	// this node. Every node of a new cluster is started with the same Peers.
	Peers []Peer
	// Join starts a node that waits to be added to a running cluster (RAFT.ADD on
	// any member) instead of bootstrapping one.
	Join bool
	// Logger receives the store's structured logs; nil discards them.
	Logger *slog.Logger
	// RaftLogOutput receives hashicorp/raft's own log lines (nil: discarded).
	RaftLogOutput io.Writer
	// ApplyTimeout bounds how long a write waits to be enqueued and committed.
	ApplyTimeout time.Duration
	// SnapshotThreshold is the number of log entries between snapshots (0: 8192).
	SnapshotThreshold uint64
	// TrailingLogs is how many entries stay in the log after a snapshot, for
	// followers that lag (0: 10240). A follower further behind installs the
	// leader's snapshot instead.
	TrailingLogs uint64
	// Now is the monotonic clock (tests inject one); nil means time.Now.
	Now func() time.Time
	// faults, set by tests only, injects partitions on the peer links.
	faults *faults
	// observe, set by tests only, sees every applied entry and its reply.
	observe func(index uint64, e command.Entry, reply resp.Value)

	// Publish delivers a message published by an applied entry to this node's
	// subscribers and returns how many received it. It is called on the apply
	// goroutine and must not block. nil drops published messages.
	Publish func(channel, message []byte) int
}

// Connection headers on the peer port.
const (
	headerRaft    byte = 'R' // hashicorp/raft's transport
	headerForward byte = 'F' // requests forwarded by followers to the leader
)

// Peer is one voter of a cluster: its node ID and peer address.
type Peer struct {
	ID   string
	Addr string
}

// ErrBadPeers reports a -peers list that cannot describe a cluster.
var ErrBadPeers = errors.New("bad peer list")

// checkPeers validates a bootstrap configuration: unique IDs and addresses, and
// this node in it at its own peer address.
func checkPeers(peers []Peer, self, selfAddr string) error {
	ids, addrs := map[string]bool{}, map[string]bool{}
	found := false
	for _, p := range peers {
		if p.ID == "" || p.Addr == "" {
			return fmt.Errorf("%w: empty node id or address in %q=%q", ErrBadPeers, p.ID, p.Addr)
		}
		if ids[p.ID] {
			return fmt.Errorf("%w: node id %q appears twice", ErrBadPeers, p.ID)
		}
		if addrs[p.Addr] {
			return fmt.Errorf("%w: peer address %s appears twice", ErrBadPeers, p.Addr)
		}
		ids[p.ID], addrs[p.Addr] = true, true
		if p.ID == self {
			found = true
			if p.Addr != selfAddr {
				return fmt.Errorf("%w: this node (%s) is listed at %s but its peer address is %s", ErrBadPeers, self, p.Addr, selfAddr)
			}
		}
	}
	if !found {
		return fmt.Errorf("%w: this node's id %q is not in the list", ErrBadPeers, self)
	}
	return nil
}

// Store is one node's replicated keyspace: a single Raft group for now. Its
// methods are safe for concurrent use.
type Store struct {
	cfg   Config
	log   *slog.Logger
	raft  *raft.Raft
	logs  *logstore.Store
	trans *raft.NetworkTransport
	peer  *mux.Mux // the peer port: Raft traffic and forwarding
	fwd   *forward.Client
	m     *machine
	dry   *lua.Engine // compiles scripts for dry runs (not the replicated cache)

	killMu  sync.Mutex
	dryRuns map[chan struct{}]struct{} // dry runs in progress, for SCRIPT KILL
	clock   *logClock
	ready   atomic.Bool // leader, and log time has caught up with the log

	rmu      sync.Mutex
	inflight *verifyRound
	next     *verifyRound

	noHandover bool // tests: Close like a crash, without a leadership transfer
	closeOnce  sync.Once
	closed     chan struct{}
	wg         sync.WaitGroup
}

// Open opens (or creates) the store in cfg.DataDir, binds the peer port and
// starts Raft. A fresh data directory bootstraps a single-node cluster.
func Open(cfg Config) (*Store, error) {
	if cfg.NodeID == "" {
		cfg.NodeID = "node1"
	}
	if cfg.ApplyTimeout == 0 {
		cfg.ApplyTimeout = 10 * time.Second
	}
	if cfg.SnapshotThreshold == 0 {
		cfg.SnapshotThreshold = 8192
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	out := cfg.RaftLogOutput
	if out == nil {
		out = io.Discard
	}
	// Bind the peer port before touching the data directory, so that a busy port
	// leaves nothing behind.
	peer, err := mux.Listen(cfg.PeerAddr, lg)
	if err != nil {
		return nil, err
	}
	raftLayer := peer.Handle(headerRaft)
	var stream raft.StreamLayer = raftLayer
	if cfg.faults != nil {
		stream = faultLayer{raftLayer, cfg.faults}
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "transport", Output: out}),
	})
	fwdLayer := peer.Handle(headerForward)
	go peer.Serve()
	closePeer := func() {
		trans.Close()
		peer.Close()
	}
	if len(cfg.Peers) > 0 {
		if err := checkPeers(cfg.Peers, cfg.NodeID, string(trans.LocalAddr())); err != nil {
			closePeer()
			return nil, err
		}
	}
	groupDir := filepath.Join(cfg.DataDir, "group-0")
	if err := os.MkdirAll(groupDir, 0o755); err != nil {
		closePeer()
		return nil, fmt.Errorf("data directory %s is unusable: %w", cfg.DataDir, err)
	}
	logs, err := logstore.Open(filepath.Join(groupDir, "raft"), logstore.Options{Logger: lg})
	if err != nil {
		closePeer()
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(groupDir, 2, hclog.New(&hclog.LoggerOptions{Name: "snapshot", Output: out}))
	if err != nil {
		closePeer()
		logs.Close()
		return nil, fmt.Errorf("snapshot store in %s: %w", groupDir, err)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Output: out, Level: hclog.Info})
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	// A buffered apply channel lets one connection's pipeline enter the leader
	// loop as one batch (one fsync). Its cost: a write still in the buffer when
	// the node shuts down is never answered, so Do also watches for Close.
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 512
	rc.NoLegacyTelemetry = true
	// A single voter elects itself after one heartbeat timeout: keep it short so
	// that a restart serves again quickly.
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 250 * time.Millisecond

	m := newMachine()
	m.publish = cfg.Publish
	m.observe = cfg.observe
	s := &Store{cfg: cfg, log: lg, logs: logs, trans: trans, peer: peer, m: m, clock: newLogClock(cfg.Now), closed: make(chan struct{}), dry: lua.New(),
		dryRuns: map[chan struct{}]struct{}{}}

	has, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil {
		closePeer()
		logs.Close()
		return nil, fmt.Errorf("reading raft state: %w", err)
	}
	r, err := raft.NewRaft(rc, s.m, logs, logs, snaps, trans)
	if err != nil {
		closePeer()
		logs.Close()
		return nil, fmt.Errorf("starting raft: %w", err)
	}
	s.raft = r
	switch {
	case !has && cfg.Join:
		lg.Info("waiting to be added to a cluster (RAFT.ADD on a member)", "node_id", cfg.NodeID, "peer_addr", trans.LocalAddr())
	case !has:
		conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: trans.LocalAddr()}}}
		if len(cfg.Peers) > 0 {
			conf.Servers = nil
			for _, p := range cfg.Peers {
				conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
			}
		}
		if err := r.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			s.Close()
			return nil, fmt.Errorf("bootstrapping: %w", err)
		}
		lg.Info("bootstrapped a new cluster", "data_dir", cfg.DataDir, "node_id", cfg.NodeID, "voters", len(conf.Servers))
	default:
		lg.Info("recovered existing raft state", "data_dir", cfg.DataDir, "last_index", logsLast(logs))
	}
	dial := dialForward
	if cfg.faults != nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return cfg.faults.dial(addr, func() (net.Conn, error) { return dialForward(ctx, addr) })
		}
	}
	s.fwd = forward.NewClient(dial, forward.Options{Logger: lg})
	s.wg.Add(3)
	go s.watchLeadership()
	go s.expiryLoop()
	go s.serveForwarded(fwdLayer)
	return s, nil
}

func logsLast(l *logstore.Store) uint64 {
	i, _ := l.LastIndex()
	return i
}

// WaitReady blocks until this node leads and serves, or ctx ends.
func (s *Store) WaitReady(ctx context.Context) error {
	for {
		if s.ready.Load() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return ErrClosed
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// WaitServing blocks until the cluster has a leader that serves (this node or
// another), or ctx ends.
func (s *Store) WaitServing(ctx context.Context) error {
	for {
		if s.ready.Load() {
			return nil
		}
		if addr, _ := s.raft.LeaderWithID(); addr != "" && s.raft.State() == raft.Follower {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return ErrClosed
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// PeerAddr is the bound peer address.
func (s *Store) PeerAddr() string { return string(s.trans.LocalAddr()) }

// watchLeadership brings log time up to date when this node takes office: it
// waits until every earlier entry is applied (a barrier), then continues the
// clock from the highest applied log time. Until then nothing is served.
func (s *Store) watchLeadership() {
	defer s.wg.Done()
	ch := s.raft.LeaderCh()
	for {
		select {
		case <-s.closed:
			return
		case isLeader := <-ch:
			s.ready.Store(false)
			if !isLeader {
				s.log.Info("lost leadership")
				continue
			}
			if err := s.raft.Barrier(s.cfg.ApplyTimeout).Error(); err != nil {
				s.log.Warn("leader barrier failed", "err", err)
				continue
			}
			s.clock.reset(s.m.now())
			s.ready.Store(true)
			s.log.Info("leading", "log_time_ms", s.m.now(), "applied_index", s.raft.AppliedIndex())
			select {
			case s.m.kick <- struct{}{}:
			default:
			}
		}
	}
}

// tickPacing is the least time between two expiry ticks.
const tickPacing = 5 * time.Millisecond

// expiryLoop is the leader's active expiry: when the earliest TTL deadline is
// reached in log time it proposes a tick entry, which removes every expired key
// on every replica at the same log position.
func (s *Store) expiryLoop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Second
		if s.ready.Load() {
			if d, ok := s.m.nextDeadline(); ok {
				now, wall := s.clock.read()
				if d <= now {
					e := command.Entry{Kind: command.KindTick, Time: now, Wall: wall}
					if err := s.raft.Apply(e.Encode(), s.cfg.ApplyTimeout).Error(); err != nil {
						s.log.Debug("expiry tick failed", "err", err)
						wait = 50 * time.Millisecond
					} else {
						// Lazy expiry already hides expired keys; pacing the ticks
						// keeps a stream of short TTLs from costing one log entry
						// per millisecond.
						wait = tickPacing
					}
				} else if w := time.Duration(d-now) * time.Millisecond; w < wait {
					wait = w
				}
			}
		}
		timer.Reset(wait)
		kick := s.m.kick
		if wait == tickPacing {
			kick = nil // a write must not cut the pause after a tick short
		}
		select {
		case <-s.closed:
			return
		case <-kick:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// Do executes a batch of commands (one client's pipeline) in order and returns one
// reply per command. A follower forwards the batch to the leader; the leader (or
// a node still electing itself) runs it with doLocal.
func (s *Store) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	// While there is no leader (an election), wait — bounded — until this node
	// serves or another node is known to lead, then run or forward.
	if !s.ready.Load() {
		s.awaitLeader(ctx)
	}
	if addr, ok := s.leaderToForward(); ok {
		return s.forwardBatch(ctx, addr, reqs)
	}
	return s.doLocal(ctx, reqs)
}

// electionWait bounds how long a request waits for an election to produce a
// leader (a few election timeouts) before it is answered TRYAGAIN.
const electionWait = 2 * time.Second

// awaitLeader waits, at most electionWait, until this node serves or knows
// another leader.
func (s *Store) awaitLeader(ctx context.Context) {
	c, cancel := context.WithTimeout(ctx, min(electionWait, s.cfg.ApplyTimeout))
	defer cancel()
	for !s.ready.Load() {
		if addr, _ := s.raft.LeaderWithID(); addr != "" && s.raft.State() != raft.Leader {
			return
		}
		select {
		case <-c.Done():
			return
		case <-s.closed:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// doLocal executes a batch on this node. Writes are proposed back to back so that Raft commits them
// with one fsync; a read waits for the writes before it, so it sees them.
func (s *Store) doLocal(ctx context.Context, reqs []command.Request) []resp.Value {
	out := make([]resp.Value, len(reqs))
	type pending struct {
		i int
		f raft.ApplyFuture
	}
	var inflight []pending
	flush := func() {
		if len(inflight) == 0 {
			return
		}
		// hashicorp/raft never answers a write still in its (buffered) apply
		// channel when it shuts down, so the wait also watches for Close.
		done := make(chan struct{})
		waiting := inflight
		go func() {
			for _, p := range waiting {
				p.f.Error()
			}
			close(done)
		}()
		select {
		case <-done:
			for _, p := range waiting {
				out[p.i] = s.result(p.f)
			}
		case <-s.closed:
			for _, p := range waiting {
				out[p.i] = resp.Error(ErrUnknownOutcome.Error())
			}
		}
		inflight = nil
	}
	verified := false // a leadership confirmation covers the run of reads after it
	for i, r := range reqs {
		if !r.Spec.Write {
			flush()
			if !verified {
				if err := s.readBarrier(ctx); err != nil {
					out[i] = resp.Error(err.Error())
					continue
				}
				verified = true
			}
			now, wall := s.clock.read()
			out[i] = s.m.read(r.Op, now, wall)
			continue
		}
		verified = false
		kind, args := command.KindCommand, r.Args
		switch op := r.Op.(type) {
		case command.Admin:
			flush()
			out[i] = s.admin(ctx, op)
			continue
		case command.Tx:
			kind, args = command.KindTx, command.TxArgs(op)
		case command.ScriptLoad, command.ScriptFlush:
			kind, args = command.KindScript, command.ScriptArgs(op)
		case command.Eval:
			if v, ok := s.admitScript(op); !ok {
				out[i] = v
				continue
			}
		}
		f, err := s.propose(ctx, kind, args)
		if err != nil {
			out[i] = resp.Error(err.Error())
			continue
		}
		inflight = append(inflight, pending{i, f})
	}
	flush()
	return out
}

// propose stamps a command with log time and hands it to Raft.
func (s *Store) propose(ctx context.Context, kind command.Kind, args [][]byte) (raft.ApplyFuture, error) {
	if !s.ready.Load() {
		if err := s.waitReady(ctx); err != nil {
			return nil, err
		}
	}
	now, wall := s.clock.read()
	e := command.Entry{Kind: kind, Time: now, Wall: wall, Args: args}
	return s.raft.Apply(e.Encode(), s.cfg.ApplyTimeout), nil
}

// waitReady waits (bounded) while this node is electing itself or catching up as
// a new leader; a node that knows another leader rejects at once.
func (s *Store) waitReady(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, min(electionWait, s.cfg.ApplyTimeout))
	defer cancel()
	for !s.ready.Load() {
		// Another node leads: this node must not serve (the caller forwards or
		// the client retries elsewhere).
		if addr, _ := s.raft.LeaderWithID(); addr != "" && s.raft.State() != raft.Leader {
			return ErrNotApplied
		}
		select {
		case <-c.Done():
			return ErrNotApplied
		case <-s.closed:
			return ErrClosed
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// result maps a future's outcome to a reply.
func (s *Store) result(f raft.ApplyFuture) resp.Value {
	if err := f.Error(); err != nil {
		return resp.Error(mapApplyErr(err).Error())
	}
	if v, ok := f.Response().(resp.Value); ok {
		return v
	}
	return resp.Error("ERR internal: no reply from the state machine")
}

// mapApplyErr sorts hashicorp/raft's errors into rejected and unknown outcomes.
func mapApplyErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout),
		errors.Is(err, raft.ErrLeadershipTransferInProgress): // refused before the log
		return ErrNotApplied
	case errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, raft.ErrAbortedByRestore):
		return ErrUnknownOutcome
	}
	return ErrUnknownOutcome
}

// admitScript is the leader's dry run of a script before it enters the log: the
// script runs against a copy of the current state with fsm.DryRunBudget. A
// script that does not finish (or an EVALSHA of a script the cache does not
// hold) is answered here and never proposed.
func (s *Store) admitScript(op command.Eval) (resp.Value, bool) {
	src := op.Source
	if src == nil {
		s.m.mu.RLock()
		src, _ = s.m.ks.Script(op.SHA)
		s.m.mu.RUnlock()
		if src == nil {
			return resp.Error(lua.ErrNoScript), false
		}
	}
	s.m.mu.Lock()
	scratch := s.m.ks.Clone()
	s.m.mu.Unlock()
	now, wall := s.clock.read()
	kill := make(chan struct{})
	s.killMu.Lock()
	s.dryRuns[kill] = struct{}{}
	s.killMu.Unlock()
	v := scratch.DryRun(op, src, s.dry, now, wall, kill)
	s.killMu.Lock()
	delete(s.dryRuns, kill)
	s.killMu.Unlock()
	if v.IsError() && (lua.IsBudgetError(v) || lua.IsKilledError(v) ||
		strings.HasPrefix(v.String(), "ERR Error compiling script")) {
		return v, false
	}
	return resp.Value{}, true
}

// admin runs a membership operation on the leader.
func (s *Store) admin(ctx context.Context, op command.Admin) resp.Value {
	switch op.Action {
	case "members":
		return s.members(ctx)
	case "status": // asked by the leader for RAFT MEMBERS
		return resp.Array(resp.Int(int64(s.raft.AppliedIndex())), resp.Int(int64(s.raft.LastIndex())))
	}
	if s.raft.State() != raft.Leader {
		return resp.Error(ErrNotApplied.Error())
	}
	var f raft.Future
	switch op.Action {
	case "add":
		if op.ID == "" || op.Addr == "" {
			return resp.Error("ERR node id and peer address are required")
		}
		f = s.raft.AddVoter(raft.ServerID(op.ID), raft.ServerAddress(op.Addr), 0, s.cfg.ApplyTimeout)
	case "remove":
		f = s.raft.RemoveServer(raft.ServerID(op.ID), 0, s.cfg.ApplyTimeout)
	case "transfer":
		if op.ID == "" {
			f = s.raft.LeadershipTransfer()
		} else {
			addr := ""
			for _, srv := range s.configuration() {
				if string(srv.ID) == op.ID {
					addr = string(srv.Address)
				}
			}
			if addr == "" {
				return resp.Error("ERR no such node: " + op.ID)
			}
			f = s.raft.LeadershipTransferToServer(raft.ServerID(op.ID), raft.ServerAddress(addr))
		}
	default:
		return resp.Error(string(command.ErrSyntax))
	}
	if err := f.Error(); err != nil {
		return resp.Error("ERR " + op.Action + " failed: " + err.Error())
	}
	return resp.OK
}

func (s *Store) configuration() []raft.Server {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// members lists the configuration as this node knows it, with each member's
// applied index and its lag behind this node's last log index (asked over the
// peer port; -1 when a member does not answer within a second).
func (s *Store) members(ctx context.Context) resp.Value {
	leaderAddr, leaderID := s.raft.LeaderWithID()
	servers := s.configuration()
	applied := make([]int64, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		if srv.Address == s.trans.LocalAddr() {
			applied[i] = int64(s.raft.AppliedIndex())
			continue
		}
		wg.Add(1)
		go func(i int, addr string) {
			defer wg.Done()
			applied[i] = -1
			c, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			b, err := s.fwd.Call(c, addr, command.EncodeRequests([]command.Request{{Op: command.Admin{Action: "status"}, Spec: command.AdminSpec}}))
			if err != nil {
				return
			}
			if v, _, err := resp.ReadValue(b); err == nil && len(v.Elems) == 1 && len(v.Elems[0].Elems) == 2 {
				applied[i] = v.Elems[0].Elems[0].Int
			}
		}(i, string(srv.Address))
	}
	wg.Wait()
	last := int64(s.raft.LastIndex())
	var out []resp.Value
	for i, srv := range servers {
		lag := int64(-1)
		if applied[i] >= 0 {
			lag = max(last-applied[i], 0)
		}
		out = append(out, resp.Map(
			resp.BulkString("id"), resp.BulkString(string(srv.ID)),
			resp.BulkString("addr"), resp.BulkString(string(srv.Address)),
			resp.BulkString("suffrage"), resp.BulkString(srv.Suffrage.String()),
			resp.BulkString("leader"), resp.Bool(srv.ID == leaderID && srv.Address == leaderAddr),
			resp.BulkString("applied_index"), resp.Int(applied[i]),
			resp.BulkString("lag"), resp.Int(lag),
		))
	}
	return resp.Array(out...)
}

// KillScripts stops the scripts in a dry run on this node. It reports whether
// there were any. A killed script is answered with lua.KilledErrorText and never
// enters the log; scripts already in the log are bounded by fsm.ApplyBudget.
func (s *Store) KillScripts() bool {
	s.killMu.Lock()
	defer s.killMu.Unlock()
	n := len(s.dryRuns)
	for ch := range s.dryRuns {
		close(ch)
		delete(s.dryRuns, ch)
	}
	return n > 0
}

// readBarrier makes the reads that follow linearizable: after it returns, this
// node has confirmed with a quorum (after the reads arrived) that it still leads,
// and has applied everything committed by then.
func (s *Store) readBarrier(ctx context.Context) error {
	if !s.ready.Load() {
		if err := s.waitReady(ctx); err != nil {
			return ErrNotReadable
		}
	}
	return s.verify(ctx)
}

// verifyRound is one leadership confirmation shared by every read that arrived
// before it started.
type verifyRound struct {
	done chan struct{}
	err  error
}

func (s *Store) verify(ctx context.Context) error {
	s.rmu.Lock()
	if s.next == nil {
		s.next = &verifyRound{done: make(chan struct{})}
	}
	r := s.next
	if s.inflight == nil {
		s.startRoundLocked()
	}
	s.rmu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ErrNotReadable
	case <-s.closed:
		return ErrClosed
	}
}

func (s *Store) startRoundLocked() {
	r := s.next
	s.next = nil
	s.inflight = r
	go func() {
		commit := s.raft.CommitIndex()
		if err := s.raft.VerifyLeader().Error(); err != nil {
			r.err = ErrNotReadable
		} else {
			r.err = s.waitApplied(commit)
		}
		close(r.done)
		s.rmu.Lock()
		s.inflight = nil
		if s.next != nil {
			s.startRoundLocked()
		}
		s.rmu.Unlock()
	}()
}

// waitApplied waits until the FSM has applied index (barriers and no-ops are not
// seen by the FSM, so raft's own applied index is consulted too).
func (s *Store) waitApplied(index uint64) error {
	ch := s.m.appliedCh(index)
	deadline := time.NewTimer(s.cfg.ApplyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if s.raft.AppliedIndex() >= index {
			return nil
		}
		select {
		case <-ch:
			return nil
		case <-tick.C:
		case <-deadline.C:
			return ErrNotReadable
		case <-s.closed:
			return ErrClosed
		}
	}
}

// Replicas is what WAIT answers: the number of other voters that are guaranteed
// to hold every acknowledged write (a majority less this node).
func (s *Store) Replicas() int {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	voters := 0
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			voters++
		}
	}
	return voters/2 + 1 - 1
}

// Stats returns Raft's state for INFO's raft section, as name/value pairs in a
// stable order.
func (s *Store) Stats() [][2]string {
	st := s.raft.Stats()
	_, leaderID := s.raft.LeaderWithID()
	return [][2]string{
		{"raft_node_id", s.cfg.NodeID},
		{"raft_groups", "1"},
		{"raft_state", strings.ToLower(s.raft.State().String())},
		{"raft_leader", string(leaderID)},
		{"raft_term", st["term"]},
		{"raft_commit_index", st["commit_index"]},
		{"raft_applied_index", st["applied_index"]},
		{"raft_last_log_index", st["last_log_index"]},
		{"raft_last_snapshot_index", st["last_snapshot_index"]},
		{"raft_num_peers", st["num_peers"]},
		{"raft_log_time_ms", strconv.FormatInt(s.m.now(), 10)},
		{"raft_log_write_batches", strconv.FormatUint(s.logs.Batches(), 10)},
	}
}

// KeyspaceInfo is INFO's db0 line ("keys=N,expires=M,avg_ttl=0"), "" when empty.
func (s *Store) KeyspaceInfo() string {
	now, _ := s.clock.read()
	s.m.mu.RLock()
	keys, expires := s.m.ks.Counts(max(now, s.m.ks.Now()))
	s.m.mu.RUnlock()
	if keys == 0 {
		return ""
	}
	return "keys=" + strconv.Itoa(keys) + ",expires=" + strconv.Itoa(expires) + ",avg_ttl=0"
}

// Serving reports whether this node can serve clients now: it leads and is
// ready, or it follows a known leader (to which it forwards).
func (s *Store) Serving() bool {
	if s.ready.Load() {
		return true
	}
	addr, _ := s.raft.LeaderWithID()
	return addr != "" && s.raft.State() == raft.Follower
}

// IsLeader reports whether this node currently leads and serves.
func (s *Store) IsLeader() bool { return s.ready.Load() }

// Close stops Raft and closes the log. Pending writes end with ErrUnknownOutcome
// or ErrNotApplied.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		// A leader hands over first, so that the cluster does not wait out an
		// election timeout.
		if s.raft != nil && !s.noHandover && s.raft.State() == raft.Leader && len(s.configuration()) > 1 {
			if err := s.raft.LeadershipTransfer().Error(); err != nil {
				s.log.Warn("leadership transfer before shutdown failed", "err", err)
			} else {
				// Stay up (bounded) until the new leader is elected: it may need
				// this node's vote.
				self := s.trans.LocalAddr()
				for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					if addr, _ := s.raft.LeaderWithID(); addr != "" && addr != self {
						break
					}
				}
			}
		}
		close(s.closed)
		if s.raft != nil {
			err = s.raft.Shutdown().Error()
		}
		s.wg.Wait()
		s.trans.Close()
		s.peer.Close()
		if s.fwd != nil {
			s.fwd.Close()
		}
		if cerr := s.logs.Close(); err == nil {
			err = cerr
		}
	})
	return err
}
