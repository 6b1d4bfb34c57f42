// Package server assembles one lockd process: the replicated store, the RESP front
// door and the HTTP door. cmd/lockd and in-process tests both use it, so tests
// never re-implement main.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/httpapi"
	"github.com/lockd/lockd/raftstore"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/redisproto"
	"github.com/lockd/lockd/tlsconf"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// Version is lockd's version, reported in INFO.
var Version = "0.1.0-dev"

// Config configures one process. Addresses may use port 0 to pick a free port.
type Config struct {
	NodeID   string // default "node1"
	RESPAddr string // default "127.0.0.1:6379"
	PeerAddr string // default "127.0.0.1:7379"
	HTTPAddr string // "" = no HTTP door
	// HTTPMaxConns bounds the HTTP door's open connections (0:
	// httpapi.DefaultMaxConns), and never more than half the process's
	// descriptor limit (descriptorBudget); HTTPIdleTimeout closes its idle
	// keep-alive connections (0: httpapi.DefaultIdleTimeout).
	HTTPMaxConns    int
	HTTPIdleTimeout time.Duration
	// IdleTimeout closes a RESP client idle this long (Redis's timeout; 0:
	// never). AuthTimeout closes a RESP client that has not authenticated
	// this long after it connected, while authentication is required (0:
	// DefaultAuthTimeout; negative: never). AuthFailDelay slows password
	// guessing down (redisproto.Config.AuthFailDelay; 0:
	// DefaultAuthFailDelay; negative: no slow-down).
	IdleTimeout   time.Duration
	AuthTimeout   time.Duration
	AuthFailDelay time.Duration
	// Pprof serves Go's runtime profiles (net/http/pprof) under /debug/pprof/
	// on the HTTP door, without authentication: for profiling benchmarks.
	Pprof bool
	// Collectors are served on /metrics beside the server's own (cmd/lockd's
	// -raft-metrics: hashicorp/raft's timers). Their names must not collide
	// with the server's.
	Collectors []prometheus.Collector
	// Peers are the voters of a new cluster, this node included ("" = a
	// single-node cluster); see raftstore.Config.Peers.
	Peers []raftstore.Peer
	// Join, when set, is a member's RESP address: this node starts without a
	// cluster and asks that member (RAFT ADD) to add it.
	Join    string
	DataDir string // required
	// Redirect answers -MOVED on every RESP connection (redisproto.Config).
	Redirect bool
	// EventLoop chooses how the RESP port serves connections: "auto" (or
	// ""): with the event loop (redisproto.Server.EnableEventLoop) where there
	// is one (Linux, a plain-TCP port), a goroutine per connection elsewhere;
	// "on": the loop or an error (TLS, not Linux); "off": a goroutine per
	// connection. With several groups a turn's batch spans them; a turn that
	// one group stalls (an election) lets its connections go after the loop's
	// stall bound (50 ms) and answers each as soon as its own requests are
	// done (redisproto.PartStore).
	EventLoop string
	// Groups is the number of Raft groups of a new data directory; an existing
	// directory keeps its count. 0 chooses: one group per node for a new
	// cluster of several nodes (Peers), which then grows as nodes join
	// (raftstore.Config.AutoGroups); the member's count (and whether it
	// grows) when joining; one group for a single node (one disk: more
	// groups only add fsyncs).
	Groups int
	// Replicas is the voters each Raft group gets in a new data directory
	// (-replicas; 0: placement.DefaultReplicas of the node count, which
	// grows with the cluster); the member's when joining. Zone is this
	// node's failure domain (-zone): no two voters of a group in one zone
	// while zones remain (docs/clusters.md).
	Replicas int
	Zone     string
	// Engine runs a new data directory's Raft groups on the node-wide
	// engine (-engine; raftstore.Config.Engine): every node of the cluster
	// is created with it, with -peers (no -join yet) and a fixed -groups.
	Engine bool
	// HomeZones gives hash tags a home zone (-home-zones; see
	// raftstore.Config.HomeZones).
	HomeZones map[string]string
	Logger    *slog.Logger
	// RaftLogOutput receives hashicorp/raft's own log lines as they are; nil
	// routes them into Logger (warnings and errors; all with RaftLogs).
	RaftLogOutput io.Writer
	RaftLogs      bool
	// EnableMonitor allows the MONITOR command (an admin tool: it shows every
	// key and value).
	EnableMonitor bool
	// AdvertiseAddr is the peer address other nodes are told (a DNS name is
	// allowed); "" means PeerAddr as bound.
	AdvertiseAddr string
	Limits        redisproto.Limits
	// RequirePass is the default user's password ("": nopass, as Redis without
	// requirepass); it is also the password this node joins a cluster with.
	// MaxClients and MaxOutputBuffer are redisproto.Config's (0: defaults).
	RequirePass     string
	MaxClients      int
	MaxOutputBuffer int64
	// MaxWriteBytes is raftstore.Config's (0: its default, 4 MiB).
	MaxWriteBytes int
	// MaxSessionsPerUser is raftstore.Config's (0: its default, 10000;
	// negative: no cap).
	MaxSessionsPerUser int64
	// NoBatchEntries is raftstore.Config's: every write in an entry of its
	// own (for a rolling upgrade from a lockd from before batch entries).
	NoBatchEntries bool
	// StrictNX is raftstore.Config's: SET … NX on a key holding the same
	// value answers nil, as Redis does (default: a grant to that owner).
	StrictNX bool
	// MasterUser and MasterAuth are raftstore.Config's: the credentials for
	// the Redis master REPLICAOF follows (CONFIG SET changes them).
	MasterUser, MasterAuth string
	// ReplicaStopOnUnsupported and MasterTLS are raftstore.Config's.
	ReplicaStopOnUnsupported bool
	MasterTLS                *tls.Config
	// SnapshotThreshold, SnapshotInterval and TrailingLogs tune Raft
	// snapshots (0: the store's defaults, 8192 entries, 10 s and 10240
	// entries).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// LogBytes bounds the node's Raft logs in bytes as well, about
	// (raftstore.Config.LogBytes; 0: raftstore.DefaultLogBytes).
	LogBytes uint64
	// ReadyTimeout bounds how long New waits for this node to lead (default 30s).
	ReadyTimeout time.Duration

	// Fault-injection hooks, set only by cmd/lockd's hidden fault flags for the
	// test/ fault suite (a binary built with -tags faults; the default build
	// never sets them): StoreHook adjusts the store's configuration before it
	// opens, HTTPHook wraps the HTTP handler (nil: none).
	StoreHook func(*raftstore.Config)
	HTTPHook  func(http.Handler) http.Handler

	// TLS names the certificate files (none: plain TCP everywhere). With a
	// certificate the RESP and HTTP ports speak TLS only; with a CA bundle
	// the peer port uses mutual TLS too, and -join dials the member over TLS.
	// The pair is re-read by ReloadTLS and when the files change (checked
	// every TLSWatchInterval, default DefaultTLSWatchInterval).
	TLS              tlsconf.Options
	TLSWatchInterval time.Duration
	// ClusterSecret, when set (at least 16 bytes), authenticates every peer
	// connection, inbound and outbound, with an HMAC challenge-response
	// (mux.Secret): nodes without it cannot reach the peer port. With
	// ClusterSecretOptional peers that do not authenticate are still
	// accepted: the first step of turning it on (docs/operations.md).
	ClusterSecret         string
	ClusterSecretOptional bool
}

// Defaults of Config's client bounds.
const (
	DefaultAuthTimeout   = 10 * time.Second
	DefaultAuthFailDelay = 100 * time.Millisecond
)

// orDefault is d, def when d is 0, and 0 (off) when d is negative.
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// advertised is the RESP address other nodes and cluster-aware clients are
// given: the bound address, with an unspecified host (0.0.0.0, ::) replaced by
// the peer address's host.
func advertised(respAddr, peerAddr string) string {
	host, port, err := net.SplitHostPort(respAddr)
	if err != nil {
		return respAddr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if ph, _, err := net.SplitHostPort(peerAddr); err == nil && ph != "" {
			if pip := net.ParseIP(ph); pip == nil || !pip.IsUnspecified() {
				host = ph
			}
		}
	}
	return net.JoinHostPort(host, port)
}

// Server is a running lockd process.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *raftstore.Node
	resp  *redisproto.Server
	http  *http.Server
	hln   net.Listener
	done  chan error
	cmds  *commandMetrics

	tls       *tlsSetup // nil without TLS
	stopWatch context.CancelFunc
}

// New opens the store, binds every port and starts serving. It returns once this
// node leads and serves (a single node elects itself at once).
func New(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("server: a data directory is required")
	}
	switch cfg.EventLoop { // checked before any port or file is touched
	case "", "auto", "on", "off":
	default:
		return nil, fmt.Errorf("-event-loop %q: want auto, on or off", cfg.EventLoop)
	}
	if cfg.RESPAddr == "" {
		cfg.RESPAddr = "127.0.0.1:6379"
	}
	if cfg.PeerAddr == "" {
		cfg.PeerAddr = "127.0.0.1:7379"
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: lg, done: make(chan error, 2), cmds: newCommandMetrics()}
	secret, err := peerSecret(cfg)
	if err != nil {
		return nil, err
	}
	ts, err := s.loadTLS()
	if err != nil {
		return nil, err
	}
	s.tls = ts
	s.warnOpenPeerPort(secret)
	var respTLS *tls.Config
	if ts != nil {
		respTLS = ts.client
	}

	// Bind the client-facing ports first: a port in use is reported before any
	// data is touched.
	httpConns, maxClients := s.descriptorBudget()
	rs, err := redisproto.Listen(redisproto.Config{Addr: cfg.RESPAddr, Limits: cfg.Limits, Logger: lg, Version: Version,
		RequirePass: cfg.RequirePass, MaxClients: maxClients, MaxOutputBuffer: cfg.MaxOutputBuffer, ObserveCommand: s.cmds.observe, EnableMonitor: cfg.EnableMonitor, TLS: respTLS, Redirect: cfg.Redirect,
		MaxValueBytes: int64(cfg.MaxWriteBytes), IdleTimeout: cfg.IdleTimeout, AuthTimeout: orDefault(cfg.AuthTimeout, DefaultAuthTimeout),
		AuthFailDelay: orDefault(cfg.AuthFailDelay, DefaultAuthFailDelay)}, nil)
	if err != nil {
		return nil, err
	}
	if cfg.HTTPAddr != "" {
		s.hln, err = net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("HTTP port %s: %w", cfg.HTTPAddr, err)
		}
		s.hln = httpapi.LimitListener(s.hln, httpConns)
		if respTLS != nil {
			s.hln = tls.NewListener(s.hln, respTLS)
		}
	}
	gc, err := chooseGroups(cfg, ts)
	if err != nil {
		rs.Close()
		if s.hln != nil {
			s.hln.Close()
		}
		return nil, err
	}
	scfg := raftstore.Config{NodeID: cfg.NodeID, DataDir: cfg.DataDir, PeerAddr: cfg.PeerAddr, AdvertiseAddr: cfg.AdvertiseAddr,
		ClientAddr: advertised(rs.Addr(), cmp.Or(cfg.AdvertiseAddr, cfg.PeerAddr)),
		Logger:     lg, RaftLogOutput: cfg.RaftLogOutput, RaftLogs: cfg.RaftLogs, Publish: rs.Publish, WantEvents: rs.WantsEvents, Peers: cfg.Peers, Join: cfg.Join != "",
		SnapshotThreshold: cfg.SnapshotThreshold, SnapshotInterval: cfg.SnapshotInterval, TrailingLogs: cfg.TrailingLogs, Groups: gc.groups,
		AutoGroups: gc.auto, Replicas: gc.replicas, Engine: cfg.Engine || gc.engine, Zone: cfg.Zone, HomeZones: cfg.HomeZones, GroupsCreated: gc.created,
		MaxWriteBytes: cfg.MaxWriteBytes, LogBytes: cfg.LogBytes, NoBatchEntries: cfg.NoBatchEntries,
		MaxSessionsPerUser: cfg.MaxSessionsPerUser, StrictNX: cfg.StrictNX,
		MasterUser: cfg.MasterUser, MasterAuth: cfg.MasterAuth, ReplicaStopOnUnsupported: cfg.ReplicaStopOnUnsupported, MasterTLS: cfg.MasterTLS}
	scfg.PeerSecret = secret
	if ts != nil {
		scfg.PeerTLS, scfg.PeerTLSMembers = ts.peer, ts.membersOnly
		if ts.membersOnly && cfg.Join != "" && !raftstore.HasData(cfg.DataDir) {
			// A joining node lets in the members the member names until
			// it has a configuration of its own (raftstore/peerauth.go).
			ctx, cancel := context.WithTimeout(context.Background(), cfg.ReadyTimeout)
			scfg.JoinMembers, err = memberPeerAddrs(ctx, cfg.Join, cfg.RequirePass, ts.join)
			cancel()
			if err != nil {
				rs.Close()
				if s.hln != nil {
					s.hln.Close()
				}
				return nil, fmt.Errorf("asking %s for its members: %w", cfg.Join, err)
			}
		}
	}
	if cfg.StoreHook != nil { // fault tests only
		cfg.StoreHook(&scfg)
	}
	st, err := raftstore.OpenNode(scfg)
	if err != nil {
		rs.Close()
		if s.hln != nil {
			s.hln.Close()
		}
		return nil, err
	}
	s.store = st
	rs.SetStore(st)
	if err := chooseEventLoop(rs, cfg.EventLoop); err != nil {
		rs.Close()
		st.Close()
		if s.hln != nil {
			s.hln.Close()
		}
		return nil, err
	}
	s.resp = rs
	s.watchTLS()
	// Serve at once: PING, HEALTH and /readyz (503) answer while the node is still
	// electing itself; keyspace commands wait for it (bounded by the store).
	go func() { s.done <- rs.Serve() }()
	if s.hln != nil {
		metrics := promhttp.HandlerFor(s.newMetrics(), promhttp.HandlerOpts{})
		// The HTTP door accepts the RESP door's users.
		h := httpapi.HandlerWithAuth(st, metrics, rs)
		if cfg.HTTPHook != nil { // fault tests only
			// What the hook mounts (the fault endpoint) needs an admin's
			// credentials when authentication is on.
			h = httpapi.RequireAdmin("/debug/faults", cfg.HTTPHook(h), rs)
		}
		if cfg.Pprof {
			h = withPprof(h, os.Args)
		}
		s.http = httpapi.NewServer(h, cfg.HTTPIdleTimeout)
		s.http.ErrorLog = slog.NewLogLogger(lg.Handler(), slog.LevelWarn) // accept retries, TLS handshakes
		go func() {
			if err := s.http.Serve(s.hln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.done <- err
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ReadyTimeout)
	defer cancel()
	if cfg.Join != "" {
		var joinTLS *tls.Config
		if ts != nil {
			joinTLS = ts.join
		}
		// The TLS member check cannot be probed: this node is no member yet.
		if secret != nil && (ts == nil || !ts.membersOnly) {
			var peerTLS *mux.TLS
			if ts != nil {
				peerTLS = ts.peer
			}
			if err := checkClusterSecret(ctx, cfg.Join, cfg.RequirePass, joinTLS, peerTLS, secret); err != nil {
				s.Close()
				return nil, fmt.Errorf("joining through %s: %w", cfg.Join, err)
			}
		}
		if err := join(ctx, cfg.Join, cfg.RequirePass, cfg.NodeID, st.PeerAddr(), joinTLS); err != nil {
			s.Close()
			return nil, fmt.Errorf("joining through %s: %w", cfg.Join, err)
		}
	}
	if err := st.WaitServing(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("waiting for a leader: %w", err)
	}
	lg.Info("lockd serving", "resp", rs.Addr(), "peer", st.PeerAddr(), "http", cfg.HTTPAddr, "data_dir", cfg.DataDir)
	return s, nil
}

// chooseEventLoop enables rs's event loop as mode (Config.EventLoop, checked
// by New) says.
func chooseEventLoop(rs *redisproto.Server, mode string) error {
	switch mode {
	case "on":
		return rs.EnableEventLoop()
	case "off":
		return nil
	}
	if err := rs.EnableEventLoop(); err != nil && !errors.Is(err, redisproto.ErrNoEventLoop) { // auto
		return err
	}
	return nil
}

// groupChoice is what a new data directory is created with: its group
// count, replication factor (0: follows the node count), the count the
// cluster was created with when it grew since (0: not said), and whether the
// count follows the node count (auto).
type groupChoice struct {
	groups, replicas, created int
	auto                      bool
	engine                    bool // the member runs its groups on the engine (INFO raft_engine)
}

// chooseGroups decides the group count and replication factor of a new
// data directory (see Config.Groups and Config.Replicas); an existing
// directory keeps its own and these are ignored. A node joining a cluster
// takes the member's (INFO raft_groups, raft_replicas, raft_groups_auto, raft_engine),
// and a -groups or -replicas that differs from it is refused.
func chooseGroups(cfg Config, ts *tlsSetup) (groupChoice, error) {
	if raftstore.HasData(cfg.DataDir) {
		return groupChoice{groups: cfg.Groups, replicas: cfg.Replicas}, nil
	}
	switch {
	case cfg.Join != "":
		var tc *tls.Config
		if ts != nil {
			tc = ts.join
		}
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ReadyTimeout)
		defer cancel()
		m, err := memberGroups(ctx, cfg.Join, cfg.RequirePass, tc)
		if err != nil {
			return groupChoice{}, fmt.Errorf("asking %s for its group count: %w", cfg.Join, err)
		}
		if cfg.Groups != 0 && cfg.Groups != m.groups {
			return groupChoice{}, fmt.Errorf("%w: the cluster at %s has %d groups, -groups says %d", raftstore.ErrGroups, cfg.Join, m.groups, cfg.Groups)
		}
		if cfg.Replicas != 0 && cfg.Replicas != m.replicas {
			return groupChoice{}, fmt.Errorf("%w: the cluster at %s has -replicas %d, this node says %d", raftstore.ErrReplicas, cfg.Join, m.replicas, cfg.Replicas)
		}
		return m, nil
	case cfg.Groups != 0:
		return groupChoice{groups: cfg.Groups, replicas: cfg.Replicas}, nil
	case len(cfg.Peers) > 1:
		return groupChoice{groups: min(len(cfg.Peers), raftstore.MaxGroups), replicas: cfg.Replicas, auto: true}, nil
	}
	return groupChoice{groups: 1, replicas: cfg.Replicas}, nil
}

// memberGroups reads a member's group count, replication factor (0: it
// follows the node count), the group count the cluster was created with
// (0: not said) and whether its count follows the node count from its INFO
// raft section, retrying (bounded by ctx) while it does not answer.
func memberGroups(ctx context.Context, member, password string, tc *tls.Config) (groupChoice, error) {
	c := redis.NewClient(&redis.Options{Addr: member, Password: password, MaxRetries: -1, TLSConfig: joinTLS(tc, member)})
	defer c.Close()
	for {
		info, err := c.Info(ctx, "raft").Result()
		if err == nil {
			m := groupChoice{groups: 1} // a member from before sharding
			for _, line := range strings.Split(info, "\r\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					continue
				}
				var dst *int
				switch k {
				case "raft_groups":
					dst = &m.groups
				case "raft_replicas":
					dst = &m.replicas
				case "raft_groups_created":
					dst = &m.created
				case "raft_groups_auto":
					m.auto = v == "1"
					continue
				case "raft_engine":
					m.engine = v == "1"
					continue
				default:
					continue
				}
				if *dst, err = strconv.Atoi(v); err != nil {
					return groupChoice{}, fmt.Errorf("INFO raft %s: %w", k, err)
				}
			}
			return m, nil
		}
		select {
		case <-ctx.Done():
			return groupChoice{}, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// joinTLS is tc with the member's host as the server name when tc has none.
func joinTLS(tc *tls.Config, member string) *tls.Config {
	if tc != nil && tc.ServerName == "" {
		if host, _, err := net.SplitHostPort(member); err == nil {
			tc = tc.Clone()
			tc.ServerName = host
		}
	}
	return tc
}

// join asks a member (by its RESP address, over TLS when tc is set) to add
// this node, retrying while the member has no leader.
func join(ctx context.Context, member, password, id, peerAddr string, tc *tls.Config) error {
	c := redis.NewClient(&redis.Options{Addr: member, Password: password, MaxRetries: -1, TLSConfig: joinTLS(tc, member)})
	defer c.Close()
	for {
		err := c.Do(ctx, "RAFT", "ADD", id, peerAddr).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// RESPAddr is the bound RESP address.
func (s *Server) RESPAddr() string { return s.resp.Addr() }

// HTTPAddr is the bound HTTP address, or "".
func (s *Server) HTTPAddr() string {
	if s.hln == nil {
		return ""
	}
	return s.hln.Addr().String()
}

// Store is the replicated store: this node's groups and router (for tests
// and tools in this module).
func (s *Server) Store() *raftstore.Node { return s.store }

// Done delivers a serving error (a listener failed); nil is never sent.
func (s *Server) Done() <-chan error { return s.done }

// drainTimeout bounds how long Close waits for requests already read to be
// answered (a write waits at most the store's apply timeout, 10 s).
const drainTimeout = 11 * time.Second

// Close stops serving: it stops reading requests, answers the ones already read,
// closes the connections, then closes the store (a leader hands over first).
func (s *Server) Close() error {
	var errs []error
	if s.stopWatch != nil {
		s.stopWatch()
	}
	if s.resp != nil {
		// Drain first, with the store still up: requests already read are
		// answered before their connections close. Then the store hands
		// leadership over and stops.
		errs = append(errs, s.resp.Shutdown(drainTimeout))
	}
	if s.http != nil {
		errs = append(errs, s.http.Close())
	} else if s.hln != nil {
		errs = append(errs, s.hln.Close())
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	return errors.Join(errs...)
}
