package group

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/raftstore/appendpipe"
	"github.com/lockd/lockd/raftstore/forward"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/multiraft"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/raftstore/raftio"
	"github.com/lockd/lockd/raftstore/snapstore"
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
	// AdvertiseAddr is the peer address other nodes dial and the Raft
	// configuration records (host:port; a DNS name is allowed, as on
	// Kubernetes); "" means the bound PeerAddr.
	AdvertiseAddr string
	// ClientAddr is the RESP address this node tells other nodes and
	// cluster-aware clients (CLUSTER SLOTS); "" when it has none.
	ClientAddr string
	// Peers are the voters of a new cluster, this node included, used only when
	// the data directory holds no Raft state yet. Empty: a single-node cluster of
	// this node. Every node of a new cluster is started with the same Peers.
	Peers []Peer
	// Join starts a node that waits to be added to a running cluster (RAFT.ADD on
	// any member) instead of bootstrapping one.
	Join bool
	// Voters, when not nil, are the IDs of Peers that a new group's
	// configuration makes voters (the node's placement, issue 49); the other
	// Peers are non-voters in group 0 and absent from other groups, and a
	// node not in Voters bootstraps no group but group 0 (it waits to be
	// added). nil: every peer is a voter.
	Voters []string
	// Zone is this node's failure domain (-zone; "" none): the placement
	// keeps a group's voters in different zones while zones remain.
	Zone string
	// HomeZones gives hash tags a home zone (-home-zones: "{tag}" → zone):
	// the group that holds the tag's slot keeps a voter there and is led
	// from there, so clients in that zone pay no cross-zone hop for grants.
	// Group 0's leader applies it: give every node the same.
	HomeZones map[string]string
	// Added marks a group added to a running cluster (RAFT ADDGROUPS): the
	// only kind group 0's leader may have bootstrapped by a peer ("bootstrap").
	Added bool
	// GroupsCreated is, for a node joining a cluster (Join), the group
	// count the cluster was created with (INFO raft_groups_created; 0
	// unknown): a Node routes by the first map until group 0's arrives.
	GroupsCreated int
	// Replicas is the voters each group gets on a cluster created with it
	// (-replicas; 0: placement.DefaultReplicas of the node count). A Node
	// records it in a new data directory, as it records Groups.
	Replicas int
	// Logger receives the store's structured logs; nil discards them.
	Logger *slog.Logger
	// RaftLogOutput receives hashicorp/raft's own log lines as they are; nil
	// routes them into Logger (warnings and errors, or all with RaftLogs).
	RaftLogOutput io.Writer
	// RaftLogs logs hashicorp/raft's informational lines too (into Logger).
	RaftLogs bool
	// ApplyTimeout bounds the store's own waits on Raft: a new leader's
	// takeover barrier, a read's wait for the applied index, a membership
	// change, an expiry tick. A client's write is handed to Raft without a
	// timer (propose): hashicorp/raft's apply channel is buffered and always
	// drained (a follower refuses what it takes), and a timer per write cost
	// 2-4% of a node's CPU.
	ApplyTimeout time.Duration
	// SnapshotThreshold is the number of log entries between snapshots (0: 8192).
	SnapshotThreshold uint64
	// SnapshotInterval is how often a group checks whether SnapshotThreshold
	// entries have accumulated (hashicorp/raft waits between one and two
	// intervals; 0: 10 s). It bounds how much log a restart replays and how
	// long a burst's log stays on disk and in memory.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries stay in the log after a snapshot, for
	// followers that lag (0: 10240). A follower further behind installs the
	// leader's snapshot instead.
	TrailingLogs uint64
	// LogBytes bounds the group's Raft log in bytes as well, about (see
	// logbytes.go): the group snapshots once the entries applied since its
	// last snapshot hold LogBytes/2 bytes (or the last snapshot's size, if
	// that is larger), and keeps after a snapshot only the newest entries
	// that LogBytes/2 bytes hold (at most TrailingLogs). 0: DefaultLogBytes
	// (raftstore.OpenNode divides a node's among its groups).
	LogBytes uint64
	// MaxWriteBytes bounds a client's write: a command (or transaction, or
	// script call) whose log entry would be longer is answered ErrTooLarge
	// and not proposed (0: DefaultMaxWriteBytes). The log's own limit
	// (logstore.Store.MaxData, 64 MiB) caps it, and bounds the entries a
	// node builds itself (a slot move's import).
	MaxWriteBytes int
	// MaxSessionsPerUser caps the sessions one user may have open (0:
	// DefaultMaxSessionsPerUser; negative: no cap). A user allowed every key
	// and every admin command is not capped. The group's leader replicates
	// its value (owners.go), so every replica enforces the same cap: give
	// every node the same.
	MaxSessionsPerUser int64
	// StrictNX makes SET … NX on a key that holds exactly the value being
	// set answer nil, as Redis does. By default (false) it is a grant to
	// that owner (command.FeatureSameValueNX), once every member of the
	// group understands it. The group's leader replicates its choice: give
	// every node the same.
	StrictNX bool
	// MasterUser and MasterAuth authenticate the node to the Redis master
	// it follows after REPLICAOF (Redis's masteruser and masterauth; a
	// Node's, which CONFIG SET changes at run time).
	MasterUser, MasterAuth string
	// ReplicaStopOnUnsupported makes the link to the Redis master stop at the
	// first value or command lockd cannot import instead of counting it
	// (a Node's; CONFIG SET lockd-replica-unsupported changes it).
	ReplicaStopOnUnsupported bool
	// MasterTLS, when set, is the TLS configuration of the connection to the
	// Redis master (Redis's tls-replication).
	MasterTLS *tls.Config
	// NoBatchEntries makes the leader propose every write as an entry of its
	// own. By default a run of plain writes in one request batch goes into
	// one batch entry (command.KindBatch) once every other member of the
	// group has said it applies them (batchEntries, pipe.go): a lockd from
	// before batch entries cannot (it stops), and says nothing, so a rolling
	// upgrade from such a version needs no setting. Followers apply batch
	// entries either way.
	NoBatchEntries bool
	// Now is the monotonic clock (tests inject one); nil means time.Now.
	Now func() time.Time
	// PeerTLS, when set, runs the peer port (Raft and forwarding, inbound and
	// outbound) over TLS; with mutual TLS a node whose certificate the CA did
	// not sign can neither dial in nor be dialed.
	PeerTLS *mux.TLS
	// PeerTLSMembers: PeerTLS's CA also signs certificates that are not
	// nodes' (lockd: -tls-ca without -peer-tls-ca), so an inbound peer
	// certificate must also name the host of a member's peer address
	// (peerauth.go); others are refused during the handshake.
	PeerTLSMembers bool
	// JoinMembers are the peer addresses of the cluster this node is
	// joining, as a member reported them: with PeerTLSMembers, the members
	// this node lets in until it has a configuration of its own.
	JoinMembers []string
	// PeerSecret, when set, authenticates every peer connection, inbound
	// and outbound, with the cluster secret (mux.Secret).
	PeerSecret *mux.Secret

	// Fault-injection hooks, for the test/ fault suite only (lockd's hidden
	// fault flags); production leaves them zero.
	//
	// DialVia maps a peer's advertised address to the address to dial instead
	// (a faultnet proxy); Raft and forwarding connections both follow it.
	DialVia map[string]string
	// WrapLogStore wraps the Raft log store (logstore.Faulty: slow or failing
	// writes); WrapEngineStorage the engine's storage instead, on a node
	// that runs its groups on the engine (multiraft.FaultyStorage).
	WrapLogStore      func(raft.LogStore) raft.LogStore
	WrapEngineStorage func(multiraft.Storage) multiraft.Storage
	// BeforeLogWrite (fault tests only) is the committer's
	// logstore.Options.BeforeWrite: it runs before each batch the node's
	// log writes, with several groups or with one that has followers, and
	// may hold it.
	BeforeLogWrite func() error
	// PlantedTakeoverSkew is a planted bug: a new leader continues log time this
	// much ahead of the log, ending leases early. The suite must catch it.
	PlantedTakeoverSkew time.Duration

	// Groups is the number of Raft groups a Node creates in a new data
	// directory (0: 1); an existing directory keeps the count it was created
	// with. Open (one group) ignores it.
	Groups int
	// AutoGroups marks a new data directory whose group count follows the
	// node count (lockd's -groups 0 on a cluster; recorded as GROUPS.auto):
	// group 0's leader adds groups (RAFT ADDGROUPS) while the cluster has
	// more nodes than groups. An existing directory keeps what it recorded.
	AutoGroups bool
	// Engine runs a new cluster's groups on the node-wide Raft engine
	// (package multiraft; lockd's -engine) instead of a hashicorp/raft
	// instance each: raftstore.OpenNode records it in a new data directory
	// (an existing one keeps what it recorded) and hands each group the
	// engine (Shared.Engine). Open (one group, no Node) ignores it.
	Engine bool
	// Group is the group this Store is (raftstore.OpenNode sets it; Open: 0). It names the
	// group's directory (group-N) and its connection headers on the peer port.
	Group int
	// peer, sharedLog, engine, metrics, onShardMap and nodeAdmin are a
	// Node's (OpenShared copies them from Shared; Open leaves them zero).
	peer       *mux.Mux
	engine     *Engine
	sharedLog  *logstore.Shared
	metrics    *Metrics
	onShardMap func([]byte)
	nodeAdmin  func(ctx context.Context, op command.Admin) (v resp.Value, ok bool)

	// faults, set by tests only, injects partitions on the peer links.
	faults *faults
	// pipeVersion, set by tests only, is the appendpipe version the group's
	// pipe server greets with (0: pipeVersion; 1: as a node from before
	// batch entries, whose leaders then write none while it is a member).
	pipeVersion byte
	// noAppendPipe, set by tests only, makes the group behave as a node from
	// before appendpipe: it serves no pipe header and dials none (pipe.go).
	noAppendPipe bool
	// observe, set by tests only, sees every applied entry and its reply.
	observe func(index uint64, e command.Entry, reply resp.Value)
	// refuseTakeover, set by tests only, is asked after each takeover
	// barrier that succeeded; true fails it as hashicorp/raft can while this
	// node still leads (a transfer under way, an enqueue timeout).
	refuseTakeover func() bool
	// lingerFor, set by tests only, replaces lingerMax (linger.go).
	lingerFor time.Duration

	// WantEvents reports whether an event channel has listeners on this node
	// (lock events and keyspace notifications are built only then); nil: all.
	WantEvents func(channel string) bool
	// Publish delivers a message published by an applied entry to this node's
	// subscribers and returns how many received it. It is called on the apply
	// goroutine and must not block. nil drops published messages.
	Publish func(channel, message []byte) int
}

// Connection headers on the peer port. Group 0 uses 'R' and 'F'; group g ≥ 1
// uses 0x80+g for Raft and 0xC0+g for forwarding, so one node hosts at most
// MaxGroups groups.
const (
	headerRaft    byte = 'R' // hashicorp/raft's transport
	headerForward byte = 'F' // requests forwarded by followers to the leader
)

// logCacheEntries is both the most entries one AppendEntries carries and how
// many of the newest log entries a group keeps in memory for its replicators
// (a few hundred bytes each; at most logCacheMaxData).
const logCacheEntries = 512

// commitTimeout is hashicorp/raft's CommitTimeout: how long a leader with
// nothing new to send waits before it sends an AppendEntries anyway.
const commitTimeout = 50 * time.Millisecond

// MaxGroups bounds the Raft groups of a cluster (the peer port's headers).
const MaxGroups = 63

// groupHeaders returns group g's Raft and forwarding headers.
func groupHeaders(g int) (raftHdr, fwdHdr byte) {
	if g == 0 {
		return headerRaft, headerForward
	}
	return byte(0x80 + g), byte(0xC0 + g)
}

// Peer is one voter of a cluster: its node ID and peer address.
type Peer struct {
	ID   string
	Addr string
}

// ErrBadPeers reports a -peers list that cannot describe a cluster.
var ErrBadPeers = errors.New("bad peer list")

// CheckPeers validates a bootstrap configuration: unique IDs and addresses, and
// this node in it at its own peer address.
func CheckPeers(peers []Peer, self, selfAddr string) error {
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

// Store is one Raft group of a node's replicated keyspace (Node runs one per
// group and routes keys to them by slot). Its methods are safe for concurrent
// use.
type Store struct {
	cfg   Config
	log   *slog.Logger
	raft  consensus
	logs  *logstore.Store
	trans *appendpipe.Transport // hashicorp/raft's NetworkTransport, its pipelined appends on appendpipe; nil on the engine
	// engine is the node's Raft engine the group runs on (Config.Engine),
	// nil when it runs on hashicorp/raft.
	engine *Engine
	addr   raft.ServerAddress // this node's peer address, as the group's configuration records it
	peer   *mux.Mux           // the peer port: Raft traffic and forwarding
	// ownPeer: this Store opened the peer port (Open) and closes it; a
	// Node's groups share the Node's and close only their own layers.
	ownPeer  bool
	fwdLayer *mux.Layer
	fwd      *forward.Client
	m        *machine
	acks     *followerAcks // what the followers stored, as this node's pipelines heard it (parallelsync.go); nil for a group of a shared log
	dur      *durability   // the rule that lets the leader fsync beside its followers, at its seams (parallelsync.go)
	nudge    chan struct{} // nudgeFollowers → nudgeLoop (one pending at most)
	replies  *replyQueue   // awaitReplies → replyLoop: the waits on Raft futures, in proposal order
	dry      *lua.Engine   // compiles scripts for dry runs (not the replicated cache)

	sessions sessionTimers // leader only: when each session lapses
	waits    waitBoard     // blocked LOCK.ACQUIREs of this node's clients
	pops     popBoard      // blocked pops (BLPOP …) of this node's clients (bpop.go)
	linger   lingering     // leader only: queued acquires waiting to share a commit (linger.go)
	// leaderAsks counts this node's waiters asking the leader (askLeader).
	leaderAsks atomic.Int64
	leaders    leaderWatch // this node's view of the leader, and the forwarded calls it bounds (leaderwatch.go)
	rates      rateLimits  // leader only: the namespaces' RATE
	metrics    *Metrics

	killMu  sync.Mutex
	dryRuns map[chan struct{}]struct{} // dry runs in progress, for SCRIPT KILL
	clock   *logClock
	ready   atomic.Bool // leader, and log time has caught up with the log
	// takeover is the index up to which the FSM was complete when this node
	// took office (see waitApplied).
	takeover atomic.Uint64

	rmu      sync.Mutex
	inflight *verifyRound
	next     *verifyRound
	quick    []raft.ServerID // the voters that said yes soonest in the last round (read.go; the round in flight's)
	// alone: the last confirmation had no voter to ask (a lone voter), so
	// the next runs on the reader's goroutine (verify).
	alone atomic.Bool

	noHandover bool // tests: Close like a crash, without a leadership transfer
	closeOnce  sync.Once
	closed     chan struct{}
	wg         sync.WaitGroup
}

// Shared is what the groups of one node (raftstore.Node) share, handed to
// each group's OpenShared. Every field may be left zero: that part is then
// the group's own, as with Open.
type Shared struct {
	// Peer is the node's peer port: the group adds its headers' layers and
	// closes only those, never the port (zero: the group opens, serves and
	// closes a port of its own at Config.PeerAddr).
	Peer *mux.Mux
	// Log holds the group's Raft log and stable store in the node's one log,
	// so that the groups' writes share fsyncs (zero: a log of the group's own
	// in group-N/raft).
	Log *logstore.Shared
	// Metrics are the node's instruments (zero: the group's own).
	Metrics *Metrics
	// OnShardMap (group 0) is told the encoded shard map whenever an applied
	// entry or a restored snapshot changes it, on the apply goroutine; it
	// must not block.
	OnShardMap func([]byte)
	// NodeAdmin (group 0) runs the node-level admin actions (RAFT MOVESLOTS)
	// when this group leads; ok false: the action is not one of them.
	NodeAdmin func(ctx context.Context, op command.Admin) (v resp.Value, ok bool)
	// Engine, when set, runs the group on the node's Raft engine (with
	// Peer: Config.Engine); Log is then unused.
	Engine *Engine
}

// OpenShared is Open for a group of a node: it uses what sh gives instead of
// its own (see Shared), and cfg.Group names the group.
func OpenShared(cfg Config, sh Shared) (*Store, error) {
	cfg.peer, cfg.sharedLog, cfg.metrics, cfg.onShardMap, cfg.nodeAdmin, cfg.engine = sh.Peer, sh.Log, sh.Metrics, sh.OnShardMap, sh.NodeAdmin, sh.Engine
	return Open(cfg)
}

// Open opens (or creates) the store in cfg.DataDir, binds the peer port and
// starts Raft. A fresh data directory bootstraps a single-node cluster.
// If a step fails, what the steps before it opened is closed again.
func Open(cfg Config) (*Store, error) {
	cfg, lg := withDefaults(cfg)
	if cfg.engine != nil {
		return openOnEngine(cfg, lg)
	}
	raftLog := raftLogger(cfg, lg)
	// Bind the peer port before touching the data directory, so that a busy port
	// leaves nothing behind.
	peer, err := openPeer(cfg, lg, raftLog)
	if err != nil {
		return nil, err
	}
	groupDir, err := openGroupDir(cfg)
	if err != nil {
		peer.close()
		return nil, err
	}
	metrics := cfg.metrics
	if metrics == nil {
		metrics = NewMetrics()
	}
	snaps, err := openSnapshots(groupDir, lg)
	if err != nil {
		peer.close()
		return nil, err
	}
	logs, err := openLog(cfg, groupDir, lg, metrics)
	if err != nil {
		peer.close()
		return nil, err
	}
	// A client's write is bounded once here: the default, capped at what
	// the log accepts (maxEntry).
	cfg.MaxWriteBytes = min(cmp.Or(cfg.MaxWriteBytes, DefaultMaxWriteBytes), logs.MaxData())
	rc := raftConfig(cfg, raftLog)
	s := newStore(cfg, lg, peer, logs, peer.trans.LocalAddr(), rc.TrailingLogs, metrics)
	if metas, err := snaps.List(); err == nil && len(metas) > 0 {
		s.m.bytes.persisted(metas[0].Size)
	}
	has, err := s.startRaft(rc, snaps)
	if err != nil {
		peer.close()
		logs.Close()
		return nil, err
	}
	if err := s.bootstrapOrRecover(has, rc); err != nil {
		s.Close()
		return nil, err
	}
	s.startLoops(peer)
	return s, nil
}

// withDefaults returns cfg with its unset NodeID, ApplyTimeout and snapshot
// threshold and interval defaulted, and the logger to log to (cfg.Logger, or
// one that discards).
func withDefaults(cfg Config) (Config, *slog.Logger) {
	if cfg.NodeID == "" {
		cfg.NodeID = "node1"
	}
	if cfg.ApplyTimeout == 0 {
		cfg.ApplyTimeout = 10 * time.Second
	}
	if cfg.SnapshotThreshold == 0 {
		cfg.SnapshotThreshold = 8192
	}
	if cfg.SnapshotInterval <= 0 {
		cfg.SnapshotInterval = 10 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return cfg, lg
}

// raftLogger returns what makes hashicorp/raft's own loggers, by name: into
// lockd's slog log lg (warnings and errors; everything with RaftLogs), or raw
// to RaftLogOutput when that is set.
func raftLogger(cfg Config, lg *slog.Logger) func(name string) hclog.Logger {
	return func(name string) hclog.Logger {
		if cfg.RaftLogOutput != nil {
			return hclog.New(&hclog.LoggerOptions{Name: name, Output: cfg.RaftLogOutput, Level: hclog.Info})
		}
		level := hclog.Warn
		if cfg.RaftLogs {
			level = hclog.Info
			if lg.Enabled(context.Background(), slog.LevelDebug) {
				level = hclog.Debug
			}
		}
		return hclog.New(&hclog.LoggerOptions{Name: name, Output: &raftio.SlogWriter{Log: lg}, JSONFormat: true, Level: level})
	}
}

// peerSide is a group's end of the peer port, as openPeer set it up.
type peerSide struct {
	mux      *mux.Mux
	own      bool         // openPeer opened the port (no Config.peer): the Store closes it
	members  *MemberCheck // the own port's member check (PeerTLSMembers); nil when shared
	trans    *appendpipe.Transport
	fwdLayer *mux.Layer
	dial     func(context.Context, string) (net.Conn, error) // dials a peer's forwarding layer
	acks     *followerAcks                                   // nil for a group of a shared log
}

// openPeer checks cfg.Group, opens the peer port (or takes the Node's,
// cfg.peer), sets up the group's Raft transport and forwarding layer on it and
// checks cfg.Peers against the port's address. On error nothing is left open.
func openPeer(cfg Config, lg *slog.Logger, raftLog func(string) hclog.Logger) (*peerSide, error) {
	if cfg.Group < 0 || cfg.Group >= MaxGroups {
		return nil, fmt.Errorf("group %d out of range (0 to %d)", cfg.Group, MaxGroups-1)
	}
	raftHdr, fwdHdr := groupHeaders(cfg.Group)
	peer, ownPeer := cfg.peer, cfg.peer == nil
	var members *MemberCheck // the own peer port's (PeerTLSMembers)
	if ownPeer {
		var err error
		members = NewMemberCheck(cfg)
		peer, err = mux.ListenAdvertise(cfg.PeerAddr, cfg.AdvertiseAddr, lg, mux.WithTLS(PeerTLS(cfg, members)), mux.WithSecret(cfg.PeerSecret))
		if err != nil {
			return nil, err
		}
	}
	raftLayer := peer.Handle(raftHdr)
	var stream raft.StreamLayer = raftLayer
	if cfg.faults != nil {
		stream = faultLayer{raftLayer, cfg.faults}
	}
	dial := forwardDialer(peer, fwdHdr)
	stream, dial = raftio.WithDialVia(cfg.DialVia, stream, dial) // fault tests only
	netTrans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second,
		Logger: raftLog("transport"),
	})
	// The leader's stream of appends to each follower goes on a pipe of its
	// own, in appendpipe's binary frames (everything else stays on netTrans).
	// A group alone in its log counts its followers' acknowledgements toward
	// the durable majority its leader applies at (parallelsync.go); a group
	// of a shared log does not: there the leader's fsync is the one its
	// node's groups share, and applying ahead of it measured worse (3 nodes,
	// 8 groups, make bench-ab, 4 pairs: 0.91x the cycles/s, 1.12x the CPU
	// per operation and the acquire p99). A group alone gains a leader whose
	// slow or stalled fsync no longer holds its commits while both followers
	// are healthy (its throughput here moved within the noise: 0.88-1.08x).
	var acks *followerAcks
	var observer appendpipe.AckObserver // nil: the pipelines report nothing
	if cfg.sharedLog == nil {
		acks = &followerAcks{}
		observer = acks
	}
	trans := newPipeTransport(cfg, peer, netTrans, observer, lg)
	fwdLayer := peer.Handle(fwdHdr)
	if ownPeer {
		go peer.Serve()
	}
	p := &peerSide{mux: peer, own: ownPeer, members: members, trans: trans, fwdLayer: fwdLayer, dial: dial, acks: acks}
	if len(cfg.Peers) > 0 {
		if err := CheckPeers(cfg.Peers, cfg.NodeID, string(trans.LocalAddr())); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// close closes what openPeer set up: the transport, and the port if it opened
// it, else the group's forwarding layer.
func (p *peerSide) close() {
	p.trans.Close()
	if p.own {
		p.mux.Close()
	} else {
		p.fwdLayer.Close()
	}
}

// openGroupDir creates the group's directory under cfg.DataDir (group-N) if
// it is missing, and returns its path.
func openGroupDir(cfg Config) (string, error) {
	groupDir := filepath.Join(cfg.DataDir, "group-"+strconv.Itoa(cfg.Group))
	if err := os.MkdirAll(groupDir, 0o755); err != nil {
		return "", fmt.Errorf("data directory %s is unusable: %w", cfg.DataDir, err)
	}
	return groupDir, nil
}

// openSnapshots opens the group's snapshot store in groupDir (two kept).
func openSnapshots(groupDir string, lg *slog.Logger) (*snapstore.Store, error) {
	snaps, err := snapstore.Open(groupDir, 2, lg.With("module", "snapshot"))
	if err != nil {
		return nil, fmt.Errorf("snapshot store in %s: %w", groupDir, err)
	}
	return snaps, nil
}

// openLog opens the group's Raft log: its part of the node's shared log
// (cfg.sharedLog), or a log of its own in groupDir/raft. The caller closes it.
func openLog(cfg Config, groupDir string, lg *slog.Logger, metrics *Metrics) (*logstore.Store, error) {
	// The log is written by a committer (a Shared's, or with one group on
	// the node its own), so that a leader with followers lets its fsync run
	// beside theirs (parallelsync.go); a lone voter's writes go to disk on
	// the caller's goroutine when nothing is queued. group-N/raft keeps its
	// files as logstore.Open does. Whether a leader defers is decided at
	// each write, so a node started alone defers as soon as its cluster
	// grows.
	if cfg.sharedLog != nil {
		return cfg.sharedLog.Group(cfg.Group, metrics.ObserveWrite)
	}
	return logstore.Open(filepath.Join(groupDir, "raft"), logstore.Options{Logger: lg, ObserveWrite: metrics.ObserveWrite, BeforeWrite: cfg.BeforeLogWrite})
}

// raftConfig returns the group's hashicorp/raft configuration; it opens
// nothing.
func raftConfig(cfg Config, raftLog func(string) hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = raftLog("raft")
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	// A buffered apply channel lets one connection's pipeline enter the leader
	// loop as one batch (one fsync). Its cost: a write still in the buffer when
	// the node shuts down is never answered, so Do also watches for Close.
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = logCacheEntries
	rc.NoLegacyTelemetry = true
	// Followers learn the commit index from the next AppendEntries; when no
	// new entry follows, hashicorp/raft sends one after CommitTimeout (50 ms by
	// default; the leader sends it to every follower of every group even when
	// idle, so 5 ms cost an idle 3-node cluster of 8 groups half a core). A
	// client blocked in LOCK.ACQUIRE … WAIT on a follower is woken by that
	// follower's apply: the leader nudges the followers instead when it grants
	// a waiter whose request is not on the leader (nudgeFollowers).
	rc.CommitTimeout = commitTimeout
	// heartbeatTimeout: see contact.go.
	rc.HeartbeatTimeout = heartbeatTimeout
	rc.ElectionTimeout = heartbeatTimeout
	// A leader that heard from no majority for this long steps down. No
	// follower starts an election before a heartbeat timeout without the
	// leader, so a shorter lease only stops a leader early: at 250 ms, a
	// 3-node cluster on a saturated 2-core machine (1.5 MB writes) lost its
	// leader in 3 of 8 runs to collections that stalled a node for 300-400 ms;
	// at 500 ms in none of 8 (raftstore/DESIGN.md). It stays a few
	// milliseconds under the heartbeat timeout, which pokeFollower lowers by
	// one for a moment (hashicorp/raft wants lease ≤ heartbeat timeout).
	rc.LeaderLeaseTimeout = heartbeatTimeout - 5*time.Millisecond
	return rc
}

// newStore sets up the group's state machine and the Store around it, on the
// opened peer side and log, this node being at addr in the group's
// configuration and trailing entries staying after a snapshot; it starts
// nothing.
func newStore(cfg Config, lg *slog.Logger, peer *peerSide, logs *logstore.Store, addr raft.ServerAddress, trailing uint64, metrics *Metrics) *Store {
	m := newMachine()
	m.bytes = newLogBytes(cmp.Or(cfg.LogBytes, DefaultLogBytes)/2, trailing)
	m.publish = cfg.Publish
	m.wants = cfg.WantEvents
	m.ks.SetEventFilter(cfg.WantEvents)
	m.observe = cfg.observe
	m.onShardMap = cfg.onShardMap
	s := &Store{cfg: cfg, log: lg, logs: logs, trans: peer.trans, addr: addr, peer: peer.mux, ownPeer: peer.own, fwdLayer: peer.fwdLayer, m: m, acks: peer.acks, clock: newLogClock(cfg.Now), closed: make(chan struct{}), dry: lua.New(),
		dryRuns: map[chan struct{}]struct{}{}, metrics: metrics}
	m.wake = func(ws []fsm.Wake) {
		ws, pops := s.pops.deliver(ws) // blocked pops' wakes (bpop.go); ws: lock waiters'
		if s.waits.deliver(ws)+pops > 0 {
			s.nudgeFollowers()
		}
	}
	s.nudge = make(chan struct{}, 1)
	s.replies = newReplyQueue()

	s.clock.skew = cfg.PlantedTakeoverSkew.Milliseconds() // a planted bug, fault tests only
	return s
}

// startRaft reads whether the group has Raft state yet (has), puts the
// durability rule and the log cache between Raft and s's log and transport,
// and starts Raft (s.raft). It closes nothing on error; the caller does.
func (s *Store) startRaft(rc *raft.Config, snaps *snapstore.Store) (has bool, err error) {
	cfg, logs, trans, acks, metrics := s.cfg, s.logs, s.trans, s.acks, s.metrics
	has, err = raft.HasExistingState(logs, logs, snaps)
	if err != nil {
		return false, fmt.Errorf("reading raft state: %w", err)
	}
	var logStore raft.LogStore = logs
	var leader atomic.Pointer[raft.Raft]
	var engine atomic.Pointer[hashiRaft]
	s.m.bytes.setTrailing = func(n uint64) {
		if h := engine.Load(); h != nil { // no snapshot is captured before Raft runs
			s.setTrailingLogs(h, n)
		}
	}
	if cfg.WrapLogStore != nil { // fault tests only
		logStore = cfg.WrapLogStore(logs)
	}
	// Durability as the store Raft writes to reports it: a fault test's
	// lying disk (logstore.Faulty) claims its acknowledged writes are on
	// disk, as it claims they are stored.
	var dur logstore.DurableLog = logs
	if d, ok := logStore.(logstore.DurableLog); ok {
		dur = d
	}
	// The rule that lets a leader fsync beside its followers, at its four
	// seams (parallelsync.go).
	s.dur = &durability{log: dur, acks: acks, raft: leader.Load, shared: cfg.sharedLog != nil, self: rc.LocalID,
		early: metrics.appliedEarly.Inc}
	transport := s.dur.install(logs, s.m, trans)
	// The replicators read back what the leader just appended: serve the
	// newest entries from memory instead of the log store (logcache.go).
	logStore = raftio.NewLogCache(logStore, logCacheEntries)
	r, err := raft.NewRaft(rc, s.m, logStore, logs, snaps, transport)
	if err != nil {
		return false, fmt.Errorf("starting raft: %w", err)
	}
	h := &hashiRaft{Raft: r}
	s.raft = h
	engine.Store(h)
	leader.Store(r)
	return has, nil
}

// bootstrapOrRecover bootstraps a group without Raft state (has false) as
// cfg.Peers, or this node alone, unless it waits to be added (cfg.Join);
// with state it only logs the recovery. The caller closes s on error.
func (s *Store) bootstrapOrRecover(has bool, rc *raft.Config) error {
	cfg, lg, r, trans := s.cfg, s.log, s.raft, s.trans
	switch {
	case !has && cfg.Join:
		lg.Info("waiting to be added to a cluster (RAFT.ADD on a member)", "node_id", cfg.NodeID, "peer_addr", trans.LocalAddr())
	case !has:
		conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: trans.LocalAddr()}}}
		if len(cfg.Peers) > 0 {
			conf = bootConfiguration(cfg)
			if !slices.ContainsFunc(conf.Servers, func(s raft.Server) bool { return s.ID == rc.LocalID && s.Suffrage == raft.Voter }) {
				// Its voters bootstrap it (hashicorp/raft lets only a voter do
				// that); a non-voter of group 0 hears from their leader.
				lg.Info("this group's voters are other nodes; not bootstrapping it here", "node_id", cfg.NodeID)
				return nil
			}
		}
		if err := r.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("bootstrapping: %w", err)
		}
		lg.Info("bootstrapped a new cluster", "data_dir", cfg.DataDir, "node_id", cfg.NodeID, "voters", len(conf.Servers))
	default:
		lg.Info("recovered existing raft state", "data_dir", cfg.DataDir, "last_index", logsLast(s.logs))
	}
	return nil
}

// bootConfiguration is the first configuration of a new group of a cluster
// started with cfg.Peers: every peer a voter, or, with cfg.Voters, those
// voters, and in group 0 every other peer a non-voter. Only its voters
// bootstrap a group.
func bootConfiguration(cfg Config) raft.Configuration {
	var conf raft.Configuration
	for _, p := range cfg.Peers {
		suf := raft.Voter
		if cfg.Voters != nil && !slices.Contains(cfg.Voters, p.ID) {
			if cfg.Group != 0 {
				continue
			}
			suf = raft.Nonvoter
		}
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: suf, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	return conf
}

// hasServer reports whether servers holds id.
func hasServer(servers []raft.Server, id raft.ServerID) bool {
	return slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == id })
}

// startLoops sets up forwarding to the leader over peer's dialer, starts s's
// goroutines and, on a peer port of s's own, has its member check follow s.
func (s *Store) startLoops(peer *peerSide) {
	cfg, dial := s.cfg, peer.dial
	if viaDial := dial; cfg.faults != nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return cfg.faults.dial(addr, func() (net.Conn, error) { return viaDial(ctx, addr) })
		}
	}
	s.fwd = forward.NewClient(dial, forward.Options{Logger: s.log})
	s.observeLeader()
	s.wg.Add(8)
	go s.renewPops() // bpop.go
	go s.watchContact()
	go s.snapshotLoop()
	go s.watchLeadership()
	go s.expiryLoop()
	go s.nudgeLoop()
	go s.sessionLoop()
	go s.serveForwarded(peer.fwdLayer)
	go s.replyLoop() // not in wg: it may wait forever on a future Raft never answers (see awaitReplies)
	if members := peer.members; members != nil {
		members.SetGroups([]*Store{s})
	}
}

// configured is an engine that knows its group's configuration (consensus,
// or the *raft.Raft that parallelsync holds).
type configured interface {
	GetConfiguration() raft.ConfigurationFuture
}

// latestServers is r's latest configuration (committed or not); nil while r
// is nil or cannot say.
func latestServers(r configured) []raft.Server {
	if r == nil {
		return nil
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// voters is how many voters r's latest configuration holds.
func voters(r configured) int {
	n := 0
	for _, srv := range latestServers(r) {
		if srv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
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
		if err := s.pause(ctx, 5*time.Millisecond); err != nil {
			return err
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
		if err := s.pause(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}

// PeerAddr is the bound peer address.
func (s *Store) PeerAddr() string { return string(s.addr) }

// Raft is the group's hashicorp/raft instance, for what a Node reads of it
// (state, leader, indexes) and does with it (a leadership transfer). Writes
// go through Do, never Raft's Apply.
func (s *Store) Raft() consensus { return s.raft }

// Member reports whether this node is in the group's latest configuration
// (a voter or a non-voter); a Node relays a group it is no member of.
func (s *Store) Member() bool {
	return hasServer(s.Configuration(), raft.ServerID(s.cfg.NodeID))
}

// LeaderKnown reports whether this node sees a leader of the group (itself
// included).
func (s *Store) LeaderKnown() bool { return s.leaderAddr() != "" }

// Logs is the group's Raft log and stable store, for what a Node reads of it
// (its write count, its first index); only hashicorp/raft writes to it.
func (s *Store) Logs() *logstore.Store { return s.logs }

// Call sends reqs (command.EncodeRequests) to this group's forwarding layer
// on the node at addr (its peer address) and returns the encoded replies:
// the leader's path for a forwarded batch, which a Node also uses to ask a
// member for its status.
func (s *Store) Call(ctx context.Context, addr string, reqs []byte) ([]byte, error) {
	return s.fwd.Call(ctx, addr, reqs)
}

// Replicas is what WAIT answers: the number of other voters that are guaranteed
// to hold every acknowledged write (a majority less this node).
func (s *Store) Replicas() int {
	return voters(s.raft) / 2 // a majority, less this node
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
		{"raft_snapshots_by_bytes", strconv.FormatInt(s.metrics.snapshotsByBytes.Load(), 10)}, // a Node's groups share their metrics: every group's
		{"raft_silent_leader_checks", strconv.FormatInt(s.metrics.contactPokes.Load(), 10)},
	}
}

// KeyspaceInfo is INFO's db0 line ("keys=N,expires=M,avg_ttl=0"), "" when empty.
func (s *Store) KeyspaceInfo() string {
	keys, expires := s.Counts()
	if keys == 0 {
		return ""
	}
	return "keys=" + strconv.Itoa(keys) + ",expires=" + strconv.Itoa(expires) + ",avg_ttl=0"
}

// Counts is the number of live keys and of keys with a TTL.
func (s *Store) Counts() (keys, expires int) {
	now, _ := s.clock.read()
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.ks.Counts(max(now, s.m.ks.Now()))
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
// closeSnapshotMin is how many entries applied since the last snapshot make a
// clean stop take one.
const closeSnapshotMin = 1024

// snapshotOnClose takes a snapshot when many entries were applied since the
// last one, so that the next start restores it instead of replaying the log
// (a restart with a million locks: 12.5 s from the log, 5.2 s from a
// snapshot). Failures only cost that time later.
func (s *Store) snapshotOnClose() {
	st := s.raft.Stats()
	applied, _ := strconv.ParseUint(st["applied_index"], 10, 64)
	last, _ := strconv.ParseUint(st["last_snapshot_index"], 10, 64)
	if applied < last+closeSnapshotMin {
		return
	}
	start := time.Now()
	if err := s.raft.Snapshot().Error(); err != nil {
		s.log.Warn("snapshot at shutdown failed", "err", err)
		return
	}
	s.log.Info("snapshot at shutdown", "applied_index", applied, "took", time.Since(start).Round(time.Millisecond))
}

func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		// A leader hands over first, so that the cluster does not wait out an
		// election timeout.
		if s.raft != nil && !s.noHandover && s.raft.State() == raft.Leader && len(s.Configuration()) > 1 {
			if err := s.raft.LeadershipTransfer().Error(); err != nil {
				s.log.Warn("leadership transfer before shutdown failed", "err", err)
			} else {
				// Stay up (bounded) until the new leader is elected: it may need
				// this node's vote.
				self := s.addr
				for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					if addr, _ := s.raft.LeaderWithID(); addr != "" && addr != self {
						break
					}
				}
			}
		}
		if s.raft != nil && !s.noHandover {
			s.snapshotOnClose()
		}
		close(s.closed)
		s.replies.close()
		if s.raft != nil {
			err = s.raft.Shutdown().Error()
		}
		s.wg.Wait()
		if s.trans != nil {
			s.trans.Close()
		}
		if s.ownPeer {
			s.peer.Close()
		} else {
			s.fwdLayer.Close()
		}
		if s.fwd != nil {
			s.fwd.Close()
		}
		if s.engine == nil { // on the engine, the log is the engine's
			if cerr := s.logs.Close(); err == nil {
				err = cerr
			}
		}
	})
	return err
}
