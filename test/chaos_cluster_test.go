package test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/raftstore/faultnet"
)

// chaosCluster is a lockdCluster whose peer links all run through a faultnet
// proxy (lockd's hidden -dial-via flag) and whose processes expose the fault
// endpoint (-fault-control): slow and failing log writes, clock jumps and
// rates. The flags exist only in a fault build of lockd (-tags faults, as
// TestMain builds lockdBin). Only the nemesis goroutine changes it while a
// run goes on.
type chaosCluster struct {
	*lockdCluster
	net      *faultnet.Net
	groups   int // Raft groups per node (-groups)
	replicas int // -replicas; 0: the flag is not given (every node hosts every group of a run of 3 or 5)
	// joined marks the nodes whose data directory a -join created (the
	// member-move fault): they start again with -join, never with -peers,
	// which would bootstrap on them the groups they hold no state of.
	joined map[int]bool
	extra  []string // more lockd flags (planted bugs)
	http   []string // each node's HTTP address
	via    []string // each node's -dial-via flag
	paused map[int]bool
	pmu    sync.Mutex
}

// chaosLockdFlags keep every log entry on disk (so that the replay after the
// run sees the whole log: no trailing count, and a -log-bytes no run reaches)
// while snapshots are still taken and restored. The
// number of Raft groups is the run's (-groups, see chaosCluster.groups): the
// replay reads every group's log of every replica (readReplicaLogs).
var chaosLockdFlags = []string{"-snapshot-threshold", "1024", "-trailing-logs", "1000000000", "-log-bytes", "1099511627776", "-fault-control"}

// startChaosCluster starts n nodes running groups Raft groups each (with
// replicas > 0, -replicas replicas: fewer than n places each group on that
// many nodes), every node dialing its peers through its own proxy per link,
// and waits until every group has a leader.
func startChaosCluster(t *testing.T, n, groups, replicas int, extra ...string) *chaosCluster {
	t.Helper()
	t.Setenv("LOCKD_FAULT_INJECTION", "1")
	for attempt := 1; ; attempt++ {
		fn := faultnet.New()
		cc := &chaosCluster{lockdCluster: &lockdCluster{t: t}, net: fn, groups: groups, replicas: replicas, joined: map[int]bool{},
			extra: extra, paused: map[int]bool{}}
		cc.layout(n, true)
		for _, nd := range cc.nodes {
			cc.http = append(cc.http, nd.addrs.http)
		}
		for _, a := range cc.nodes {
			var via []string
			for _, b := range cc.nodes {
				if a == b {
					continue
				}
				p, err := fn.Add(faultnet.Link{From: a.id, To: b.id}, b.addrs.peer)
				if err != nil {
					t.Fatalf("proxy %s->%s: %v", a.id, b.id, err)
				}
				via = append(via, b.addrs.peer+"="+p)
			}
			cc.via = append(cc.via, strings.Join(via, ","))
		}
		t.Cleanup(func() { fn.Close() })
		for _, nd := range cc.nodes {
			cc.spawnChaos(nd)
		}
		raced := awaitReady(t, cc.nodes)
		if raced && attempt < startTries {
			for _, nd := range cc.nodes {
				nd.proc.kill()
			}
			fn.Close()
			continue
		}
		cc.waitLeader(leaderTimeout)
		for _, nd := range cc.nodes {
			nd.up.Store(true)
		}
		return cc
	}
}

// spawnChaos starts a process for nd and returns at once: with -peers, or,
// for a node a -join created (cc.joined), with -join through another node
// (joinThrough).
func (cc *chaosCluster) spawnChaos(nd *clusterNode) {
	nd.gen++
	args := []string{"-node-id", nd.id, "-peers", cc.peers}
	if cc.joined[nd.idx] {
		args = []string{"-node-id", nd.id, "-join", cc.joinThrough(nd).addrs.resp}
	}
	args = append(args, "-dial-via", cc.via[nd.idx], "-groups", strconv.Itoa(cc.groups))
	if cc.replicas > 0 {
		args = append(args, "-replicas", strconv.Itoa(cc.replicas))
	}
	args = append(args, chaosLockdFlags...)
	args = append(args, cc.extra...)
	nd.proc = spawnLockdArgs(cc.t, fmt.Sprintf("%s.%d", nd.id, nd.gen), nd.dir, nd.addrs, args...)
	nd.procs = append(nd.procs, nd.proc)
}

// joinThrough is the member a node started with -join asks to add it: a
// running, unpaused node that was not itself joined if there is one (lockd
// retries the join until the member answers, within its ready timeout).
func (cc *chaosCluster) joinThrough(nd *clusterNode) *clusterNode {
	score := func(o *clusterNode) int {
		s := 0
		if o.proc != nil && !cc.isPaused(o) {
			s += 2
		}
		if !cc.joined[o.idx] {
			s++
		}
		return s
	}
	var best *clusterNode
	for _, o := range cc.nodes {
		if o != nd && (best == nil || score(o) > score(best)) {
			best = o
		}
	}
	return best
}

// placed reports whether the run places its groups on a subset of the
// nodes (-replicas below the node count).
func (cc *chaosCluster) placed() bool {
	return cc.replicas > 0 && cc.replicas < len(cc.nodes) && cc.groups > 1
}

// restartChaos starts a killed node again and waits (bounded) until it
// answers PING; it does not wait for it to follow (the cluster may have no
// quorum yet when several nodes are down).
func (cc *chaosCluster) restartChaos(nd *clusterNode) error {
	for attempt := 1; ; attempt++ {
		cc.spawnChaos(nd)
		err := nd.proc.waitReady(readyTimeout)
		if err == nil {
			nd.up.Store(true)
			return nil
		}
		if nd.proc.lostPortRace() && attempt < startTries {
			// Another process took a port: this start never ran, and its
			// exit is no finding (selfExits).
			nd.procs = nd.procs[:len(nd.procs)-1]
			time.Sleep(100 * time.Millisecond) // back-off before the next attempt, not synchronisation
			continue
		}
		return fmt.Errorf("%s: %v", nd.proc.name, err)
	}
}

// pause sends SIGSTOP (on) or SIGCONT (off) to nd's process.
func (cc *chaosCluster) pause(nd *clusterNode, on bool) {
	sig := syscall.SIGCONT
	if on {
		sig = syscall.SIGSTOP
	}
	if nd.proc != nil {
		nd.proc.cmd.Process.Signal(sig)
	}
	cc.pmu.Lock()
	cc.paused[nd.idx] = on
	cc.pmu.Unlock()
}

func (cc *chaosCluster) isPaused(nd *clusterNode) bool {
	cc.pmu.Lock()
	defer cc.pmu.Unlock()
	return cc.paused[nd.idx]
}

// setFaults posts name=value pairs to nd's fault endpoint.
func (cc *chaosCluster) setFaults(nd *clusterNode, kv ...string) error {
	if nd.proc == nil {
		return fmt.Errorf("%s is down", nd.id)
	}
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	hc := &http.Client{Timeout: infoTimeout}
	res, err := hc.Post("http://"+cc.http[nd.idx]+"/debug/faults?"+q.Encode(), "", nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: POST /debug/faults?%s: %s %s", nd.id, q.Encode(), res.Status, body)
	}
	return nil
}

// currentLeader asks every running, unpaused node at once (INFO raft) and
// returns the node that leads group 0 with the highest term — the nemesis's
// "leader" — provided every group has a node that says it leads; nil
// otherwise. With one group that is the cluster's one leader.
func (cc *chaosCluster) currentLeader() *clusterNode {
	type view struct {
		nd   *clusterNode
		term int
	}
	var mu sync.Mutex
	best := make([]view, cc.groups) // per group: the leader with the highest term
	var wg sync.WaitGroup
	for _, nd := range cc.running() {
		if cc.isPaused(nd) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := raftInfo(nd.addrs.resp)
			if err != nil {
				return
			}
			gs := chaosGroupStats(info, cc.groups)
			mu.Lock()
			defer mu.Unlock()
			for g, st := range gs {
				if st == nil || st["state"] != "leader" {
					continue
				}
				term, _ := strconv.Atoi(st["term"])
				if best[g].nd == nil || term > best[g].term {
					best[g] = view{nd, term}
				}
			}
		}()
	}
	wg.Wait()
	for _, v := range best {
		if v.nd == nil {
			return nil
		}
	}
	return best[0].nd
}

// chaosGroupStats reads INFO raft's per-group lines
// (raft_group_N:state=…,leader=…,term=…,applied_index=…) for groups 0 to
// groups-1; a group whose line is missing is nil.
func chaosGroupStats(info map[string]string, groups int) []map[string]string {
	out := make([]map[string]string, groups)
	for g := range out {
		line, ok := info["raft_group_"+strconv.Itoa(g)]
		if !ok {
			continue
		}
		out[g] = map[string]string{}
		for _, kv := range strings.Split(line, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[g][k] = v
			}
		}
	}
	return out
}

// awaitSettled waits, at most bound, until every node runs, none is paused,
// and every running node has named the same leader of every group
// (lockdCluster.groupLeaders) for settle: the previous fault's recovery (a
// restart catching up, leaders spread back to their preferred nodes) is
// over. It reports whether that happened in time.
func (cc *chaosCluster) awaitSettled(settle, bound time.Duration) bool {
	var last []*clusterNode
	var since time.Time
	return clustertest.Until(bound, pollEvery, func() bool {
		var cur []*clusterNode
		if len(cc.running()) == len(cc.nodes) && !slices.ContainsFunc(cc.nodes, cc.isPaused) {
			cur, _ = cc.groupLeaders()
		}
		if cur == nil || !slices.Equal(cur, last) {
			last, since = cur, time.Now()
			return false
		}
		return time.Since(since) >= settle
	})
}

// awaitLeader polls currentLeader until bound.
func (cc *chaosCluster) awaitLeader(bound time.Duration) *clusterNode {
	var l *clusterNode
	clustertest.Until(bound, pollEvery, func() bool {
		l = cc.currentLeader()
		return l != nil
	})
	return l
}

// cut partitions the nodes into the given sides: every link between nodes of
// different sides is set to mode; links within a side stay as they are.
func (cc *chaosCluster) cut(mode faultnet.Mode, sides ...[]*clusterNode) {
	side := map[string]int{}
	for i, s := range sides {
		for _, nd := range s {
			side[nd.id] = i
		}
	}
	var ls []faultnet.Link
	for _, l := range cc.net.Links() {
		if side[l.From] != side[l.To] {
			ls = append(ls, l)
		}
	}
	cc.net.Set(mode, 0, ls...)
}

// cutPairs cuts the links between the given pairs of nodes (both directions).
func (cc *chaosCluster) cutPairs(mode faultnet.Mode, pairs [][2]*clusterNode) {
	var ls []faultnet.Link
	for _, p := range pairs {
		ls = append(ls, faultnet.Link{From: p[0].id, To: p[1].id}, faultnet.Link{From: p[1].id, To: p[0].id})
	}
	cc.net.Set(mode, 0, ls...)
}

// appliedTokens reads, for each of nd's groups, the logical index of the last
// command its state machine applied (INFO raft's applied_token): what a
// final marker's token is compared with; and each group's state there
// ("remote" for a group nd does not host: its token means nothing).
func (cc *chaosCluster) appliedTokens(nd *clusterNode) ([]uint64, []string, error) {
	info, err := raftInfo(nd.addrs.resp)
	if err != nil {
		return nil, nil, err
	}
	out, states := make([]uint64, cc.groups), make([]string, cc.groups)
	for g, st := range chaosGroupStats(info, cc.groups) {
		if st == nil {
			return nil, nil, fmt.Errorf("INFO raft on %s has no line for group %d", nd.id, g)
		}
		states[g] = st["state"]
		if out[g], err = strconv.ParseUint(st["applied_token"], 10, 64); err != nil {
			return nil, nil, fmt.Errorf("INFO raft on %s, group %d: applied_token: %w", nd.id, g, err)
		}
	}
	return out, states, nil
}

// replicasOf counts the groups whose voters include id.
func replicasOf(view []groupState, id string) int {
	n := 0
	for _, g := range view {
		if slices.Contains(g.members, id) {
			n++
		}
	}
	return n
}

// awaitPlacement waits, at most bound, until every node runs unpaused and
// every one shows the same voters of every group, cc.replicas of them, no
// move under way and ok(view) (nil: any), unchanged for settle; it returns
// that view, or nil and what it saw last. Leaders may change meanwhile (the
// balancer spreads them).
func (cc *chaosCluster) awaitPlacement(settle, bound time.Duration, ok func([]groupState) bool) ([]groupState, string) {
	var view []groupState
	var last string
	var since time.Time
	key := ""
	done := clustertest.Until(bound, pollEvery, func() bool {
		cur, why := cc.placementNow()
		if cur != nil && ok != nil && !ok(cur) {
			cur, why = nil, "not yet: "+placementString(cur)
		}
		if cur == nil {
			view, last, key = nil, why, ""
			return false
		}
		if k := placementString(cur); k != key {
			key, since = k, time.Now()
		}
		view, last = cur, key
		return time.Since(since) >= settle
	})
	if !done {
		return nil, last
	}
	return view, ""
}

// placementNow is the placement every node agrees on now (see
// awaitPlacement), or nil and why not.
func (cc *chaosCluster) placementNow() ([]groupState, string) {
	if len(cc.running()) != len(cc.nodes) || slices.ContainsFunc(cc.nodes, cc.isPaused) {
		return nil, "a node is down or paused"
	}
	var view []groupState
	for _, nd := range cc.nodes {
		gs, err := raftGroups(nd.addrs.resp)
		if err != nil {
			return nil, nd.id + ": " + err.Error()
		}
		if len(gs) != cc.groups {
			return nil, fmt.Sprintf("%s lists %d groups", nd.id, len(gs))
		}
		for g, v := range gs {
			if v.moving != "" {
				return nil, fmt.Sprintf("%s: group %d moving %s", nd.id, g, v.moving)
			}
			if len(v.members) != cc.replicas {
				return nil, fmt.Sprintf("%s: group %d has voters %v", nd.id, g, v.members)
			}
			if view != nil && !slices.Equal(v.members, view[g].members) {
				return nil, fmt.Sprintf("%s: group %d has voters %v, %s says %v", nd.id, g, v.members, cc.nodes[0].id, view[g].members)
			}
		}
		if view == nil {
			view = gs
		}
	}
	return view, ""
}

// placementString is a view's voters, group by group.
func placementString(view []groupState) string {
	parts := make([]string, len(view))
	for g, v := range view {
		parts[g] = fmt.Sprintf("g%d:%s", g, strings.Join(v.members, ","))
	}
	return strings.Join(parts, " ")
}

// groupZeroMembers is group 0's configuration as addr's RAFT MEMBERS lists
// it (every node of the cluster, voter or not).
func groupZeroMembers(addr string) ([]string, error) {
	c, err := dialRESP(addr, infoTimeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	r, err := c.do("RAFT", "MEMBERS")
	if err != nil {
		return nil, err
	}
	if r.kind != '*' {
		return nil, fmt.Errorf("RAFT MEMBERS answered %v", r)
	}
	var out []string
	for _, m := range r.elems {
		out = append(out, fields(m)["id"].str)
	}
	return out, nil
}
