// Command lockd runs one lockd node: a lock server that speaks the Redis protocol
// and commits every write through Raft. With no flags it is a complete
// single-node cluster with its data in ./lockd-data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/lockd/lockd/internal/timerslack"
	"github.com/lockd/lockd/memtrim"
	"github.com/lockd/lockd/raftstore"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/tlsconf"
)

// parseHomeZones reads "{tag}=zone,{tag}=zone" ("" none): each key must be
// a hash tag, braces included, so that it names one slot.
func parseHomeZones(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		tag, zone, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || len(tag) < 3 || tag[0] != '{' || tag[len(tag)-1] != '}' || strings.ContainsAny(tag[1:len(tag)-1], "{}") || zone == "" {
			return nil, fmt.Errorf("%q: want {tag}=zone", part)
		}
		out[tag] = zone
	}
	return out, nil
}

// parsePeers reads "id=addr,id=addr".
func parsePeers(s string) ([]raftstore.Peer, error) {
	var out []raftstore.Peer
	for _, item := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("%q is not id=peer-addr", item)
		}
		out = append(out, raftstore.Peer{ID: id, Addr: addr})
	}
	return out, nil
}

// shutdownTimeout bounds a clean shutdown.
const shutdownTimeout = 20 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// options are lockd's flags (the configuration reference, docs/configuration.md,
// is generated from them: TestConfigurationReference).
type options struct {
	respAddr *string
	peerAddr *string
	advAddr  *string
	httpAddr *string
	dataDir  *string
	nodeID   *string
	peers    *string
	groups   *int
	engine   *bool
	replicas *int
	zone     *string
	homes    *string
	evLoop   *string
	redirect *bool
	joinAddr *string
	snapN    *uint64
	snapIvl  *time.Duration
	trailing *uint64
	maxBulk  *int64
	maxArgs  *int64
	maxQuery *int64
	logBytes *uint64
	maxWrite *int
	maxSess  *int64
	strictNX *bool
	mUser    *string
	mAuth    *string
	mTLS     *bool
	mTLSCA   *string
	rUnsup   *string
	batchOn  *bool
	reqPass  *string
	maxConns *int
	idleSecs *int
	authTO   *time.Duration
	authFail *time.Duration
	httpConn *int
	maxOut   *int64
	logLevel *string
	raftLogs *bool
	logFmt   *string
	monitor  *bool
	tlsCert  *string
	tlsKey   *string
	tlsCA    *string
	tlsCAuth *bool
	peerCA   *string
	clSecret *string
	clMode   *string
	raftMet  *bool
	slack    *time.Duration
	pprofOn  *bool
	confFile *string
}

// newFlagSet defines every flag lockd accepts on a new FlagSet whose usage
// text goes to stderr. The hidden fault flags are not among them
// (registerFaultFlags).
func newFlagSet(stderr io.Writer) (*flag.FlagSet, *options) {
	fs := flag.NewFlagSet("lockd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: lockd [flags]       run a node (with no flags: a single-node cluster in ./lockd-data)\n"+
			"       lockd status [-addr host:port]   the cluster at a glance\n"+
			"       lockd version\n\n"+
			"Every flag can also be set as LOCKD_<FLAG> in the environment (e.g. LOCKD_DATA_DIR) or as\n"+
			"\"flag = value\" in the -config file; the command line wins, then the environment, then the file.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	o := &options{
		respAddr: fs.String("addr", "127.0.0.1:6379", "RESP (Redis protocol) listen address"),
		peerAddr: fs.String("peer-addr", "127.0.0.1:7379", "peer (Raft) listen address"),
		advAddr:  fs.String("advertise-addr", "", "peer address the other nodes dial and -peers names for this node, e.g. a DNS name on Kubernetes (empty: -peer-addr)"),
		httpAddr: fs.String("http-addr", "127.0.0.1:8379", "HTTP listen address (health, readiness); empty disables it"),
		dataDir:  fs.String("data-dir", "lockd-data", "directory for the Raft log and snapshots"),
		nodeID:   fs.String("node-id", "node1", "this node's ID in the Raft configuration"),
		peers:    fs.String("peers", "", "voters of a new cluster, this node included: id=peer-addr,id=peer-addr,... (empty: a single-node cluster)"),
		groups:   fs.Int("groups", 0, "Raft groups of a new data directory (1 to 63): the slots are split evenly over them and their leaders spread over the nodes; set when the directory is created, the same on every node (RAFT ADDGROUPS adds more to a running cluster). 0: one per node for a new cluster started with -peers, growing by RAFT ADDGROUPS as nodes join (never shrinking), the member's count (and growth) with -join, 1 for a single node"),
		engine:   fs.Bool("engine", false, "EXPERIMENTAL (docs/clusters.md): run a new cluster's Raft groups on the node-wide engine (one driver, one fsync and one connection per peer for all of a node's groups: docs/clusters.md) instead of a hashicorp/raft instance each: set when the data directory is created, on every node of a cluster started with -peers (a node that joins takes the member's). The group count is fixed on it (-groups 0: one per node, not growing; RAFT ADDGROUPS is refused). An existing directory keeps what it was created with"),
		replicas: fs.Int("replicas", 0, "voters of each Raft group of a new cluster (1 to 7): with fewer than the nodes, each group lives on that many of them, spread evenly over nodes and -zone zones, and a node that joins or leaves has replicas moved (docs/clusters.md); fixed when the directory is created, the same on every node. 0: follow the node count (every node of 1 or 2, 3 of 3 or 4 nodes, 5 from 5 nodes)"),
		zone:     fs.String("zone", "", "this node's failure domain (a rack, a zone, a region): a group's voters go to different zones while zones remain"),
		homes:    fs.String("home-zones", "", "home zones of hash tags: {tag}=zone,...: the group holding the tag's slot keeps a voter in that zone and is led from there (names like {payments}:… then take no cross-zone hop for grants in that zone); group 0's leader applies it: give every node the same"),
		evLoop:   fs.String("event-loop", "auto", "how the RESP port serves connections: auto (an epoll event loop that batches every ready client's keyspace commands into one Raft proposal per group, on Linux and plain TCP; a goroutine per connection otherwise), on (the loop, or refuse to start), off (a goroutine per connection)"),
		redirect: fs.Bool("cluster-redirect", false, "answer -MOVED to every client for a key whose group another node leads (only when every client is cluster-aware; without it only connections that asked CLUSTER SLOTS/SHARDS/NODES, READONLY, READWRITE or ASKING are redirected)"),
		joinAddr: fs.String("join", "", "RESP address of a member of a running cluster to join (it runs RAFT ADD for this node)"),
		snapN:    fs.Uint64("snapshot-threshold", 8192, "log entries between Raft snapshots"),
		snapIvl:  fs.Duration("snapshot-interval", 10*time.Second, "how often each Raft group checks for -snapshot-threshold new entries (it snapshots within one to two intervals of reaching it)"),
		trailing: fs.Uint64("trailing-logs", 10240, "log entries kept after a snapshot for lagging followers (a follower further behind installs the snapshot)"),
		maxBulk:  fs.Int64("proto-max-bulk-len", 512<<20, "largest bulk string a request may carry, in bytes"),
		maxArgs:  fs.Int64("max-args", 1<<20, "most arguments one request may carry (Redis allows 2147483647)"),
		maxQuery: fs.Int64("client-query-buffer-limit", 1<<30, "bytes of one request buffered while it is read; a client past it is disconnected, as by Redis"),
		logBytes: fs.Uint64("log-bytes", raftstore.DefaultLogBytes, "bytes of Raft log a node keeps, about, over all its groups: each group snapshots once the entries since its last snapshot pass its share's half (or the last snapshot's size, if larger) and keeps only its share's half after one (at most -trailing-logs entries); with small entries -snapshot-threshold and -trailing-logs decide first"),
		maxWrite: fs.Int("max-write-bytes", raftstore.DefaultMaxWriteBytes, "largest write, in bytes of its Raft log entry (about the request's size): a larger one is answered -ERR write too large for the log; above 64 MiB, the log's limit, counts as 64 MiB (writes of 16 MiB and more cost elections in a test cluster)"),
		maxSess:  fs.Int64("max-sessions-per-user", raftstore.DefaultMaxSessionsPerUser, "most sessions one user may have open; SESSION.OPEN past it is answered -ERR max sessions per user reached (a user allowed every key and every admin command is not capped); 0: no cap. The groups' leaders replicate their value: give every node the same"),
		strictNX: fs.Bool("strict-nx", false, "answer SET … NX (and SETNX) on a key that already holds exactly the value being set with nil, as Redis does; by default that is a grant to the same owner (new expiry, same fencing token), so that a Redlock client over several nodes of one cluster reaches its quorum and a retried SET … NX whose reply was lost succeeds (docs/compatibility.md). The groups' leaders replicate their choice: give every node the same"),
		mUser:    fs.String("masteruser", "", "user to authenticate as to the Redis master that REPLICAOF follows (Redis's masteruser; CONFIG SET masteruser changes it)"),
		mAuth:    fs.String("masterauth", "", "password for the Redis master that REPLICAOF follows (Redis's masterauth; CONFIG SET masterauth changes it). Give it as LOCKD_MASTERAUTH or in -config, not on the command line (ps shows that)"),
		mTLS:     fs.Bool("master-tls", false, "connect to the Redis master that REPLICAOF follows over TLS (Redis's tls-replication), verified against -master-tls-ca (or the system's roots), presenting -tls-cert if set"),
		mTLSCA:   fs.String("master-tls-ca", "", "PEM CA bundle that signed the Redis master's certificate, for -master-tls"),
		rUnsup:   fs.String("replica-unsupported", "count", "what the link to a Redis master (REPLICAOF) does with a value or command lockd cannot import (a set, a stream, another database, a command lockd lacks or cannot split across groups): count (name and count it in INFO replication, go on) or stop (the link stops there, INFO names it); CONFIG SET lockd-replica-unsupported changes it"),
		batchOn:  fs.Bool("batch-entries", true, "as leader, put a run of writes that arrive together into one Raft entry (each keeps a token of its own), once every other member of the group has said it applies them (a lockd from before batch entries cannot, and says nothing: a rolling upgrade needs no setting); false writes one entry per write, which rolling back to such a version needs (docs/operations.md)"),
		reqPass:  fs.String("requirepass", "", "password of the default user (empty: no authentication, as Redis); also used to -join (env LOCKD_REQUIREPASS)"),
		maxConns: fs.Int("maxclients", 10000, "most connected RESP clients; one more is refused with -ERR max number of clients reached"),
		maxOut:   fs.Int64("client-output-buffer-limit", 64<<20, "bytes of replies and messages produced for a client and not yet written to it: a client whose replies would pass it is disconnected before they are built, and a pipeline of large reads is answered in batches that fit it"),
		idleSecs: fs.Int("timeout", 0, "close a RESP client idle for this many seconds, as Redis's timeout (subscribers, MONITOR and blocked clients are not idle); 0: never"),
		authTO:   fs.Duration("auth-timeout", 10*time.Second, "with authentication on, close a RESP client that has not authenticated this long after it connected; 0: never"),
		authFail: fs.Duration("auth-fail-delay", 100*time.Millisecond, "after 10 failed AUTH / HTTP credentials from one address within a minute, answer that address's further attempts at most one per this interval (the password is checked only in its turn); 0: no slow-down (failures are still counted and logged)"),
		httpConn: fs.Int("http-max-conns", 1024, "most connections the HTTP port holds open at once (more wait to be accepted); never more than half the open-file limit"),
		logLevel: fs.String("log-level", "info", "log level: debug, info, warn, error"),
		raftLogs: fs.Bool("raft-logs", false, "also log hashicorp/raft's informational lines (its warnings and errors are always logged)"),
		logFmt:   fs.String("log-format", "text", "log format: text or json (log/slog)"),
		monitor:  fs.Bool("enable-monitor", false, "allow MONITOR (shows every command, keys and values, to any client that asks)"),
		tlsCert:  fs.String("tls-cert", "", "PEM certificate of this node: the RESP and HTTP ports then speak TLS only; with -tls-ca it is the peer certificate too (re-read on SIGHUP and when the file changes)"),
		tlsKey:   fs.String("tls-key", "", "PEM private key of -tls-cert"),
		tlsCA:    fs.String("tls-ca", "", "PEM CA bundle: the peer port uses mutual TLS, accepting only certificates it signed that name a member's peer host (-peer-tls-ca: a CA of the peer port's own); -tls-client-auth verifies clients with it"),
		tlsCAuth: fs.Bool("tls-client-auth", false, "require RESP and HTTP clients to present a certificate signed by -tls-ca"),
		peerCA:   fs.String("peer-tls-ca", "", "PEM CA bundle of the peer port alone: it signs the nodes' certificates (-tls-cert), the peer port and -join trust only it, and -tls-ca then only verifies clients. Without it the peer port trusts -tls-ca and accepts a certificate only if it names a member's peer host"),
		clSecret: fs.String("cluster-secret", "", "shared secret of the cluster's nodes (at least 16 bytes; openssl rand -hex 32): every peer connection opens with an HMAC challenge-response on it, and one without is refused. Give it as LOCKD_CLUSTER_SECRET or in -config, not on the command line (ps shows that)"),
		clMode:   fs.String("cluster-secret-mode", "require", "require: every peer connection must prove -cluster-secret; accept: peers that do not are accepted too (counted), for turning the secret on in a running cluster (docs/operations.md)"),
		raftMet:  fs.Bool("raft-metrics", false, "also serve hashicorp/raft's own timers and counters on /metrics (raft_commitTime, raft_replication_appendEntries_rpc, raft_rpc_appendEntries_storeLogs, raft_fsm_applyBatch, ...: where a write's time goes; in ms, all groups together; costs some CPU per write)"),
		slack:    fs.Duration("timer-slack", time.Millisecond, "how late the kernel may wake lockd's sleeping threads (Linux timer slack; the kernel's default is 50µs): fewer wake-ups of Go's scheduler monitor, much less CPU on VMs (docs/configuration.md). Timers, lock and session expiry included, fire up to this late, never early. 0: keep the slack lockd was started with. Applied by executing lockd again at start"),
		pprofOn:  fs.Bool("pprof", false, "serve Go's runtime profiles under /debug/pprof/ on -http-addr, without authentication (for profiling; keep the HTTP address private)"),
		confFile: fs.String("config", "", "a file of \"flag = value\" lines (see above)"),
	}
	return fs, o
}

func run(args []string, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			return runVersion(os.Stdout)
		case "status":
			return runStatus(args[1:], os.Stdout, stderr)
		}
	}
	fs, o := newFlagSet(stderr)
	faults := registerFaultFlags(fs) // hidden: fault tests only (faults.go)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lockd: unexpected argument %q (see lockd -help)\n", fs.Arg(0))
		return 2
	}
	if err := applyConfig(fs, *o.confFile, os.Getenv); err != nil {
		fmt.Fprintf(stderr, "lockd: %v\n", err)
		return 2
	}
	if *o.logBytes == 0 {
		fmt.Fprintf(stderr, "lockd: bad -log-bytes 0 (at least 1)\n")
		return 2
	}
	if *o.slack < 0 {
		fmt.Fprintf(stderr, "lockd: bad -timer-slack %v (0 or more)\n", *o.slack)
		return 2
	}
	if *o.maxWrite <= 0 {
		fmt.Fprintf(stderr, "lockd: bad -max-write-bytes %d (at least 1)\n", *o.maxWrite)
		return 2
	}
	if *o.maxSess < 0 {
		fmt.Fprintf(stderr, "lockd: bad -max-sessions-per-user %d (0: no cap, or at least 1)\n", *o.maxSess)
		return 2
	}
	if *o.rUnsup != "count" && *o.rUnsup != "stop" {
		fmt.Fprintf(stderr, "lockd: bad -replica-unsupported %q (count or stop)\n", *o.rUnsup)
		return 2
	}
	if *o.clMode != "require" && *o.clMode != "accept" {
		fmt.Fprintf(stderr, "lockd: bad -cluster-secret-mode %q (require or accept)\n", *o.clMode)
		return 2
	}
	if n := len(*o.clSecret); n > 0 && n < mux.MinSecretLen || n == 0 && *o.clMode == "accept" {
		fmt.Fprintf(stderr, "lockd: bad -cluster-secret: %d bytes, at least %d wanted (openssl rand -hex 32); -cluster-secret-mode accept needs one too\n", n, mux.MinSecretLen)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "lockd: bad -log-level %q\n", *o.logLevel)
		return 2
	}
	var handler slog.Handler
	switch *o.logFmt {
	case "text":
		handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	case "json":
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	default:
		fmt.Fprintf(stderr, "lockd: bad -log-format %q (text or json)\n", *o.logFmt)
		return 2
	}
	lg := slog.New(handler)
	// Before anything is opened: this executes lockd again (timerslack).
	if err := timerslack.Apply(*o.slack); err != nil {
		lg.Warn("timer slack not set; lockd runs with the one it was started with", "err", err)
	}
	abs, err := filepath.Abs(*o.dataDir)
	if err != nil {
		abs = *o.dataDir
	}
	cfg := server.Config{NodeID: *o.nodeID, RESPAddr: *o.respAddr, PeerAddr: *o.peerAddr, HTTPAddr: *o.httpAddr,
		DataDir: abs, Logger: lg}
	cfg.Limits.MaxBulkLen = *o.maxBulk
	cfg.Limits.MaxMultibulkLen = *o.maxArgs
	cfg.Limits.MaxQueryBuffer = *o.maxQuery
	cfg.MaxWriteBytes = *o.maxWrite
	cfg.MaxSessionsPerUser = *o.maxSess
	if *o.maxSess == 0 {
		cfg.MaxSessionsPerUser = -1 // no cap (the config's 0 is the default)
	}
	cfg.NoBatchEntries = !*o.batchOn
	cfg.StrictNX = *o.strictNX
	cfg.MasterUser, cfg.MasterAuth = *o.mUser, *o.mAuth
	cfg.ReplicaStopOnUnsupported = *o.rUnsup == "stop"
	if *o.mTLS {
		mt, err := tlsconf.DialConfig(*o.mTLSCA, *o.tlsCert, *o.tlsKey)
		if err != nil {
			fmt.Fprintf(stderr, "lockd: -master-tls: %v\n", err)
			return 2
		}
		cfg.MasterTLS = mt
	}
	cfg.LogBytes = *o.logBytes
	cfg.RequirePass, cfg.MaxClients, cfg.MaxOutputBuffer = *o.reqPass, *o.maxConns, *o.maxOut
	if *o.idleSecs < 0 || *o.authTO < 0 || *o.authFail < 0 || *o.httpConn < 1 {
		fmt.Fprintln(stderr, "lockd: -timeout, -auth-timeout and -auth-fail-delay must be 0 or more, -http-max-conns at least 1")
		return 2
	}
	cfg.IdleTimeout = time.Duration(*o.idleSecs) * time.Second
	cfg.AuthTimeout, cfg.AuthFailDelay = *o.authTO, *o.authFail
	if cfg.AuthTimeout == 0 {
		cfg.AuthTimeout = -1 // never (the config's 0 is the default)
	}
	if cfg.AuthFailDelay == 0 {
		cfg.AuthFailDelay = -1
	}
	cfg.HTTPMaxConns = *o.httpConn
	if cfg.RequirePass == "" {
		cfg.RequirePass = os.Getenv("LOCKD_REQUIREPASS") // keeps the password out of ps
	}
	cfg.SnapshotThreshold, cfg.TrailingLogs = *o.snapN, *o.trailing
	cfg.SnapshotInterval = *o.snapIvl
	cfg.AdvertiseAddr = *o.advAddr
	cfg.EnableMonitor = *o.monitor
	cfg.Join = *o.joinAddr
	cfg.Groups = *o.groups
	cfg.Engine = *o.engine
	cfg.Replicas, cfg.Zone = *o.replicas, *o.zone
	homes, herr := parseHomeZones(*o.homes)
	if herr != nil {
		fmt.Fprintf(stderr, "lockd: -home-zones: %v\n", herr)
		return 2
	}
	cfg.HomeZones = homes
	cfg.Redirect = *o.redirect
	cfg.EventLoop = *o.evLoop
	cfg.Pprof = *o.pprofOn
	if *o.raftMet {
		c, err := raftMetrics()
		if err != nil {
			fmt.Fprintf(stderr, "lockd: -raft-metrics: %v\n", err)
			return 1
		}
		cfg.Collectors = append(cfg.Collectors, c)
	}
	cfg.TLS = tlsconf.Options{CertFile: *o.tlsCert, KeyFile: *o.tlsKey, CAFile: *o.tlsCA, ClientAuth: *o.tlsCAuth, PeerCAFile: *o.peerCA}
	cfg.ClusterSecret, cfg.ClusterSecretOptional = *o.clSecret, *o.clMode == "accept"
	if *o.peers != "" {
		ps, err := parsePeers(*o.peers)
		if err != nil {
			fmt.Fprintf(stderr, "lockd: -peers: %v\n", err)
			return 2
		}
		cfg.Peers = ps
	}
	if cfg.Join != "" && len(cfg.Peers) > 0 {
		fmt.Fprintln(stderr, "lockd: -join and -peers exclude each other: -peers starts a new cluster, -join enters a running one")
		return 2
	}
	if err := faults.apply(&cfg); err != nil {
		fmt.Fprintf(stderr, "lockd: %v\n", err)
		return 2
	}
	cfg.RaftLogs = *o.raftLogs
	lg.Info("starting lockd", "version", server.Version, "data_dir", abs, "gomaxprocs", runtime.GOMAXPROCS(0),
		"timer_slack", timerslack.Current())
	// Catch the signals before anything serves: a SIGTERM that arrives while
	// the server starts (a supervisor that saw /readyz and stops the unit at
	// once) is then a clean stop, not the default death.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	srv, err := server.New(cfg)
	if err != nil {
		lg.Error("lockd cannot start", "err", err)
		return 1
	}
	// Once a burst of writes is over, hand the collector's headroom back.
	trimCtx, stopTrim := context.WithCancel(context.Background())
	defer stopTrim()
	go memtrim.Run(trimCtx, memtrim.Config{OnTrim: func(before, after uint64, took time.Duration) {
		lg.Debug("returned free heap to the OS", "held_mib", before>>20, "now_mib", after>>20, "took", took)
	}})
	code := 0
wait:
	for {
		select {
		case s := <-sig:
			if s == syscall.SIGHUP { // re-read the TLS certificate
				if err := srv.ReloadTLS(); errors.Is(err, server.ErrNoTLS) {
					lg.Info("SIGHUP ignored: no TLS certificate to reload")
				}
				continue // a failed reload is logged and keeps the old pair
			}
			lg.Info("shutting down", "signal", s.String())
		case err := <-srv.Done():
			lg.Error("serving failed", "err", err)
			code = 1
		}
		break wait
	}
	// A store that cannot flush (a vanished disk) must not keep the process
	// alive forever: give Close a deadline.
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			lg.Warn("close", "err", err)
		}
	case <-time.After(shutdownTimeout):
		lg.Error("shutdown did not finish in time; exiting anyway", "timeout", shutdownTimeout)
		code = 1
	}
	return code
}
