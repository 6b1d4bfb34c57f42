package test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/raftstore/faultnet"
)

// The nemesis: on a seeded random schedule it injects one fault at a time,
// holds it a while, heals it, and waits for the cluster to have a leader
// again before the next one.

// Fault kinds.
const (
	fKillLeader   = "kill-leader"
	fKillFollower = "kill-follower"
	fCrashAll     = "crash-all" // every node at once: a power failure
	fPauseLeader  = "pause-leader"
	fPauseClient  = "pause-client" // SIGSTOP a worker that holds a lock, longer than its lease
	fPartition    = "partition"    // a random minority from the majority
	fIsolateLead  = "isolate-leader"
	fBridge       = "bridge" // two halves that only one node sees both of
	fDelay        = "delay"
	fSlowFsync    = "slow-fsync"
	fFailFsync    = "fail-fsync"
	fClockJump    = "clock-jump"
	fClockRate    = "clock-rate"
	fDeadHolder   = "dead-holder" // a lock holder dies: how long is its lock taken?
	fDeadWithLead = "dead-holder+leader"
	// A node of a placed run leaves and comes back empty: RAFT REMOVE (its
	// replicas re-created elsewhere first), kill, data wiped, -join.
	fMemberMove = "member-move"
)

// allFaults is every kind, in the order of the report's columns.
var allFaults = []string{fKillLeader, fKillFollower, fCrashAll, fPauseLeader, fPauseClient, fPartition,
	fIsolateLead, fBridge, fDelay, fSlowFsync, fFailFsync, fClockJump, fClockRate, fDeadHolder, fDeadWithLead, fMemberMove}

// placedFaults are the kinds only a placed run (chaosPlacedNodes nodes,
// -replicas chaosPlacedReplicas) draws from.
var placedFaults = map[string]bool{fMemberMove: true}

// clockFaults end leases early in real time (that is the fault): runs that
// inject them skip the real-time lease check.
var clockFaults = map[string]bool{fClockJump: true, fClockRate: true}

const (
	deadTTL        = 3000             // ms: the lease of a dead holder's lock (longer than an election)
	deadSlack      = time.Second      // probe polling, the tick, a loaded machine
	recoverTimeout = 30 * time.Second // a leader after a fault is healed
	// A bounded fault waits up to settleWait for every group to keep its
	// leader for settleFor before it is injected (nemesis.run).
	settleFor  = time.Second
	settleWait = 5 * time.Second
	// member-move's bounds: RAFT REMOVE drains the node (lockd gives up
	// after 4 minutes; a retry after a lost leadership may take as long),
	// its replicas are then gone from every node's view, and the balancer
	// gives the node that joined again its share.
	memberDrainBound = 5 * time.Minute
	memberGoneBound  = 30 * time.Second
	memberJoinBound  = 2 * time.Minute
)

type nemesis struct {
	cc      *chaosCluster
	rng     *rand.Rand
	workers []*chaosWorker
	logf    func(format string, args ...any)

	mu         sync.Mutex
	counts     map[string]int
	violations []string
	deadOver   time.Duration // the most a dead holder's lock stayed taken beyond its bound (negative: within)
	deadWorst  string        // that case, "freed after of bound"
	deadSeq    int
	windows    []faultWindow // each fault injected, for the availability report (chaos_avail_test.go)
	// clockStall is when log time may move again after a backward clock
	// jump: a leader's log time never goes back, so it stands still until
	// the jumped clock has caught up (raftstore's logClock), and every lease
	// runs that much longer in real time.
	clockStall time.Time
}

func (n *nemesis) violate(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.violations = append(n.violations, fmt.Sprintf(format, args...))
}

func (n *nemesis) count(kind string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.counts[kind]++
}

// hold waits for a random duration in [lo, hi): the fault's length.
func (n *nemesis) hold(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(n.rng.Int64N(int64(hi-lo)))) // the fault lasts this long: it is the experiment
}

func (n *nemesis) pick(nodes []*clusterNode) *clusterNode { return nodes[n.rng.IntN(len(nodes))] }

func (n *nemesis) followers(leader *clusterNode) []*clusterNode {
	var out []*clusterNode
	for _, nd := range n.cc.running() {
		if nd != leader {
			out = append(out, nd)
		}
	}
	return out
}

func (n *nemesis) mode() faultnet.Mode {
	if n.rng.IntN(2) == 0 {
		return faultnet.Drop
	}
	return faultnet.Reset
}

// run injects faults from kinds until the deadline. It runs on the test's
// goroutine (it starts and kills processes). A member-move, one kind among
// many and the longest, is injected once half the time has passed if the
// draw has not brought one yet, so that every placed run moves a member.
func (n *nemesis) run(kinds []string, deadline time.Time) {
	half := time.Now().Add(time.Until(deadline) / 2)
	for time.Now().Before(deadline) {
		kind := kinds[n.rng.IntN(len(kinds))]
		n.mu.Lock()
		moved := n.counts[fMemberMove] > 0
		n.mu.Unlock()
		if !moved && slices.Contains(kinds, fMemberMove) && time.Now().After(half) {
			kind = fMemberMove
		}
		leader := n.cc.awaitLeader(recoverTimeout)
		if leader == nil {
			n.violate("no leader within %v before injecting %s", recoverTimeout, kind)
			return
		}
		// A bounded fault's availability is measured from a settled cluster
		// only (a single fault, as the bound means it); one that finds the
		// previous fault's recovery still going is injected all the same.
		settled := boundedFaults[kind] && n.cc.awaitSettled(settleFor, settleWait)
		if settled {
			if leader = n.cc.awaitLeader(recoverTimeout); leader == nil {
				n.violate("no leader within %v before injecting %s", recoverTimeout, kind)
				return
			}
		}
		if n.inject(kind, leader, settled) {
			n.count(kind)
		}
		if n.cc.awaitLeader(recoverTimeout) == nil {
			n.violate("no leader within %v after healing %s", recoverTimeout, kind)
			return
		}
		n.hold(100*time.Millisecond, 600*time.Millisecond) // a quiet gap between faults
	}
}

// restartAll starts every node that is down; it reports failures as
// violations. The nodes a -join created start last, so that the member they
// join through runs.
func (n *nemesis) restartAll() {
	for _, joined := range []bool{false, true} {
		for _, nd := range n.cc.nodes {
			if nd.proc == nil && n.cc.joined[nd.idx] == joined {
				if err := n.cc.restartChaos(nd); err != nil {
					n.violate("restart: %v", err)
				}
			}
		}
	}
}

// inject applies one fault, holds it and heals it. It reports whether the
// fault was injected.
func (n *nemesis) inject(kind string, leader *clusterNode, settled bool) bool {
	w := faultWindow{kind: kind, start: time.Now(), settled: settled}
	if !n.apply(kind, leader, &w) {
		return false
	}
	w.end = time.Now()
	n.mu.Lock()
	n.windows = append(n.windows, w)
	n.mu.Unlock()
	return true
}

// apply is inject's fault: it sets win.minority to the nodes it cuts off from
// the majority (or stops), if any.
func (n *nemesis) apply(kind string, leader *clusterNode, win *faultWindow) bool {
	cc := n.cc
	switch kind {
	case fKillLeader, fKillFollower:
		target := leader
		if kind == fKillFollower {
			target = n.pick(n.followers(leader))
		}
		n.logf("kill -9 %s", target.id)
		win.minority = []int{target.idx}
		cc.kill(target)
		n.hold(300*time.Millisecond, 1500*time.Millisecond)
		n.restartAll()
	case fCrashAll:
		n.logf("kill -9 every node")
		for _, nd := range cc.running() {
			cc.kill(nd)
		}
		n.hold(200*time.Millisecond, time.Second)
		n.restartAll()
	case fPauseLeader:
		n.logf("SIGSTOP leader %s", leader.id)
		win.minority = []int{leader.idx}
		cc.pause(leader, true)
		n.hold(time.Second, 3*time.Second)
		cc.pause(leader, false)
	case fPauseClient:
		var holding []*chaosWorker
		deadline := time.Now().Add(2 * time.Second)
		for len(holding) == 0 && time.Now().Before(deadline) {
			for _, w := range n.workers {
				if w.isHolding() {
					holding = append(holding, w)
				}
			}
			if len(holding) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		if len(holding) == 0 {
			return false
		}
		w := holding[n.rng.IntN(len(holding))]
		n.logf("SIGSTOP worker %d (holds a lock)", w.id)
		w.pause(true)
		n.hold(2*chaosTTL*time.Millisecond, 3*chaosTTL*time.Millisecond)
		w.pause(false)
	case fPartition:
		nodes := append([]*clusterNode(nil), cc.nodes...)
		n.rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		k := 1 + n.rng.IntN((len(nodes)-1)/2)
		m := n.mode()
		n.logf("partition %v | %v (%s)", ids(nodes[:k]), ids(nodes[k:]), m)
		for _, nd := range nodes[:k] {
			win.minority = append(win.minority, nd.idx)
		}
		// Two nodes of a placed run may hold two of a group's three voters:
		// that group waits for the heal, and the majority side's bound
		// does not hold.
		win.unbounded = cc.placed() && 2*k >= cc.replicas
		cc.cut(m, nodes[:k], nodes[k:])
		n.hold(500*time.Millisecond, 3*time.Second)
		cc.net.Heal()
	case fIsolateLead:
		m := n.mode()
		n.logf("isolate leader %s (%s)", leader.id, m)
		win.minority = []int{leader.idx}
		cc.cut(m, []*clusterNode{leader}, n.followers(leader))
		n.hold(500*time.Millisecond, 3*time.Second)
		cc.net.Heal()
	case fBridge:
		nodes := append([]*clusterNode(nil), cc.nodes...)
		n.rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		bridge, rest := nodes[0], nodes[1:]
		half := len(rest) / 2
		var pairs [][2]*clusterNode
		for _, a := range rest[:half] {
			for _, b := range rest[half:] {
				pairs = append(pairs, [2]*clusterNode{a, b})
			}
		}
		m := n.mode()
		n.logf("bridge: %v | %v, only %s sees both (%s)", ids(rest[:half]), ids(rest[half:]), bridge.id, m)
		cc.cutPairs(m, pairs)
		n.hold(500*time.Millisecond, 3*time.Second)
		cc.net.Heal()
	case fDelay:
		d := time.Duration(10+n.rng.IntN(90)) * time.Millisecond
		n.logf("delay every link by %v", d)
		cc.net.Set(faultnet.Open, d, cc.net.Links()...)
		n.hold(500*time.Millisecond, 3*time.Second)
		cc.net.Heal()
	case fSlowFsync, fFailFsync:
		target := leader
		if n.rng.IntN(2) == 0 {
			target = n.pick(cc.running())
		}
		on, off := []string{"fsync_delay", fmt.Sprintf("%dms", 20+n.rng.IntN(280))}, []string{"fsync_delay", "0s"}
		lo, hi := 500*time.Millisecond, 3*time.Second
		if kind == fFailFsync {
			on, off = []string{"fsync_fail", "true"}, []string{"fsync_fail", "false"}
			lo, hi = 300*time.Millisecond, 2*time.Second
		}
		n.logf("%s on %s: %s=%s", kind, target.id, on[0], on[1])
		if err := cc.setFaults(target, on...); err != nil {
			n.logf("%s: %v", kind, err)
			return false
		}
		n.hold(lo, hi)
		if err := cc.setFaults(target, off...); err != nil {
			n.violate("%s: clearing the fault on %s: %v", kind, target.id, err)
		}
	case fClockJump:
		d := time.Duration(500+n.rng.IntN(2500)) * time.Millisecond
		if n.rng.IntN(10) < 3 {
			d = -d
		}
		n.logf("clock jump %v on leader %s", d, leader.id)
		if err := cc.setFaults(leader, "clock_jump", d.String()); err != nil {
			n.logf("%s: %v", kind, err)
			return false
		}
		if d < 0 {
			n.mu.Lock()
			if until := time.Now().Add(-d); until.After(n.clockStall) {
				n.clockStall = until
			}
			n.mu.Unlock()
		}
	case fClockRate:
		rates := []string{"0.25", "0.5", "2", "3"}
		r := rates[n.rng.IntN(len(rates))]
		n.logf("clock rate %s on leader %s", r, leader.id)
		if err := cc.setFaults(leader, "clock_rate", r); err != nil {
			n.logf("%s: %v", kind, err)
			return false
		}
		n.hold(500*time.Millisecond, 3*time.Second)
		if leader.proc != nil {
			if err := cc.setFaults(leader, "clock_rate", "1"); err != nil {
				n.violate("%s: resetting the rate on %s: %v", kind, leader.id, err)
			}
		}
	case fDeadHolder, fDeadWithLead:
		return n.deadHolder(leader, kind == fDeadWithLead)
	case fMemberMove:
		return n.memberMove(leader, win)
	default:
		panic("unknown fault " + kind)
	}
	return true
}

// deadHolder is workload (4): a client takes a lock with a lease of deadTTL
// and dies (it never releases), with the leader when withLeader. The lock must
// be free again within the lease, plus the election when the leader died
// (measured: the time no probe was answered) — and not before the lease has
// run out in real time (the clocks are honest while this runs).
func (n *nemesis) deadHolder(leader *clusterNode, withLeader bool) bool {
	cc := n.cc
	n.deadSeq++
	name := "chaos:dead:" + strconv.Itoa(n.deadSeq)
	c, err := dialRESP(leader.addrs.resp, opTimeout)
	if err != nil {
		return false
	}
	sent := time.Now()
	r, err := c.do("SET", name, "holder", "NX", "PX", strconv.Itoa(deadTTL), "FENCE")
	ack := time.Now()
	c.close() // the holder is gone
	if err != nil || r.kind != ':' {
		return false
	}
	nc := &nodeConn{cl: cc.lockdCluster, home: n.rng.IntN(len(cc.nodes))}
	defer nc.close()
	if withLeader {
		cc.kill(leader)
	}
	// Probe until the lock is granted. A probe the cluster answers (nil: still
	// held) shows a serving leader; the gaps between answers are the
	// elections (one, usually, after the leader died), during which log time
	// stands still and the lease with it.
	const poll = 20 * time.Millisecond
	lastServed := ack
	var election, freed time.Duration
	deadline := ack.Add(deadTTL*time.Millisecond + recoverTimeout)
	for {
		r, _, err := nc.do("SET", name, "probe", "NX", "PX", "1000", "FENCE")
		at := time.Now()
		if err == nil && (r.kind == ':' || r.null) {
			if gap := at.Sub(lastServed); gap > 5*poll {
				election += gap - poll
			}
			lastServed = at
		}
		if err == nil && r.kind == ':' {
			freed = at.Sub(ack)
			if early := sent.Add(deadTTL * time.Millisecond).Sub(at); early > 0 {
				n.violate("%s: a dead holder's lock (lease %dms) was granted again %v before its lease could have ended",
					name, deadTTL, early.Round(time.Millisecond))
			}
			break
		}
		if err != nil || isRetryable(r) {
			nc.close()
		}
		if at.After(deadline) {
			freed = at.Sub(ack)
			break
		}
		time.Sleep(poll) // the probe's polling interval
	}
	n.mu.Lock()
	stall := max(0, n.clockStall.Sub(sent)) // log time stood still after a backward clock jump
	n.mu.Unlock()
	bound := time.Duration(deadTTL)*time.Millisecond + election + stall + deadSlack
	n.logf("%s: dead holder's lock free after %v (bound %v; leader died: %v, no leader served for %v, log time stalled by a clock jump for %v)",
		name, freed.Round(time.Millisecond), bound.Round(time.Millisecond), withLeader, election.Round(time.Millisecond), stall.Round(time.Millisecond))
	if freed > bound {
		n.violate("%s: a dead holder's lock stayed taken %v, more than the lease %dms + elections %v + clock stall %v + %v",
			name, freed.Round(time.Millisecond), deadTTL, election.Round(time.Millisecond), stall.Round(time.Millisecond), deadSlack)
	}
	n.mu.Lock()
	if over := freed - bound; n.deadWorst == "" || over > n.deadOver {
		n.deadOver, n.deadWorst = over, fmt.Sprintf("%v of %v", freed.Round(time.Millisecond), bound.Round(time.Millisecond))
	}
	n.mu.Unlock()
	if withLeader {
		n.restartAll()
	}
	return true
}

func ids(nodes []*clusterNode) []string {
	out := make([]string, len(nodes))
	for i, nd := range nodes {
		out[i] = nd.id
	}
	return out
}

// memberMove is the member-move fault of a placed run, while the load goes
// on: RAFT REMOVE, through group 0's leader, of a random node that does not
// lead group 0 (lockd drains it: its replicas are re-created on the others
// first, then it leaves group 0); once no node lists it in any group, it is
// killed, its data directory wiped, and it starts again with -join on the same
// id and addresses; the fault ends when every node sees the balancer's
// placement with the node holding its share of replicas again. A step that
// does not happen within its bound (memberDrainBound, memberGoneBound,
// memberJoinBound) is a violation; a node that did not leave every group is
// not wiped (it would come back as an empty voter) but left running.
func (n *nemesis) memberMove(leader *clusterNode, win *faultWindow) bool {
	cc := n.cc
	if !cc.placed() {
		return false
	}
	var cands []*clusterNode
	for _, nd := range n.followers(leader) {
		if !cc.isPaused(nd) {
			cands = append(cands, nd)
		}
	}
	if len(cands) < 2 || len(cc.running()) != len(cc.nodes) {
		return false
	}
	target := n.pick(cands)
	win.minority = []int{target.idx}
	began := time.Now()
	n.logf("member-move: RAFT REMOVE %s (drain) through %s", target.id, leader.id)
	if err := n.removeNode(target); err != nil {
		n.violate("member-move: %v", err)
		return true
	}
	drained := time.Since(began)
	// Gone from every group in every node's view (the others' views of the
	// groups they do not host come from their members, refreshed every 2 s).
	var why string
	gone := clustertest.Until(memberGoneBound, pollEvery, func() bool {
		for _, nd := range cc.running() {
			if nd == target {
				continue
			}
			view, err := raftGroups(nd.addrs.resp)
			if err != nil {
				why = nd.id + ": " + err.Error()
				return false
			}
			if k := replicasOf(view, target.id); k > 0 {
				why = fmt.Sprintf("%s sees %s as a voter of %d groups: %s", nd.id, target.id, k, placementString(view))
				return false
			}
			ms, err := groupZeroMembers(nd.addrs.resp)
			if err != nil {
				why = nd.id + ": " + err.Error()
				return false
			}
			if slices.Contains(ms, target.id) {
				why = fmt.Sprintf("%s still lists %s in group 0 (%v)", nd.id, target.id, ms)
				return false
			}
		}
		return true
	})
	if !gone {
		n.violate("member-move: RAFT REMOVE %s answered OK after %v, yet %v later: %s", target.id, drained.Round(time.Millisecond), memberGoneBound, why)
		return true
	}
	n.logf("member-move: %s drained and removed in %v; kill -9, wipe %s, start with -join", target.id, drained.Round(time.Millisecond), target.dir)
	cc.kill(target)
	if err := os.RemoveAll(target.dir); err != nil {
		n.violate("member-move: wiping %s: %v", target.dir, err)
		return true
	}
	cc.joined[target.idx] = true
	if err := cc.restartChaos(target); err != nil {
		n.violate("member-move: %v", err)
		return true
	}
	share := cc.groups * cc.replicas / len(cc.nodes)
	joinedAt := time.Now()
	view, last := cc.awaitPlacement(time.Second, memberJoinBound, func(v []groupState) bool { return replicasOf(v, target.id) >= share })
	if view == nil {
		n.violate("member-move: %s joined again but does not hold %d replicas of a settled placement within %v (last: %s)", target.id, share, memberJoinBound, last)
		return true
	}
	n.logf("member-move: %s holds %d replicas again %v after it joined (whole move %v): %s",
		target.id, replicasOf(view, target.id), time.Since(joinedAt).Round(time.Millisecond), time.Since(began).Round(time.Millisecond), placementString(view))
	return true
}

// removeNode runs RAFT REMOVE of target until it answers OK, or "no such
// node" (an earlier try that lost its answer removed it), within
// memberDrainBound; each try goes to the node that leads group 0 then (the
// drain runs on it), and one that fails (a leadership lost on the way) is
// tried again.
func (n *nemesis) removeNode(target *clusterNode) error {
	deadline := time.Now().Add(memberDrainBound)
	for {
		via := n.cc.currentLeader()
		if via == nil || via == target {
			for _, nd := range n.cc.running() {
				if nd != target && !n.cc.isPaused(nd) {
					via = nd
					break
				}
			}
		}
		var r reply
		var err error
		c, err := dialRESP(via.addrs.resp, time.Until(deadline)+time.Second)
		if err == nil {
			r, err = c.do("RAFT", "REMOVE", target.id)
			c.close()
		}
		switch {
		case err == nil && !r.isErr():
			return nil
		case err == nil && strings.Contains(r.str, "no such node"):
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("RAFT REMOVE %s did not complete within %v (last answer %v, %v)", target.id, memberDrainBound, r, err)
		}
		n.logf("member-move: RAFT REMOVE %s through %s: %v %v; trying again", target.id, via.id, r, err)
		time.Sleep(time.Second) // back-off before the next try, not synchronisation
	}
}
