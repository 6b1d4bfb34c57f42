// Command lockd runs one lockd node: a lock server that speaks the Redis protocol
// and commits every write through Raft. With no flags it is a complete
// single-node cluster with its data in ./lockd-data.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockd/lockd/raftstore"
	"github.com/lockd/lockd/server"
)

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

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("lockd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		respAddr = fs.String("addr", "127.0.0.1:6379", "RESP (Redis protocol) listen address")
		peerAddr = fs.String("peer-addr", "127.0.0.1:7379", "peer (Raft) listen address")
		httpAddr = fs.String("http-addr", "127.0.0.1:8379", "HTTP listen address (health, readiness); empty disables it")
		dataDir  = fs.String("data-dir", "lockd-data", "directory for the Raft log and snapshots")
		nodeID   = fs.String("node-id", "node1", "this node's ID in the Raft configuration")
		peers    = fs.String("peers", "", "voters of a new cluster, this node included: id=peer-addr,id=peer-addr,... (empty: a single-node cluster)")
		joinAddr = fs.String("join", "", "RESP address of a member of a running cluster to join (it runs RAFT ADD for this node)")
		snapN    = fs.Uint64("snapshot-threshold", 8192, "log entries between Raft snapshots")
		trailing = fs.Uint64("trailing-logs", 10240, "log entries kept after a snapshot for lagging followers (a follower further behind installs the snapshot)")
		maxBulk  = fs.Int64("proto-max-bulk-len", 512<<20, "largest bulk string a request may carry, in bytes")
		logLevel = fs.String("log-level", "info", "log level: debug, info, warn, error")
		raftLogs = fs.Bool("raft-logs", false, "also print hashicorp/raft's own log lines")
	)
	faults := registerFaultFlags(fs) // hidden: fault tests only (faults.go)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "lockd: bad -log-level %q\n", *logLevel)
		return 2
	}
	lg := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	abs, err := filepath.Abs(*dataDir)
	if err != nil {
		abs = *dataDir
	}
	cfg := server.Config{NodeID: *nodeID, RESPAddr: *respAddr, PeerAddr: *peerAddr, HTTPAddr: *httpAddr,
		DataDir: abs, Logger: lg}
	cfg.Limits.MaxBulkLen = *maxBulk
	cfg.SnapshotThreshold, cfg.TrailingLogs = *snapN, *trailing
	cfg.Join = *joinAddr
	if *peers != "" {
		ps, err := parsePeers(*peers)
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
	if *raftLogs {
		cfg.RaftLogOutput = stderr
	}
	lg.Info("starting lockd", "version", server.Version, "data_dir", abs)
	srv, err := server.New(cfg)
	if err != nil {
		lg.Error("lockd cannot start", "err", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	code := 0
	select {
	case s := <-sig:
		lg.Info("shutting down", "signal", s.String())
	case err := <-srv.Done():
		lg.Error("serving failed", "err", err)
		code = 1
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
