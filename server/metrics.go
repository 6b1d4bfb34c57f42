package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/lockd/lockd/raftstore"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/redisproto"
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
	reg.MustRegister(s.cmds.count, s.cmds.latency)
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
	gauge("lockd_ready", "1 while this node can serve strict operations (what /readyz answers 200 for).", func() float64 {
		if s.store.Serving() {
			return 1
		}
		return 0
	})
	gauge("lockd_raft_term", "Current Raft term.", stat("raft_term"))
	gauge("lockd_raft_commit_index", "Raft commit index.", stat("raft_commit_index"))
	gauge("lockd_raft_applied_index", "Raft applied index.", stat("raft_applied_index"))
	gauge("lockd_raft_log_time_milliseconds", "Log time of the last applied entry.", stat("raft_log_time_ms"))
	counter("lockd_raft_log_write_batches_total", "Log writes of every group of this node, each one or more entries, synced alone or, where the groups share one log, in a transaction with other groups' (lockd_log_commits_total).", stat("raft_log_write_batches"))
	counter("lockd_raft_snapshots_by_bytes_total", "Snapshots this node's groups took because the entries since their last snapshot passed their share of -log-bytes (Raft takes the others every -snapshot-threshold entries).", stat("raft_snapshots_by_bytes"))
	reg.MustRegister(s.store.Collectors()...)
	reg.MustRegister(lockCollector{s.store})
	// Security: refusals by the RESP door (and the HTTP door's failed
	// credentials), each limit with its own counter.
	sec := func(f func(redisproto.SecurityCounters) int64) func() float64 {
		return func() float64 { return float64(f(s.resp.SecurityCounters())) }
	}
	counter("lockd_resp_noauth_total", "Commands refused NOAUTH (not authenticated).", sec(func(c redisproto.SecurityCounters) int64 { return c.NoAuth }))
	counter("lockd_resp_noperm_total", "Commands refused NOPERM by the user's ACL (command, key or channel).", sec(func(c redisproto.SecurityCounters) int64 { return c.NoPerm }))
	counter("lockd_auth_failures_total", "Failed AUTH, HELLO AUTH and HTTP credentials.", sec(func(c redisproto.SecurityCounters) int64 { return c.AuthFailures }))
	counter("lockd_resp_rejected_connections_total", "Connections refused at -maxclients.", sec(func(c redisproto.SecurityCounters) int64 { return c.MaxClients }))
	counter("lockd_resp_output_buffer_disconnects_total", "Clients disconnected because their replies would pass -client-output-buffer-limit, or because they took none of them for a minute.", sec(func(c redisproto.SecurityCounters) int64 { return c.OutputDisconnects }))
	counter("lockd_resp_accept_errors_total", "Failed accepts on the RESP port (out of descriptors, ...), each retried after a pause.", sec(func(c redisproto.SecurityCounters) int64 { return c.AcceptErrors }))
	counter("lockd_resp_idle_timeouts_total", "RESP clients closed after -timeout seconds idle.", sec(func(c redisproto.SecurityCounters) int64 { return c.IdleTimeouts }))
	counter("lockd_resp_auth_timeouts_total", "RESP clients closed because they had not authenticated within -auth-timeout.", sec(func(c redisproto.SecurityCounters) int64 { return c.AuthTimeouts }))
	counter("lockd_auth_throttled_total", "Authentication attempts (AUTH, HELLO AUTH, HTTP credentials) slowed down or refused because their address failed too often (-auth-fail-delay).", sec(func(c redisproto.SecurityCounters) int64 { return c.AuthThrottled }))
	counter("lockd_resp_protocol_errors_total", "Requests refused as malformed or over a request limit (-proto-max-bulk-len, -max-args).", sec(func(c redisproto.SecurityCounters) int64 { return c.ProtocolErrors }))
	// The peer port's refusals (raftstore/mux Counters), one series per reason.
	for reason, f := range map[string]func(mux.Counters) uint64{
		"tls":        func(c mux.Counters) uint64 { return c.TLS },
		"not_member": func(c mux.Counters) uint64 { return c.NotMember },
		"no_secret":  func(c mux.Counters) uint64 { return c.NoSecret },
		"bad_secret": func(c mux.Counters) uint64 { return c.BadSecret },
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lockd_peer_connections_refused_total",
			Help:        "Peer-port connections refused as not a peer's: tls (failed TLS handshake), not_member (a certificate naming no member), no_secret (no cluster-secret handshake), bad_secret (a failed one).",
			ConstLabels: prometheus.Labels{"reason": reason}}, func() float64 { return float64(f(s.store.PeerCounters())) }))
	}
	counter("lockd_peer_connections_unauthenticated_total", "Peer-port connections accepted without the cluster secret (-cluster-secret-mode accept); 0 on every node before requiring it.",
		func() float64 { return float64(s.store.PeerCounters().Unauthenticated) })
	reg.MustRegister(s.cfg.Collectors...)
	return reg
}

// lockCollector reads the lock service's gauges and counters when scraped.
type lockCollector struct{ store *raftstore.Node }

var (
	lockGauges = map[string]*prometheus.Desc{
		"locks":    prometheus.NewDesc("lockd_locks", "Lock records stored (held, waited for or in lock-delay).", nil, nil),
		"held":     prometheus.NewDesc("lockd_locks_held", "Holds of lock records (each holder of a shared lock or semaphore counts).", nil, nil),
		"waiters":  prometheus.NewDesc("lockd_lock_waiters", "Queued LOCK.ACQUIRE … WAIT requests, all names together.", nil, nil),
		"sessions": prometheus.NewDesc("lockd_sessions", "Open sessions.", nil, nil),
		"blocked":  prometheus.NewDesc("lockd_blocked_clients", "Clients of this node blocked in LOCK.ACQUIRE … WAIT.", nil, nil),
	}
	lockCounters = map[string]*prometheus.Desc{
		"grants":         prometheus.NewDesc("lockd_lock_grants_total", "Lock grants, at once or to a waiter.", nil, nil),
		"releases":       prometheus.NewDesc("lockd_lock_releases_total", "Holds given back (release, session close, cancel).", nil, nil),
		"expiries":       prometheus.NewDesc("lockd_lock_expiries_total", "Holds ended because their lease or session ran out.", nil, nil),
		"delay":          prometheus.NewDesc("lockd_lock_delay_hits_total", "Acquires refused or queued because of a lock-delay.", nil, nil),
		"queuefull":      prometheus.NewDesc("lockd_lock_queue_full_total", "Acquires refused with QUEUEFULL.", nil, nil),
		"ratelimited":    prometheus.NewDesc("lockd_rate_limited_total", "Requests refused with RATELIMITED by this node as leader.", nil, nil),
		"toolarge":       prometheus.NewDesc("lockd_writes_too_large_total", "Writes refused by this node as leader because their log entry would exceed -max-write-bytes (or the log's limit).", nil, nil),
		"leaderchanges":  prometheus.NewDesc("lockd_raft_leader_changes_total", "Times this node took office as leader.", nil, nil),
		"scriptsbudget":  prometheus.NewDesc("lockd_scripts_refused_budget_total", "Scripts refused before the log for their instruction budget (or SCRIPT KILL).", nil, nil),
		"scriptsbounded": prometheus.NewDesc("lockd_scripts_admitted_bounded_total", "Scripts admitted to the log without a dry run: statically bounded (no loops, no functions, few calls; lua.Engine.Bounded).", nil, nil),
		"scriptsmemory":  prometheus.NewDesc("lockd_scripts_refused_memory_total", "Scripts refused before the log for their allocation budget.", nil, nil),
		"lingered":       prometheus.NewDesc("lockd_lock_lingered_total", "Acquires this node, as leader, expected to queue and held back (at most 3 ms) to go into the log with the next write.", nil, nil),
		"lingeredalone":  prometheus.NewDesc("lockd_lock_lingered_alone_total", "Of the lingered acquires, those that went into the log without a write to go with: none came within 3 ms.", nil, nil),
	}
	lateDesc = prometheus.NewDesc("lockd_lock_expired_while_held_total",
		"Releases and extends that arrived after the holder's lease had ended (the holder was still working), by namespace prefix.", []string{"namespace"}, nil)
)

func (c lockCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range lockGauges {
		ch <- d
	}
	for _, d := range lockCounters {
		ch <- d
	}
	ch <- lateDesc
}

func (c lockCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store.LockCounters()
	g := func(k string, v int64) {
		ch <- prometheus.MustNewConstMetric(lockGauges[k], prometheus.GaugeValue, float64(v))
	}
	n := func(k string, v int64) {
		ch <- prometheus.MustNewConstMetric(lockCounters[k], prometheus.CounterValue, float64(v))
	}
	g("locks", st.Locks)
	g("held", st.Holders)
	g("waiters", st.Waiters)
	g("sessions", int64(st.Sessions))
	g("blocked", int64(st.Blocked))
	n("grants", st.Grants)
	n("releases", st.Releases)
	n("expiries", st.Expiries)
	n("delay", st.DelayHits)
	n("queuefull", st.QueueFull)
	n("ratelimited", st.RateLimited)
	n("toolarge", st.TooLarge)
	n("leaderchanges", st.LeaderChanges)
	n("scriptsbudget", st.ScriptsBudget)
	n("scriptsbounded", st.ScriptsBounded)
	n("scriptsmemory", st.ScriptsMemory)
	n("lingered", st.Lingered)
	n("lingeredalone", st.LingeredAlone)
	for _, ns := range st.Namespaces() {
		ch <- prometheus.MustNewConstMetric(lateDesc, prometheus.CounterValue, float64(st.LateOps[ns]), ns)
	}
}

// commandMetrics count the RESP door's commands by name and result, and time
// them. Names are lockd's commands only ("unknown" otherwise) and results a
// fixed set of codes, so no client can grow the series.
type commandMetrics struct {
	count   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	// series caches each (command, result)'s counter and histogram: finding
	// them by label values hashes the labels under the vectors' locks, 2% of
	// a node's CPU when every command did it twice.
	series sync.Map // commandSeries → *commandSeriesMetrics
}

type commandSeries struct{ command, result string }

type commandSeriesMetrics struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

func newCommandMetrics() *commandMetrics {
	return &commandMetrics{
		count: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lockd_resp_commands_total",
			Help: "RESP commands answered, by command and result (ok, or the error code)."}, []string{"command", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lockd_command_duration_seconds",
			Help:    "Time to answer a RESP command (commands pipelined together share their round through the log).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"command"}),
	}
}

// observe counts and times one command. Called by the RESP door for every
// command, from the connections' goroutines at once.
func (m *commandMetrics) observe(command, result string, d time.Duration) {
	k := commandSeries{command, result}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &commandSeriesMetrics{
			count: m.count.WithLabelValues(command, result), latency: m.latency.WithLabelValues(command)})
	}
	sm := v.(*commandSeriesMetrics)
	sm.count.Inc()
	sm.latency.Observe(d.Seconds())
}
