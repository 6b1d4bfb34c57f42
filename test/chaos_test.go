package test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/shard"
)

// The chaos campaign (issue 5): runs of a real multi-process cluster, every
// peer link through a fault proxy, with fenced-resource workers (separate
// processes), linearizability clients and a nemesis, each followed by the
// checks: the resource lost no acknowledged update and saw no repeated token;
// the register history is linearizable (porcupine); acknowledged grants are in
// the log with their tokens, tokens rise in real-time order, and leases did not
// end early in real time (when clocks are honest); dead holders' locks were
// freed in time; every node process ended by the harness's own kill, never by
// itself (selfExits); and the replay of every replica's log (see
// chaos_replay_test.go).
//
// `make chaos` runs a long campaign (CHAOS_DURATION, CHAOS_SEED); `go test`
// runs a short one, plus the negative control and the planted bugs, which the
// checks must catch.
//
// Runs alternate between one Raft group per node and chaosShardedGroups
// (-groups 4: keys spread over the groups by slot). A sharded run writes one
// final marker per group, waits until every replica applied each, reads every
// group's log of every replica and replays each group on its own; the
// client-side checks then scope tokens by group (a token is unique within its
// group only; a name's grants all come from its group).
//
// Placed runs (issue 49; every chaosPlacedEvery-th run of a long campaign,
// every run when CHAOS_FAULTS names a kind only they draw) have
// chaosPlacedNodes nodes with -groups chaosPlacedGroups -replicas
// chaosPlacedReplicas: each group lives on three of the six nodes (group 0
// on all, most as non-voters), and the nemesis also moves members
// (member-move: a node drained by RAFT REMOVE, wiped, joined again). Before
// the markers such a run waits until every node shows one settled
// placement; a node's markers are awaited in the groups it hosts, and the
// replay takes each group's members from the group's own log (replayGroup).

// chaosLinTimeout bounds porcupine on one run's history; undecided is
// reported, not failed.
const chaosLinTimeout = 20 * time.Second

// chaosShardedGroups is the number of Raft groups of a sharded run.
const chaosShardedGroups = 4

// A placed run's shape (issue 49's test cluster), and how often a long
// campaign runs one.
const (
	chaosPlacedNodes    = 6
	chaosPlacedGroups   = 8
	chaosPlacedReplicas = 3
	chaosPlacedEvery    = 4
	// placedSettleBound bounds the wait for a settled placement before the
	// final markers (the last member-move's balancing is normally over).
	placedSettleBound = time.Minute
)

// chaosRun describes one run.
type chaosRun struct {
	name     string
	nodes    int
	groups   int           // Raft groups per node (-groups; 0 means 1)
	replicas int           // -replicas (0: not given); below nodes, a placed run
	faultFor time.Duration // how long the nemesis runs
	seed     uint64
	kinds    []string // fault kinds the nemesis draws from
	fenced   bool     // false: the negative control
	workers  int
	lin      int      // linearizability clients
	extra    []string // lockd flags (planted bugs)
	// availBound: a bounded fault (boundedFaults) whose majority side went
	// longer than majorityBound without a successful write is a violation.
	availBound bool
}

// chaosResult is what one run found.
type chaosResult struct {
	ops          int64
	faults       map[string]int
	violations   []string
	lost         int
	accepted     int
	rejected     int
	unavailable  time.Duration
	grants       int
	entries      uint64
	linResult    porcupine.CheckResult
	earlyLeases  int           // leases that ended early in real time (a violation with honest clocks)
	deadHolder   string        // the dead holder closest to its bound: "freed after of bound"
	deadOver     time.Duration // how far beyond its bound (negative: within)
	handovers    int
	realTimeLint bool // the real-time lease check ran
	linTook      time.Duration
	linOps       int
	linUnknown   int
	groups       int                 // Raft groups per node
	placed       bool                // groups placed on a subset of the nodes
	perGroup     []groupReplay       // what the replay found per group (sharded runs)
	crossTokens  int                 // token values acknowledged in more than one group (allowed)
	sides        map[string]sideGaps // per fault kind: the longest write unavailability on each side
}

func (r *chaosResult) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// runChaos performs one run and its checks. It fails t only when the run
// itself could not be carried out; what the checks find is in the result.
func runChaos(t *testing.T, run chaosRun) *chaosResult {
	groups := max(run.groups, 1)
	res := &chaosResult{faults: map[string]int{}, groups: groups}
	if chaosEngine() {
		run.extra = append(slices.Clip(run.extra), "-engine")
	}
	t.Logf("run %s: %d nodes, %d Raft groups, -replicas %d, %v of faults from %v, seed %d, fenced %v %v", run.name, run.nodes, groups, run.replicas, run.faultFor, run.kinds, run.seed, run.fenced, run.extra)
	cc := startChaosCluster(t, run.nodes, groups, run.replicas, run.extra...)
	res.placed = cc.placed()
	rs := startResourceServer(t, run.fenced)
	var addrs []string
	for _, nd := range cc.nodes {
		addrs = append(addrs, nd.addrs.resp)
	}
	var workers []*chaosWorker
	for i := 0; i < run.workers; i++ {
		workers = append(workers, startChaosWorker(t, chaosWorkerConfig{ID: i, Seed: run.seed, Addrs: addrs, Resource: rs.addr}))
	}
	start := time.Now()
	stop := make(chan struct{})
	var done atomic.Int64
	recs := make([]*linRecorder, run.lin)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = &linRecorder{client: i}
		wg.Add(1)
		go func() {
			defer wg.Done()
			chaosLinClient(cc.lockdCluster, recs[i], run.seed, start, stop, &done)
		}()
	}

	nem := &nemesis{cc: cc, rng: rand.New(rand.NewPCG(run.seed, 0x6e656d)), workers: workers, counts: map[string]int{},
		logf: func(format string, args ...any) {
			t.Logf("%6.2fs %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
		}}
	nem.hold(500*time.Millisecond, time.Second) // load before the first fault
	nem.run(run.kinds, time.Now().Add(run.faultFor))

	// Heal everything and let the load run on a healthy cluster a moment.
	cc.net.Heal()
	for _, w := range workers {
		w.pause(false)
	}
	for _, nd := range cc.nodes {
		if cc.isPaused(nd) {
			cc.pause(nd, false)
		}
	}
	nem.restartAll()
	for _, nd := range cc.running() {
		if err := cc.setFaults(nd, "fsync_delay", "0s", "fsync_fail", "false", "clock_rate", "1", "lying_disk", "0s"); err != nil {
			nem.violate("healing %s: %v", nd.id, err)
		}
	}
	if cc.awaitLeader(recoverTimeout) == nil {
		nem.violate("no leader within %v after the last fault was healed", recoverTimeout)
	}
	// A placed run: the placement settles (no move under way, every node
	// agreeing) before the markers, so that the groups' members stay put
	// until the processes stop.
	var view []groupState
	if cc.placed() {
		var last string
		if view, last = cc.awaitPlacement(3*time.Second, placedSettleBound, nil); view == nil {
			nem.violate("the placement did not settle within %v after the last fault was healed: %s", placedSettleBound, last)
		} else {
			t.Logf("placement before the markers: %s", placementString(view))
		}
	}
	nem.hold(time.Second, 1500*time.Millisecond)
	for _, w := range workers {
		w.stop()
	}
	close(stop)
	wg.Wait()
	end := time.Now()
	res.faults = nem.counts
	res.violations = append(res.violations, nem.violations...)
	res.deadHolder, res.deadOver = nem.deadWorst, nem.deadOver

	// The final markers, one per group: every replica must apply each; then
	// stop and replay every group.
	smap, err := shard.NewMap(groups)
	if err != nil {
		t.Fatal(err)
	}
	keys := chaosMarkerKeys(smap)
	markers := chaosMarkers(cc, run.name, keys, res)
	if markers != nil {
		waitApplied(cc, markers, view, res)
	}
	for _, nd := range cc.running() {
		cc.kill(nd)
	}
	selfExits(cc, res)
	var ids []string
	var logs [][][]raft.Log
	for _, nd := range cc.nodes {
		l, err := readReplicaLogs(nd.dir, groups)
		if err != nil {
			t.Fatalf("%s: reading its logs: %v", nd.id, err)
		}
		ids, logs = append(ids, nd.id), append(logs, l)
	}
	var rep replayResult
	if markers != nil {
		rep = replayGroups(ids, logs, markers, keys, smap)
		res.violations = append(res.violations, rep.violations...)
		res.grants, res.entries, res.handovers = len(rep.grants), rep.entries, rep.handovers
		res.perGroup = rep.perGroup
	}

	// The clients' view.
	var acqs []chaosAcquire
	for _, w := range workers {
		acqs = append(acqs, w.history()...)
	}
	res.ops = int64(len(acqs)) + done.Load()
	honest := true
	for k, n := range res.faults {
		if clockFaults[k] && n > 0 {
			honest = false
		}
	}
	res.realTimeLint = honest
	if markers != nil {
		checkGrants(acqs, rep, honest, res)
	}
	lost, accepted, rejected := rs.lost()
	res.lost, res.accepted, res.rejected = len(lost), accepted, rejected
	res.ops += int64(accepted + rejected)
	if run.fenced {
		for _, l := range lost {
			res.violate("lost update: %s was accepted by the fenced resource and is not in its final record", l)
		}
	}
	for _, v := range rs.violations {
		res.violate("resource: %s", v)
	}
	res.linResult = checkLinHistory(recs, start, end, res)
	res.unavailable = longestGap(acqs, recs, start, end)
	var over []faultWindowGap
	res.sides, over = faultGaps(nem.windows, recs)
	for _, o := range over {
		msg := fmt.Sprintf("%s at %.2fs (minority %v): no successful write on the majority side for %v, more than election timeout + 1 s",
			o.w.kind, o.w.start.Sub(start).Seconds(), o.w.minority, o.gap.Round(time.Millisecond))
		if run.availBound {
			res.violate("%s", msg)
		} else {
			t.Logf("unavailability: %s (not a violation in this run)", msg)
		}
	}
	t.Logf("run %s: %d ops, %d resource writes accepted (%d rejected), %d lost; %d grants (%d handed to queued waiters) in %d log entries; porcupine %s in %v (%d ops, %d of unknown outcome); longest unavailability %v; faults %v; %d violations",
		run.name, res.ops, accepted, rejected, res.lost, res.grants, res.handovers, res.entries, res.linResult, res.linTook.Round(time.Millisecond), res.linOps, res.linUnknown, res.unavailable.Round(time.Millisecond), res.faults, len(res.violations))
	for g, pg := range res.perGroup {
		t.Logf("run %s: group %d: marker %s (token %d) at index %d applied by every replica; %d entries replayed on %d replicas (%d former members' logs replayed as far as they go, %d ending in replaced entries), %d grants of %d names",
			run.name, g, keys[g], pg.token, pg.marker, pg.entries, pg.replicas, pg.stale, pg.staleTails, pg.grants, pg.names)
	}
	if groups > 1 {
		t.Logf("run %s: %d token values were acknowledged in more than one group (tokens are unique per group)", run.name, res.crossTokens)
	}
	for i, v := range res.violations {
		if i == 20 {
			t.Logf("... and %d more", len(res.violations)-20)
			break
		}
		t.Logf("violation: %s", v)
	}
	return res
}

// chaosMarkerKeys returns one final-marker key per group of smap: key g is
// the first of chaos:end, chaos:end:1, chaos:end:2, … whose slot group g
// owns. With one group it is chaos:end.
func chaosMarkerKeys(smap shard.Map) []string {
	keys := make([]string, smap.Groups)
	left := smap.Groups
	for i := 0; left > 0; i++ {
		k := "chaos:end"
		if i > 0 {
			k += ":" + strconv.Itoa(i)
		}
		if g := smap.GroupOf([]byte(k)); keys[g] == "" {
			keys[g], left = k, left-1
		}
	}
	return keys
}

// chaosMarkers writes the run's final markers (keys[g] into group g) through
// the leader and returns their tokens (logical indexes), by group (nil, and a violation, if
// one could not be written within recoverTimeout). It also checks that the
// server's CLUSTER KEYSLOT agrees with shard.Slot on each key, which the
// replay relies on to know each name's group.
func chaosMarkers(cc *chaosCluster, name string, keys []string, res *chaosResult) []uint64 {
	deadline := time.Now().Add(recoverTimeout)
	out := make([]uint64, len(keys))
	for g, key := range keys {
		for out[g] == 0 {
			if time.Now().After(deadline) {
				res.violate("could not write the final marker %s (group %d) within %v", key, g, recoverTimeout)
				return nil
			}
			if l := cc.currentLeader(); l != nil {
				if c, err := dialRESP(l.addrs.resp, opTimeout); err == nil {
					r, err := c.do("SET", key, name, "FENCE")
					if err == nil && r.kind == ':' {
						out[g] = uint64(r.n)
						if s, err := c.do("CLUSTER", "KEYSLOT", key); err == nil && (s.kind != ':' || s.n != int64(shard.Slot([]byte(key)))) {
							res.violate("CLUSTER KEYSLOT %s answered %v; shard.Slot says %d", key, s, shard.Slot([]byte(key)))
						}
					}
					c.close()
					if out[g] != 0 {
						break
					}
				}
			}
			time.Sleep(50 * time.Millisecond) // between attempts while a leader settles
		}
	}
	return out
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// selfExits reports, as violations, the processes of the run that ended
// other than by the harness's SIGKILL (lockdProc.kill): a panic, a fatal
// error, a signal from elsewhere. The nemesis only kills and pauses, and the
// run kills every node before its replay, so each should end that way. Each
// comes with the last lines of its log.
func selfExits(cc *chaosCluster, res *chaosResult) {
	for _, nd := range cc.nodes {
		for _, p := range nd.procs {
			if !p.hasExited() || p.killed.Load() {
				continue
			}
			res.violate("%s ended by itself (%v); its log's last lines:\n%s", p.name, p.cmd.ProcessState, lastLines(p.stderr.String(), 60))
		}
	}
}

// waitApplied waits (bounded) until every node applied every group's marker
// — of a placed run, every group it hosts: group 0 (every node), and the
// groups whose voters view lists it (without a view, those it does not
// call "remote").
func waitApplied(cc *chaosCluster, markers []uint64, view []groupState, res *chaosResult) {
	deadline := time.Now().Add(recoverTimeout)
	for _, nd := range cc.nodes {
		for {
			is, states, err := cc.appliedTokens(nd)
			behind := -1
			if err == nil {
				for g, m := range markers {
					hosts := true
					switch {
					case !cc.placed() || g == 0:
					case view != nil:
						hosts = slices.Contains(view[g].members, nd.id)
					default:
						hosts = states[g] != "remote"
					}
					if hosts && is[g] < m {
						behind = g
						break
					}
				}
			}
			if err == nil && behind < 0 {
				break
			}
			if time.Now().After(deadline) {
				res.violate("%s did not apply the final markers %v within %v (applied %v, %v; group %d behind)", nd.id, markers, recoverTimeout, is, err, behind)
				if nd.proc != nil { // what the replica that fell behind logged
					cc.t.Logf("%s's log, last lines:\n%s", nd.id, lastLines(nd.proc.stderr.String(), 60))
				}
				break
			}
			time.Sleep(pollEvery)
		}
	}
}

// checkGrants checks the clients' acknowledged grants against the log. A
// token is unique within its name's group (rep.groupOf): the same number
// acknowledged in two groups is counted (res.crossTokens), not a violation.
func checkGrants(acqs []chaosAcquire, rep replayResult, honest bool, res *chaosResult) {
	byOwner := map[string]chaosAcquire{}
	tokOwner := map[tokenKey]string{}
	tokGroups := map[int64]map[int]bool{}
	var granted []chaosAcquire
	for _, a := range acqs {
		byOwner[a.owner] = a
		if a.token <= 0 {
			continue
		}
		granted = append(granted, a)
		k := tokenKey{rep.groupOf(a.name), uint64(a.token)}
		if prev, dup := tokOwner[k]; dup {
			res.violate("token %d (group %d) acknowledged to %s and to %s", a.token, k.group, prev, a.owner)
		}
		tokOwner[k] = a.owner
		if tokGroups[a.token] == nil {
			tokGroups[a.token] = map[int]bool{}
		}
		tokGroups[a.token][k.group] = true
		g := rep.grants[k]
		if g == nil || g.name != a.name || g.owner != a.owner {
			res.violate("grant of %s to %s with token %d was acknowledged but the log has no such grant at index %d of group %d", a.name, a.owner, a.token, a.token, k.group)
		}
	}
	for _, gs := range tokGroups {
		if len(gs) > 1 {
			res.crossTokens++
		}
	}
	// Tokens rise in real-time order: a grant asked for after another was
	// acknowledged has a larger token.
	byName := map[string][]chaosAcquire{}
	for _, a := range granted {
		byName[a.name] = append(byName[a.name], a)
	}
	for name, gs := range byName {
		byAck := slices.Clone(gs)
		sort.Slice(byAck, func(i, j int) bool { return byAck[i].ack.Before(byAck[j].ack) })
		bySent := slices.Clone(gs)
		sort.Slice(bySent, func(i, j int) bool { return bySent[i].sent.Before(bySent[j].sent) })
		var maxTok int64
		var maxOwner string
		j := 0
		for _, b := range bySent {
			for ; j < len(byAck) && byAck[j].ack.Before(b.sent); j++ {
				if byAck[j].token > maxTok {
					maxTok, maxOwner = byAck[j].token, byAck[j].owner
				}
			}
			if b.token <= maxTok {
				res.violate("%s: %s was granted token %d after %s had been acknowledged token %d", name, b.owner, b.token, maxOwner, maxTok)
			}
		}
	}
	// Leases end no earlier in real time than their TTL after the request was
	// sent (the log says which grants expired rather than being released).
	for name, gs := range rep.byName {
		for i := 1; i < len(gs); i++ {
			g1, g2 := gs[i-1], gs[i]
			if g1.released {
				continue
			}
			a, ok1 := byOwner[g1.owner]
			b, ok2 := byOwner[g2.owner]
			if !ok1 || !ok2 || b.token <= 0 {
				continue
			}
			if early := a.sent.Add(time.Duration(g1.ttl) * time.Millisecond).Sub(b.ack); early > 2*time.Millisecond {
				res.earlyLeases++
				if honest {
					res.violate("%s: the lease of %s (token %d, %dms, asked at %s) ended %v early: %s was granted token %d at %s",
						name, g1.owner, g1.index, g1.ttl, a.sent.Format("15:04:05.000"), early.Round(time.Millisecond), g2.owner, g2.index, b.ack.Format("15:04:05.000"))
				}
			}
		}
	}
}

// checkLinHistory runs porcupine over the register clients' history.
func checkLinHistory(recs []*linRecorder, start, end time.Time, res *chaosResult) porcupine.CheckResult {
	var history []porcupine.Operation
	last := int64(end.Sub(start))
	for _, rec := range recs {
		for _, i := range rec.unknown {
			rec.ops[i].Return = last + 1
		}
		history = append(history, rec.ops...)
	}
	if len(history) == 0 {
		return porcupine.Ok
	}
	unknown := 0
	for _, rec := range recs {
		unknown += len(rec.unknown)
	}
	res.linOps, res.linUnknown = len(history), unknown
	began := time.Now()
	r := porcupine.CheckOperationsTimeout(linModel, history, chaosLinTimeout)
	res.linTook = time.Since(began)
	if r == porcupine.Illegal {
		_, info := porcupine.CheckOperationsVerbose(linModel, history, chaosLinTimeout)
		f, err := os.CreateTemp("", "lockd-chaos-linearizability-*.html")
		path := "(no file)"
		if err == nil {
			path = f.Name()
			f.Close()
			porcupine.VisualizePath(linModel, info, path)
		}
		res.violate("the register history is not linearizable; visualization: %s", path)
	}
	return r
}

// longestGap is the longest time, between the first second and the end of
// the load, in which no client got a definite answer from the cluster.
func longestGap(acqs []chaosAcquire, recs []*linRecorder, start, end time.Time) time.Duration {
	var ts []time.Time
	for _, a := range acqs {
		if !a.unknown && (a.token > 0 || a.ack.After(a.sent)) {
			ts = append(ts, a.ack)
		}
	}
	for _, rec := range recs {
		for _, op := range rec.ops {
			if !op.Output.(linOutput).unknown {
				ts = append(ts, start.Add(time.Duration(op.Return)))
			}
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	var worst time.Duration
	prev := start.Add(time.Second)
	for _, x := range append(ts, end) {
		if x.Before(prev) {
			continue
		}
		worst = max(worst, x.Sub(prev))
		prev = x
	}
	return worst
}

// chaosTable accumulates the campaign's report.
type chaosTable struct {
	runs, violations, lost, grants int
	ops                            int64
	faults                         map[string]int
	unavailable                    time.Duration
	porcupine                      map[porcupine.CheckResult]int
	earlyUnderClockFaults          int
	handovers, realTimeRuns        int
	dead                           string
	deadOver                       time.Duration
	deadChecked                    bool
	byGroups                       map[int]int // runs by Raft groups per node
	placed                         int         // placed runs
	crossTokens                    int
	sides                          map[string]sideGaps // per fault kind, the worst of every run
}

func (tb *chaosTable) add(r *chaosResult) {
	if tb.faults == nil {
		tb.faults, tb.porcupine, tb.byGroups = map[string]int{}, map[porcupine.CheckResult]int{}, map[int]int{}
	}
	tb.runs++
	tb.byGroups[max(r.groups, 1)]++
	if r.placed {
		tb.placed++
	}
	tb.crossTokens += r.crossTokens
	tb.ops += r.ops
	tb.violations += len(r.violations)
	tb.lost += r.lost
	tb.grants += r.grants
	for k, n := range r.faults {
		tb.faults[k] += n
	}
	tb.unavailable = max(tb.unavailable, r.unavailable)
	if tb.sides == nil {
		tb.sides = map[string]sideGaps{}
	}
	for k, g := range r.sides {
		t := tb.sides[k]
		t.majority, t.minority = max(t.majority, g.majority), max(t.minority, g.minority)
		t.majorityMeasured = t.majorityMeasured || g.majorityMeasured
		t.minorityMeasured = t.minorityMeasured || g.minorityMeasured
		tb.sides[k] = t
	}
	tb.porcupine[r.linResult]++
	if !r.realTimeLint {
		tb.earlyUnderClockFaults += r.earlyLeases
	}
	tb.handovers += r.handovers
	if r.realTimeLint {
		tb.realTimeRuns++
	}
	if r.deadHolder != "" && (!tb.deadChecked || r.deadOver > tb.deadOver) {
		tb.dead, tb.deadOver, tb.deadChecked = r.deadHolder, r.deadOver, true
	}
}

func (tb *chaosTable) String() string {
	var b strings.Builder
	total := 0
	for _, n := range tb.faults {
		total += n
	}
	fmt.Fprintf(&b, "%-34s %d\n", "runs", tb.runs)
	var gs []string
	for _, g := range slices.Sorted(maps.Keys(tb.byGroups)) {
		gs = append(gs, fmt.Sprintf("%d group(s): %d", g, tb.byGroups[g]))
	}
	fmt.Fprintf(&b, "%-34s %s\n", "runs by Raft groups per node", strings.Join(gs, ", "))
	fmt.Fprintf(&b, "%-34s %d of %d (per-group markers and replays; %d tokens issued in more than one group)\n", "sharded runs", tb.runs-tb.byGroups[1], tb.runs, tb.crossTokens)
	fmt.Fprintf(&b, "%-34s %d of %d (%d nodes, -groups %d -replicas %d; member moves)\n", "placed runs", tb.placed, tb.runs, chaosPlacedNodes, chaosPlacedGroups, chaosPlacedReplicas)
	fmt.Fprintf(&b, "%-34s %d\n", "operations", tb.ops)
	fmt.Fprintf(&b, "%-34s %d (%d handed over to queued waiters, FIFO checked)\n", "grants checked against the log", tb.grants, tb.handovers)
	fmt.Fprintf(&b, "%-34s %d\n", "faults injected", total)
	for _, k := range allFaults {
		fmt.Fprintf(&b, "  %-32s %d%s\n", k, tb.faults[k], tb.sides[k])
	}
	fmt.Fprintf(&b, "%-34s %d\n", "violations", tb.violations)
	fmt.Fprintf(&b, "%-34s %d\n", "lost acknowledged updates", tb.lost)
	fmt.Fprintf(&b, "%-34s ok %d, unknown (timed out) %d, illegal %d\n", "porcupine (register)", tb.porcupine[porcupine.Ok], tb.porcupine[porcupine.Unknown], tb.porcupine[porcupine.Illegal])
	fmt.Fprintf(&b, "%-34s %v\n", "longest unavailability", tb.unavailable.Round(time.Millisecond))
	fmt.Fprintf(&b, "%-34s %d of %d runs (the others inject clock faults)\n", "runs checking leases in real time", tb.realTimeRuns, tb.runs)
	fmt.Fprintf(&b, "%-34s %d (fencing kept the resource safe)\n", "early lease ends under clock faults", tb.earlyUnderClockFaults)
	worst := "-"
	if tb.deadChecked {
		worst = tb.dead + " (closest to its bound)"
	}
	fmt.Fprintf(&b, "%-34s %s\n", "dead holder's lock free after", worst)
	return b.String()
}

// chaosEnv reads the campaign's length and seed.
func chaosEnv(t *testing.T) (time.Duration, uint64, bool) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CHAOS_SEED: %v", err)
		}
	}
	if s := os.Getenv("CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("CHAOS_DURATION: %v", err)
		}
		return d, seed, true
	}
	return 0, seed, false
}

// campaignKinds alternates between runs with and without clock faults, so
// that half the runs check leases in real time. only, when not empty (from
// CHAOS_FAULTS), keeps just those kinds, clock faults in every run. The
// placedFaults are a placed run's only.
func campaignKinds(i int, only map[string]bool, placed bool) []string {
	var out []string
	for _, k := range allFaults {
		if placedFaults[k] && !placed {
			continue
		}
		if k == fFailFsync && chaosEngine() {
			continue // a failed write halts an engine node for good (multiraft's invariant): it needs a restart the nemesis does not make
		}
		if len(only) > 0 {
			if only[k] {
				out = append(out, k)
			}
			continue
		}
		if clockFaults[k] && i%2 == 0 {
			continue
		}
		out = append(out, k)
	}
	return out
}

// chaosOnly reads CHAOS_FAULTS, a comma-separated list of fault kinds (the
// report's names) that the campaign limits itself to, to measure one kind
// (make chaos KINDS=pause-leader); empty: every kind.
func chaosOnly(t *testing.T) map[string]bool {
	only := map[string]bool{}
	for _, k := range strings.Split(os.Getenv("CHAOS_FAULTS"), ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !slices.Contains(allFaults, k) {
			t.Fatalf("CHAOS_FAULTS: no fault kind %q (kinds: %s)", k, strings.Join(allFaults, ", "))
		}
		only[k] = true
	}
	return only
}

// campaignGroups is run i's Raft groups per node: 4, 1, 1, 4, 4, 1, … With
// the node counts (3, 5, …) and the clock faults (every other run) that
// covers every combination in four runs, and the short campaign's two runs
// are one sharded (3 nodes, real-time lease checks) and one not.
func campaignGroups(i int) int {
	if (i+i/2)%2 == 0 {
		return chaosShardedGroups
	}
	return 1
}

// chaosEngine reports whether CHAOS_ENGINE=1 asks for every run's cluster
// on the node-wide Raft engine (-engine; issue 50). Placed runs are then
// left out (campaignPlaced).
func chaosEngine() bool { return os.Getenv("CHAOS_ENGINE") == "1" }

// campaignPlaced reports whether run i is a placed run: every
// chaosPlacedEvery-th run of a long campaign, and every run when only (from
// CHAOS_FAULTS) names a kind that only placed runs draw. The short campaign
// keeps its two runs (and its time); make chaos runs placed ones.
func campaignPlaced(i int, long bool, only map[string]bool) bool {
	if chaosEngine() {
		return false // a joiner's log on the engine starts at the snapshot it installed: the replay needs whole logs
	}
	for k := range only {
		if placedFaults[k] {
			return true
		}
	}
	return long && i%chaosPlacedEvery == chaosPlacedEvery-1
}

// TestChaosCampaign runs the campaign: with CHAOS_DURATION, runs until that
// much time has passed (make chaos); without, a short one of two runs.
func TestChaosCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault campaign")
	}
	total, seed, long := chaosEnv(t)
	only := chaosOnly(t)
	t.Logf("seed %d (rerun with CHAOS_SEED=%d)", seed, seed)
	runFor := 15 * time.Second
	maxRuns := 2
	if long {
		runFor, maxRuns = 15*time.Second, 1<<30
	}
	begin := time.Now()
	var tb chaosTable
	var all []string
	for i := 0; i < maxRuns; i++ {
		// A run takes about its fault time plus ~15s of start, heal and checks.
		if long && i > 0 && time.Since(begin)+runFor+15*time.Second > total {
			break
		}
		run := chaosRun{name: fmt.Sprintf("campaign-%d", i+1), nodes: 3 + 2*(i%2), groups: campaignGroups(i), faultFor: runFor, seed: seed + uint64(i),
			fenced: true, workers: 4, lin: 3, availBound: long}
		placed := campaignPlaced(i, long, only)
		if placed {
			run.nodes, run.groups, run.replicas = chaosPlacedNodes, chaosPlacedGroups, chaosPlacedReplicas
		}
		run.kinds = campaignKinds(i, only, placed)
		var r *chaosResult
		t.Run(run.name, func(t *testing.T) {
			r = runChaos(t, run)
			if len(r.violations) > 0 { // so that the run's own log is printed too
				t.Errorf("%d violations (in the campaign's report below)", len(r.violations))
			}
		})
		if r == nil {
			continue
		}
		tb.add(r)
		for _, v := range r.violations {
			all = append(all, run.name+": "+v)
		}
	}
	report := fmt.Sprintf("chaos campaign, seed %d, %v:\n%s", seed, time.Since(begin).Round(time.Second), &tb)
	t.Log("\n" + report)
	if p := os.Getenv("CHAOS_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(report), 0o644); err != nil {
			t.Errorf("CHAOS_REPORT: %v", err)
		}
	}
	for _, v := range all {
		t.Error(v)
	}
}

// TestChaosNegativeControl: with fencing switched off on the resource, pausing
// lock holders longer than their lease must lose acknowledged updates — or
// the suite could not see a lost update at all. It runs sharded (the two
// resources' locks live in different groups), so that the package's default
// run also replays a sharded cluster's logs group by group.
func TestChaosNegativeControl(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault run")
	}
	_, seed, _ := chaosEnv(t)
	r := runChaos(t, chaosRun{name: "negative-control", nodes: 3, groups: chaosShardedGroups, faultFor: 12 * time.Second, seed: seed,
		kinds: []string{fPauseClient}, fenced: false, workers: 4, lin: 1})
	if r.faults[fPauseClient] == 0 {
		t.Fatal("no lock holder was paused")
	}
	if r.lost == 0 {
		t.Errorf("fencing off and %d holders paused past their lease, yet no update was lost: the workload cannot see lost updates", r.faults[fPauseClient])
	} else {
		t.Logf("negative control: %d acknowledged updates lost without fencing (%d pauses), as expected", r.lost, r.faults[fPauseClient])
	}
	for _, v := range r.violations {
		t.Error(v) // nothing else may go wrong
	}
}

// TestChaosPlantedBugs runs lockd with a planted bug; the checks must catch it.
// They run on one group: the nemesis's "leader" is group 0's, and the
// takeover skew shows only in the group whose leader was killed.
func TestChaosPlantedBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault runs")
	}
	_, seed, _ := chaosEnv(t)
	cases := []struct {
		name  string
		extra []string
		kinds []string
	}{
		// A new leader that continues log time 4 leases ahead ends every
		// lease early in real time.
		{"takeover-skew", []string{"-planted-takeover-skew", "4s"}, []string{fDeadWithLead}},
		// A disk that acknowledges log writes before they are durable loses
		// acknowledged grants in a power failure.
		{"lying-disk", []string{"-planted-lying-disk", "1s"}, []string{fCrashAll}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runChaos(t, chaosRun{name: "planted-" + c.name, nodes: 3, faultFor: 12 * time.Second, seed: seed + uint64(i),
				kinds: c.kinds, fenced: true, workers: 4, lin: 2, extra: c.extra})
			if len(r.violations) == 0 {
				t.Errorf("planted bug %s was not caught (%v faults)", c.name, r.faults)
			} else {
				t.Logf("planted bug %s caught: %d violations, first: %s", c.name, len(r.violations), r.violations[0])
			}
		})
	}
}
