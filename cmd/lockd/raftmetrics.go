package main

import (
	"time"

	gm "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// raftMetrics sends hashicorp/raft's own timers and counters (raft_commitTime,
// raft_replication_appendEntries_rpc, raft_rpc_appendEntries_storeLogs,
// raft_fsm_applyBatch, …, in milliseconds; every group of the node into the
// same series) to a Prometheus collector for /metrics (-raft-metrics).
// hashicorp/raft reports through go-metrics' process-wide sink, so this sets
// that sink: run calls it once, before the server starts. Without it the sink
// is go-metrics' default, which discards everything.
func raftMetrics() (prometheus.Collector, error) {
	// The collector goes into the server's registry (server.Config.Collectors),
	// not Prometheus's default one, which lockd does not serve.
	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
		Name: "lockd_raft_metrics", Expiration: time.Minute, Registerer: prometheus.NewRegistry()})
	if err != nil {
		return nil, err
	}
	cfg := gm.DefaultConfig("")
	cfg.EnableHostname = false
	cfg.EnableRuntimeMetrics = false // the Go collector already serves these
	if _, err := gm.NewGlobal(cfg, sink); err != nil {
		return nil, err
	}
	return sink, nil
}
