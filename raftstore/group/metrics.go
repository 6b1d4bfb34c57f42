package group

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the store's own Prometheus instruments. They are created per
// Store and registered by whoever serves them (server: one registry per
// process), so in-process clusters do not collide.
type Metrics struct {
	commit           prometheus.Histogram // propose → applied, on the leader
	fsync            prometheus.Histogram // one synced log write
	appliedEarly     prometheus.Counter   // batches applied on followers' acks before the leader's own fsync
	leaderChanges    atomic.Int64         // times this node took office
	rateLimited      atomic.Int64         // requests refused with RATELIMITED
	tooLarge         atomic.Int64         // writes refused with ErrTooLarge
	snapshotsByBytes atomic.Int64         // snapshots taken for the log's bytes (logbytes.go)
	scriptsBudget    atomic.Int64         // scripts refused by the dry run: instruction budget or SCRIPT KILL
	scriptsMemory    atomic.Int64         // scripts refused by the dry run: allocation budget
	scriptsBounded   atomic.Int64         // scripts admitted without a dry run (lua.Engine.Bounded)
	lingered         atomic.Int64         // queued acquires the leader held back for the next write (linger.go)
	lingeredAlone    atomic.Int64         // of those, proposed without a write: none came within lingerMax
	contactPokes     atomic.Int64         // follower heartbeat checks run early on a silent leader (contact.go)
}

// latencyBuckets run from 100µs to about 3 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 16)

// NewMetrics returns a set of instruments for one Store, or for every
// group of a Node (Shared.Metrics).
func NewMetrics() *Metrics {
	return &Metrics{
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lockd_raft_commit_seconds",
			Help: "Time from proposing a write to its reply (committed on a quorum and applied), on the leader.", Buckets: latencyBuckets}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lockd_fsync_seconds",
			Help: "Duration of one synced Raft log write (one fsync, one or more entries).", Buckets: latencyBuckets}),
		appliedEarly: prometheus.NewCounter(prometheus.CounterOpts{Name: "lockd_raft_applied_before_own_fsync_total",
			Help: "Batches of committed entries this node applied as leader once a majority of the other voters held them on disk, before its own log write of them had finished."}),
	}
}

// Collectors returns the store's instruments for a Prometheus registry.
func (s *Store) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.commit, s.metrics.fsync, s.metrics.appliedEarly}
}

// LockCounters is what the lock service holds and has done, for metrics.
type LockCounters struct {
	fsm.LockStats
	Sessions       int   // open sessions
	Blocked        int   // this node's clients blocked in LOCK.ACQUIRE … WAIT
	RateLimited    int64 // requests this node refused with RATELIMITED (as leader)
	TooLarge       int64 // writes this node refused as too large for the log (ErrTooLarge, as leader)
	ScriptsBudget  int64 // scripts the dry run refused for their instruction budget (or SCRIPT KILL)
	ScriptsMemory  int64 // scripts the dry run refused for their allocation budget
	ScriptsBounded int64 // scripts admitted without a dry run: statically bounded (lua.Engine.Bounded)
	LeaderChanges  int64 // times this node took office
	Lingered       int64 // queued acquires held back to share the next write's batch (linger.go)
	LingeredAlone  int64 // of those, proposed without a write to share (none came in time)
}

// LockCounters reads the lock statistics.
func (s *Store) LockCounters() LockCounters {
	s.m.mu.RLock()
	st := s.m.ks.LockStats()
	n := len(s.m.ks.Sessions())
	s.m.mu.RUnlock()
	return LockCounters{LockStats: st, Sessions: n, Blocked: s.waits.count(),
		RateLimited: s.metrics.rateLimited.Load(), TooLarge: s.metrics.tooLarge.Load(), LeaderChanges: s.metrics.leaderChanges.Load(),
		ScriptsBudget: s.metrics.scriptsBudget.Load(), ScriptsMemory: s.metrics.scriptsMemory.Load(),
		ScriptsBounded: s.metrics.scriptsBounded.Load(), Lingered: s.metrics.lingered.Load(),
		LingeredAlone: s.metrics.lingeredAlone.Load()}
}

// LockInfo is INFO's "# Locks" section.
func (s *Store) LockInfo() [][2]string { return LockInfoOf(s.LockCounters()) }

// LockInfoOf formats lock counters as INFO's "# Locks" section.
func LockInfoOf(c LockCounters) [][2]string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	out := [][2]string{
		{"locks", i(c.Locks)}, {"lock_holders", i(c.Holders)}, {"lock_waiters", i(c.Waiters)},
		{"sessions", strconv.Itoa(c.Sessions)}, {"blocked_clients", strconv.Itoa(c.Blocked)},
		{"lock_grants", i(c.Grants)}, {"lock_releases", i(c.Releases)}, {"lock_expiries", i(c.Expiries)},
		{"lock_delay_hits", i(c.DelayHits)}, {"lock_queue_full", i(c.QueueFull)}, {"rate_limited", i(c.RateLimited)},
		{"writes_too_large", i(c.TooLarge)},
		{"lock_lingered", i(c.Lingered)}, {"lock_lingered_alone", i(c.LingeredAlone)},
	}
	var late int64
	for _, n := range c.LateOps {
		late += n
	}
	return append(out, [2]string{"lease_expired_while_held", i(late)})
}

// ObserveWrite records one synced log write that took d (the log's
// logstore.Options.ObserveWrite).
func (m *Metrics) ObserveWrite(d time.Duration) { m.fsync.Observe(d.Seconds()) }
