package raftstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/internal/durable"
	"github.com/lockd/lockd/placement"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// Node is one lockd process's share of the cluster: the Raft groups it hosts
// (each a Store with its own hashicorp/raft instance, badger log and FSM), all
// on one peer port, and the router that sends every command to the group that
// owns its keys (shard.Map). Group 0 also holds the cluster-wide things:
// sessions are opened there, and it replicates the shard map once a slot has
// moved. Its methods are safe for concurrent use.
type Node struct {
	cfg     Config
	log     *slog.Logger
	peer    *mux.Mux
	members *group.MemberCheck // the peer port's TLS check (used with Config.PeerTLSMembers)
	// groups are the node's groups, index = group id; RAFT ADDGROUPS
	// replaces the slice (copy on write), so read it with gs().
	groups atomic.Pointer[[]*group.Store]
	remote []remoteGroup // where the groups this node is no member of live (node_remote.go)

	mapMu sync.RWMutex
	smap  shard.Map // the shard map this node routes by (group 0's, cached)

	sharedLog *logstore.Shared // every group's Raft log (nil with one group on hashicorp/raft)
	// engine runs every group (Config.Engine, recorded as ENGINE), nil
	// when each group runs hashicorp/raft.
	engine *group.Engine
	// autoGroups: the group count follows the node count (GROUPS.auto;
	// growWithNodes).
	autoGroups bool
	// growing counts the RAFT ADDGROUPS running here (node_grow.go);
	// group 0's leadership stays put while any does.
	growing atomic.Int32

	moveMu sync.Mutex // one slot move at a time from this node
	addrs  addrBook   // node id -> RESP address

	metrics *group.Metrics // shared by the groups
	opening int            // the groups OpenNode opens (a map of more waits for ensureGroups)
	growMu  sync.Mutex     // opening groups added at runtime (node_grow.go)

	repl  nodeReplica // following a Redis master (node_replica.go)
	place placer      // the balancer, while this node leads group 0 (node_place.go)

	closeOnce sync.Once
	closed    chan struct{}
	wg        sync.WaitGroup
}

// groupsFile records, in a data directory, how many groups the cluster was
// created with.
const groupsFile = "GROUPS"

// ErrGroups reports a group count that cannot be used.
var ErrGroups = errors.New("bad group count")

// groupCount decides how many groups this node hosts: the count recorded in
// dataDir when there is one, a pre-sharding directory (group-0 only) is one
// group, and a new directory takes want (recorded before any group starts).
func groupCount(dataDir string, want int, lg *slog.Logger) (int, error) {
	if b, err := os.ReadFile(filepath.Join(dataDir, groupsFile)); err == nil {
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || n < 1 || n > MaxGroups {
			return 0, fmt.Errorf("%w: %s holds %q", ErrGroups, filepath.Join(dataDir, groupsFile), b)
		}
		if want != 0 && want != n {
			lg.Warn("the data directory was created with another group count; keeping it", "groups", n, "asked", want)
		}
		return n, nil
	}
	if want == 0 {
		want = 1
	}
	if want < 1 || want > MaxGroups {
		return 0, fmt.Errorf("%w: %d (1 to %d)", ErrGroups, want, MaxGroups)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "group-0")); err == nil {
		want = 1 // created before sharding: one group
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return 0, fmt.Errorf("data directory %s is unusable: %w", dataDir, err)
	}
	// Synced, name included: a crash right after must not leave an empty
	// GROUPS, which the next start would refuse.
	err := durable.WriteFile(filepath.Join(dataDir, groupsFile), []byte(strconv.Itoa(want)+"\n"), 0o644)
	if err == nil {
		err = durable.SyncDir(dataDir)
	}
	if err != nil {
		return 0, fmt.Errorf("data directory %s is unusable: %w", dataDir, err)
	}
	return want, nil
}

// replicasFile records, in a data directory created with -replicas, the
// voters each group gets (issue 49); without it the count follows the node
// count (placement.DefaultReplicas).
const replicasFile = "REPLICAS"

// replicaCount returns the replication factor recorded in dataDir, or, for a
// new directory (fresh), want, recorded there when it is not 0 (0: follow the
// node count).
func replicaCount(dataDir string, want int, fresh bool) (int, error) {
	path := filepath.Join(dataDir, replicasFile)
	if b, err := os.ReadFile(path); err == nil {
		r, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || r < 1 || r > MaxReplicas {
			return 0, fmt.Errorf("%w: %s holds %q", ErrReplicas, path, b)
		}
		return r, nil
	}
	if want < 0 || want > MaxReplicas {
		return 0, fmt.Errorf("%w: %d (1 to %d, or 0 to follow the node count)", ErrReplicas, want, MaxReplicas)
	}
	if !fresh {
		return 0, nil // created without one: it follows the node count (-replicas is ignored, as -groups is)
	}
	if want == 0 {
		return 0, nil
	}
	err := durable.WriteFile(path, []byte(strconv.Itoa(want)+"\n"), 0o644)
	if err == nil {
		err = durable.SyncDir(dataDir)
	}
	if err != nil {
		return 0, fmt.Errorf("data directory %s is unusable: %w", dataDir, err)
	}
	return want, nil
}

// bootstrappedFile marks a data directory whose node has opened (and
// bootstrapped, from -peers, where it was a voter) its groups once: later
// starts bootstrap nothing. A crash during the first start leaves it out,
// and the next start bootstraps the same groups the same way (the plan
// depends only on -peers and the recorded replication factor).
const bootstrappedFile = "BOOTSTRAPPED"

// joinedFile marks a data directory created by -join: its node was added to
// a running cluster and must never bootstrap a group from -peers (a restart
// with -peers would otherwise bootstrap, from the first plan, every group it
// holds no state for, beside the cluster's own).
const joinedFile = "JOINED"

// engineFile marks a data directory created with -engine: its groups run
// on the node-wide Raft engine, their log in engineDir.
const (
	engineFile = "ENGINE"
	engineDir  = "engine"
)

// ErrEngine refuses a configuration the engine does not run yet.
var ErrEngine = errors.New("not supported on the engine (-engine) yet")

// marked reports whether dataDir holds the marker file name (JOINED,
// GROUPS.auto, BOOTSTRAPPED), writing it, synced with its name, when it does
// not and mark is set; the directory is created if need be.
func marked(dataDir, name string, mark bool) (bool, error) {
	path := filepath.Join(dataDir, name)
	if _, err := os.Stat(path); err == nil {
		return true, nil
	}
	if !mark {
		return false, nil
	}
	err := os.MkdirAll(dataDir, 0o755)
	if err == nil {
		err = durable.WriteFile(path, []byte(name+"\n"), 0o644)
	}
	if err == nil {
		err = durable.SyncDir(dataDir)
	}
	if err != nil {
		return false, fmt.Errorf("data directory %s is unusable: %w", dataDir, err)
	}
	return true, nil
}

// MaxReplicas bounds -replicas: a group of more voters waits for more
// flushes on every write and survives no failure that 7 would not.
const MaxReplicas = 7

// ErrReplicas reports a replication factor that cannot be used.
var ErrReplicas = errors.New("bad replica count")

// bootPlacement is where a new cluster's groups start (cfg.Peers, the same
// on every node): every group on every node while the replication factor
// covers them all (the zero Placement), else placement.Plan over the peers.
// Zones are not known yet (each node knows its own): the balancer spreads
// across them once the nodes have said theirs.
func bootPlacement(cfg Config, groups int) (placement.Placement, error) {
	r := replicasFor(cfg.Replicas, len(cfg.Peers))
	if len(cfg.Peers) < 2 || r >= len(cfg.Peers) {
		return placement.Placement{}, nil
	}
	nodes := make([]placement.Node, len(cfg.Peers))
	for i, p := range cfg.Peers {
		nodes[i] = placement.Node{ID: p.ID}
	}
	return placement.Plan(nodes, groups, r, nil)
}

// replicasFor is the replication factor of a cluster of nodes nodes: the
// configured one, or placement.DefaultReplicas.
func replicasFor(configured, nodes int) int {
	if configured > 0 {
		return configured
	}
	return placement.DefaultReplicas(nodes)
}

// HasData reports whether dataDir already holds a node's state (its group
// count is then fixed).
func HasData(dataDir string) bool {
	for _, name := range []string{groupsFile, "group-0"} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); err == nil {
			return true
		}
	}
	return false
}

// OpenNode opens (or creates) every group of this node in cfg.DataDir on one
// peer port. A new data directory creates cfg.Groups groups (0: one); every
// node of a cluster must be created with the same count.
func OpenNode(cfg Config) (*Node, error) {
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	members := group.NewMemberCheck(cfg)
	peer, err := mux.ListenAdvertise(cfg.PeerAddr, cfg.AdvertiseAddr, lg, mux.WithTLS(group.PeerTLS(cfg, members)), mux.WithSecret(cfg.PeerSecret))
	if err != nil {
		return nil, err
	}
	if len(cfg.Peers) > 0 {
		if err := group.CheckPeers(cfg.Peers, cfg.NodeID, peer.Addr().String()); err != nil {
			peer.Close()
			return nil, err
		}
	}
	fresh := !HasData(cfg.DataDir)
	onEngine, err := marked(cfg.DataDir, engineFile, fresh && cfg.Engine)
	switch {
	case err != nil:
		peer.Close()
		return nil, err
	case cfg.Engine && !onEngine:
		lg.Warn("the data directory was created without -engine; its groups keep hashicorp/raft")
	}
	cfg.Engine = onEngine
	if onEngine {
		cfg.AutoGroups = false // the group count stays what it was created with
	}
	// Before GROUPS: a crash between the two leaves a directory that is
	// still new, never one that forgot it follows the node count.
	auto, err := marked(cfg.DataDir, autoGroupsFile, fresh && cfg.AutoGroups)
	if err != nil {
		peer.Close()
		return nil, err
	}
	n, err := groupCount(cfg.DataDir, cfg.Groups, lg)
	if err == nil {
		cfg.Replicas, err = replicaCount(cfg.DataDir, cfg.Replicas, fresh)
	}
	if err != nil {
		peer.Close()
		return nil, err
	}
	// Computed at every start, not only the first: a group with no Raft
	// state yet (a crash during the first start) must be bootstrapped as the
	// other nodes bootstrapped it, or not at all here (it depends only on
	// -peers and the recorded replication factor).
	boot := bootGroups(cfg.DataDir, n)
	joined, err := marked(cfg.DataDir, joinedFile, fresh && cfg.Join)
	done, _ := marked(cfg.DataDir, bootstrappedFile, false)
	if joined || done {
		// A node that joined, or that bootstrapped its groups at its first
		// start, never bootstraps again, whatever -peers or -replicas say
		// later: a group it holds no state for is another node's, and a
		// configuration of its own would be a second copy of it.
		boot = 0
	}
	var plan placement.Placement
	if err == nil && boot > 0 {
		plan, err = bootPlacement(cfg, boot)
	}
	if err != nil {
		peer.Close()
		return nil, err
	}
	nd := &Node{cfg: cfg, log: lg, peer: peer, members: members, closed: make(chan struct{}), remote: make([]remoteGroup, MaxGroups)}
	if fresh && cfg.Join && cfg.GroupsCreated > 0 && cfg.GroupsCreated < n {
		// A joining node of a cluster whose groups grew: the first map
		// (version 1) has the count the cluster was created with.
		if err := durable.WriteFile(filepath.Join(cfg.DataDir, bootGroupsFile), []byte(strconv.Itoa(cfg.GroupsCreated)+"\n"), 0o644); err != nil {
			peer.Close()
			return nil, err
		}
	}
	nd.autoGroups = auto
	// Until group 0's map is read, route by the cluster's first map: version
	// 1 over the groups it was created with (never a map of the grown count
	// that no node wrote).
	nd.smap, _ = shard.NewMap(bootGroups(cfg.DataDir, n))
	nd.opening = n
	metrics := group.NewMetrics()
	if onEngine {
		// Every group's log in one shared log, written by the engine's
		// writer: one journal record and fsync per turn for all groups.
		nd.sharedLog, err = logstore.OpenShared(filepath.Join(cfg.DataDir, engineDir), logstore.Options{Logger: lg, ObserveWrite: metrics.ObserveWrite, BeforeWrite: cfg.BeforeLogWrite})
		if err == nil {
			nd.engine, err = group.NewEngine(cfg, peer, nd.sharedLog)
			if err != nil {
				nd.sharedLog.Close()
			}
		}
		if err != nil {
			peer.Close()
			return nil, err
		}
	} else if n > 1 {
		// One badger DB for every group's log: concurrent writes of several
		// groups share one fsync (with a DB each, 8 groups on one disk ran
		// 4x slower than one group), and one set of memtables.
		nd.sharedLog, err = logstore.OpenShared(filepath.Join(cfg.DataDir, "raft"), logstore.Options{Logger: lg, ObserveWrite: metrics.ObserveWrite, BeforeWrite: cfg.BeforeLogWrite})
		if err != nil {
			peer.Close()
			return nil, err
		}
	}
	nd.metrics = metrics
	var stores []*group.Store
	for g := range n {
		var voters []string
		if g < len(plan.Groups) {
			voters = plan.Groups[g].Voters
		}
		st, err := nd.openGroup(g, n, voters, g >= boot)
		if err != nil {
			for _, s := range stores {
				s.Close()
			}
			if nd.engine != nil {
				nd.engine.Close()
			}
			if nd.sharedLog != nil {
				nd.sharedLog.Close()
			}
			peer.Close()
			return nil, fmt.Errorf("group %d: %w", g, err)
		}
		stores = append(stores, st)
	}
	nd.groups.Store(&stores)
	members.SetGroups(stores)
	if nd.engine != nil {
		nd.engine.Start()
	}
	if !done {
		if _, err := marked(cfg.DataDir, bootstrappedFile, true); err != nil {
			nd.log.Warn("recording the first start failed; the next start bootstraps the groups without state again", "err", err)
		}
	}
	go peer.Serve()
	nd.loadShardMap()
	nd.wg.Add(1)
	go nd.balanceLoop()
	nd.repl.n, nd.repl.user, nd.repl.pass, nd.repl.stopOnSkip = nd, cfg.MasterUser, cfg.MasterAuth, cfg.ReplicaStopOnUnsupported
	nd.wg.Add(1)
	go nd.replicaLoop()
	return nd, nil
}

// openGroup opens group g of a node of count groups; voters, when not nil,
// are its bootstrap voters (Config.Voters); join opens it waiting to be
// added or bootstrapped (a group added at runtime: RAFT ADDGROUPS).
func (n *Node) openGroup(g, count int, voters []string, join bool) (*group.Store, error) {
	gc := n.cfg
	gc.Group = g
	gc.Voters = voters
	gc.Join = gc.Join || join
	gc.Added = g >= bootGroups(n.cfg.DataDir, count) || g >= n.opening
	gc.LogBytes = max(cmp.Or(n.cfg.LogBytes, DefaultLogBytes)/uint64(count), 1) // the node's bound, shared
	if count > 1 {
		gc.Logger = n.log.With("group", g)
	}
	sh := group.Shared{Peer: n.peer, Log: n.sharedLog, Metrics: n.metrics, Engine: n.engine}
	if g == 0 {
		sh.OnShardMap, sh.NodeAdmin = n.noteShardMap, n.nodeAdmin
	}
	return group.OpenShared(gc, sh)
}

// Group returns group g.
func (n *Node) Group(g int) *group.Store { return n.gs()[g] }

// Groups is the number of Raft groups the node hosts.
func (n *Node) Groups() int { return len(n.gs()) }

// noteShardMap is group 0's apply hook for a replicated shard map (called on
// the apply goroutine, or after a snapshot restore).
func (n *Node) noteShardMap(b []byte) {
	m, err := shard.Decode(b)
	if err == nil && len(n.gs()) == 0 && m.Groups > n.opening {
		return // opening, with groups added since: loadShardMap takes it once they are open
	}
	if err == nil && len(n.gs()) > 0 && m.Groups > len(n.gs()) {
		// Groups added at runtime: open them before routing by the map.
		err = n.ensureGroups(m.Groups)
	}
	if err != nil || m.Groups > max(len(n.gs()), n.opening) {
		n.log.Error("ignoring a replicated shard map that does not fit this node", "err", err, "groups", m.Groups)
		return
	}
	n.mapMu.Lock()
	if m.Version > n.smap.Version {
		n.smap = m
	}
	n.mapMu.Unlock()
}

// loadShardMap reads the map group 0 has applied so far (at start, and
// before a slot move).
func (n *Node) loadShardMap() {
	if b := n.gs()[0].ShardMap(); b != nil {
		n.noteShardMap(b)
	}
}

// ShardMap is the map this node routes by.
func (n *Node) ShardMap() shard.Map {
	n.mapMu.RLock()
	defer n.mapMu.RUnlock()
	return n.smap
}

// groupOf returns the group that owns key.
func (n *Node) groupOf(key []byte) int {
	if len(n.gs()) == 1 {
		return 0
	}
	n.mapMu.RLock()
	defer n.mapMu.RUnlock()
	return n.smap.GroupOf(key)
}

// WaitServing blocks until every group has a serving leader, or ctx ends.
func (n *Node) WaitServing(ctx context.Context) error {
	for g, s := range n.gs() {
		if !n.member(g) && !n.ownsSlots(g) {
			continue // added but not (yet) placed: it serves nothing
		}
		for !n.member(g) {
			if addr, _ := n.remoteLeader(ctx, g, true); addr != "" {
				break
			}
			if !n.pause(ctx, 50*time.Millisecond) {
				if err := ctx.Err(); err != nil {
					return err
				}
				return group.ErrClosed
			}
		}
		if n.member(g) {
			if err := s.WaitServing(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// Serving reports whether every group has a serving leader (this node or one
// it forwards or relays to).
func (n *Node) Serving() bool {
	for g, s := range n.gs() {
		if n.member(g) {
			if !s.Serving() {
				return false
			}
		} else if addr, _ := n.knownLeader(g); addr == "" && n.ownsSlots(g) {
			return false
		}
	}
	return true
}

// IsLeader reports whether this node leads group 0 (the one that opens
// sessions and holds the cluster's settings).
func (n *Node) IsLeader() bool { return n.gs()[0].IsLeader() }

// PeerAddr is the bound (advertised) peer address.
func (n *Node) PeerAddr() string { return n.peer.Addr().String() }

// PeerCounters are the peer port's refused and unauthenticated connections
// (mux.Counters), for metrics.
func (n *Node) PeerCounters() mux.Counters { return n.peer.Counters() }

// Replicas is what WAIT answers: group 0's (every group has as many voters,
// placed or not).
func (n *Node) Replicas() int { return n.gs()[0].Replicas() }

// KillScripts stops the scripts in a dry run in any group.
func (n *Node) KillScripts() bool {
	killed := false
	for _, g := range n.gs() {
		killed = g.KillScripts() || killed
	}
	return killed
}

// ACL is the replicated user table (every group holds the same: ACL writes
// go to all of them; this reads group 0's).
func (n *Node) ACL() *command.ACLTable { return n.gs()[0].ACL() }

// Close stops every group (leaders hand over first) and the peer port.
func (n *Node) Close() error {
	var err error
	n.closeOnce.Do(func() {
		close(n.closed)
		n.wg.Wait()
		n.growMu.Lock() // groups being added are opened first, then closed with the rest
		gs := n.gs()
		n.growMu.Unlock()
		var wg sync.WaitGroup
		errs := make([]error, len(gs))
		for i, g := range gs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = g.Close()
			}()
		}
		wg.Wait()
		if n.engine != nil {
			errs = append(errs, n.engine.Close())
		}
		if n.sharedLog != nil {
			errs = append(errs, n.sharedLog.Close())
		}
		err = errors.Join(append(errs, n.peer.Close())...)
	})
	return err
}

// proposeInternal proposes an internal entry (a session attach, a slot move
// step, a shard map) to group g's leader, forwarding when another node leads,
// and returns the entry's reply.
func (n *Node) proposeInternal(ctx context.Context, g int, kind command.Kind, args [][]byte) resp.Value {
	e := command.Entry{Kind: kind, Args: args}
	req := command.Request{Op: command.Admin{Action: "propose", Addr: string(e.Encode())}, Spec: command.AdminSpec}
	deadline := time.Now().Add(group.ElectionWait)
	for {
		v := n.do(ctx, g, []command.Request{req})[0]
		if !v.Outcome.Retryable() || time.Now().After(deadline) {
			return v
		}
		select {
		case <-ctx.Done():
			return v
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ownsSlots reports whether group g owns a slot in the map this node
// routes by (a group just added owns none until slots move to it).
func (n *Node) ownsSlots(g int) bool {
	m := n.ShardMap()
	owned := m.Owned()
	return g < len(owned) && owned[g] > 0
}

// gs is the node's groups, index = group id (nil while OpenNode opens them).
func (n *Node) gs() []*group.Store {
	if p := n.groups.Load(); p != nil {
		return *p
	}
	return nil
}
