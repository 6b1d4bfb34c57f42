package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// newMetrics builds this process's registry (a fresh one per Server, so that
// in-process clusters do not collide): the front door's totals and the Raft
// state, read when scraped.
func (s *Server) newMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	counter("lockd_resp_connections_total", "RESP connections accepted since start.", func() float64 { return float64(s.resp.Counters().Connections) })
	counter("lockd_resp_commands_total", "RESP commands processed since start.", func() float64 { return float64(s.resp.Counters().Commands) })
	gauge("lockd_resp_clients", "RESP clients connected now.", func() float64 { return float64(s.resp.Counters().Clients) })
	stat := func(key string) func() float64 {
		return func() float64 {
			for _, kv := range s.store.Stats() {
				if kv[0] == key {
					v, _ := strconv.ParseFloat(kv[1], 64)
					return v
				}
			}
			return 0
		}
	}
	gauge("lockd_raft_leader", "1 while this node leads and serves.", func() float64 {
		if s.store.IsLeader() {
			return 1
		}
		return 0
	})
	gauge("lockd_raft_term", "Current Raft term.", stat("raft_term"))
	gauge("lockd_raft_commit_index", "Raft commit index.", stat("raft_commit_index"))
	gauge("lockd_raft_applied_index", "Raft applied index.", stat("raft_applied_index"))
	gauge("lockd_raft_log_time_milliseconds", "Log time of the last applied entry.", stat("raft_log_time_ms"))
	counter("lockd_raft_log_write_batches_total", "Synced log writes (each holds one or more entries).", stat("raft_log_write_batches"))
	return reg
}
