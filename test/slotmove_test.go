package test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Slot moves under load: bounds.
const (
	moveGroups      = 4
	moveWorkers     = 8
	moveNames       = 20
	moveHeld        = 5
	movePhaseGrants = 150  // grants in each phase: before the first move, between moves, after the last
	moveMaxOps      = 4000 // acquires per worker, at most
	moveLeaseMs     = 5000
)

// moveGrant is one granted LOCK.ACQUIRE, logged right after its reply.
type moveGrant struct {
	name   string
	tok    int64
	worker int
	at     time.Time
}

// moveLog is the workers' shared history: grants in the order their replies
// were logged (one mutex), and every unexpected reply.
type moveLog struct {
	mu     sync.Mutex
	grants []moveGrant
	errs   []string
	n      atomic.Int64 // len(grants)
}

func (l *moveLog) grant(g moveGrant) {
	l.mu.Lock()
	l.grants = append(l.grants, g)
	l.mu.Unlock()
	l.n.Add(1)
}

func (l *moveLog) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

// moveWorker acquires and releases the names through one node until stop,
// logging every grant. A name's next grant can only follow the release of
// its previous one, which follows the logging of that grant, so the log holds
// each name's grants in grant order.
func moveWorker(id int, nd *clusterNode, names []string, l *moveLog, stop *atomic.Bool) {
	c, err := dialRESP(nd.addrs.resp, clusterOpTimeout)
	if err != nil {
		l.fail("worker %d: dial %s: %v", id, nd.id, err)
		return
	}
	defer c.close()
	rng := rand.New(rand.NewPCG(uint64(id), 0x6d6f7665))
	owner := fmt.Sprintf("w%d", id)
	for op := 0; op < moveMaxOps && !stop.Load(); op++ {
		name := names[rng.IntN(len(names))]
		r, err := c.do("LOCK.ACQUIRE", name, owner, "PX", strconv.Itoa(moveLeaseMs))
		switch {
		case err != nil:
			l.fail("worker %d: LOCK.ACQUIRE %s via %s: %v", id, name, nd.id, err)
			return
		case r.null:
			continue // held by another worker
		case r.kind != ':':
			l.fail("worker %d: LOCK.ACQUIRE %s via %s = %v", id, name, nd.id, r)
			continue
		}
		granted := time.Now()
		l.grant(moveGrant{name: name, tok: r.n, worker: id, at: granted})
		rr, err := c.do("LOCK.RELEASE", name, strconv.FormatInt(r.n, 10))
		switch {
		case err != nil:
			l.fail("worker %d: LOCK.RELEASE %s %d via %s: %v", id, name, r.n, nd.id, err)
			return
		case rr.kind != ':' || rr.n != 1:
			l.fail("worker %d: LOCK.RELEASE %s %d via %s = %v, %v after the grant (lease %d ms); want 1", id, name, r.n, nd.id,
				rr, time.Since(granted).Round(time.Millisecond), moveLeaseMs)
		}
	}
}

// TestSlotMoveUnderLoad moves one slot between the groups of a three-node,
// four-group cluster three times (to a second group, back, to a third) while
// eight clients acquire and release twenty names in it and five long leases
// are held there. No client sees an error, each name's tokens grow in grant
// order across every move (the target's tokens start above the source's),
// the long leases keep their tokens, and every node routes the slot to its
// final group.
func TestSlotMoveUnderLoad(t *testing.T) {
	testStart := time.Now()
	cl := startCluster(t, 3, "-groups", strconv.Itoa(moveGroups))
	admin := cl.nodes[0].proc.conn()
	admin.timeout = clusterOpTimeout

	var names, held []string
	for i := range moveNames {
		names = append(names, fmt.Sprintf("{m}%d", i))
	}
	for i := range moveHeld {
		held = append(held, fmt.Sprintf("{m}held%d", i))
	}
	slot := keySlot(t, admin, names[0])
	for _, k := range append(slices.Clone(names), held...) {
		if s := keySlot(t, admin, k); s != slot {
			t.Fatalf("CLUSTER KEYSLOT %s = %d, want %d (the hash tag {m})", k, s, slot)
		}
	}
	src := keyGroups(t, cl.nodes[0].addrs.resp, names[0])[names[0]]
	route := []int{(src + 1) % moveGroups, src, (src + 2) % moveGroups}
	before, err := raftGroups(cl.nodes[0].addrs.resp)
	if err != nil || len(before) != moveGroups {
		t.Fatalf("RAFT GROUPS = %+v, %v; want %d groups", before, err, moveGroups)
	}
	info, err := raftInfo(cl.nodes[0].addrs.resp)
	if err != nil {
		t.Fatal(err)
	}
	version, _ := strconv.ParseInt(info["shard_map_version"], 10, 64)
	t.Logf("slot %d is in group %d; moving it to %v (shard map version %d)", slot, src, route, version)

	heldTok := map[string]int64{}
	for _, k := range held {
		heldTok[k] = mustInt(t, admin, "LOCK.ACQUIRE", k, "keeper", "PX", "600000")
	}

	l := &moveLog{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := range moveWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			moveWorker(i, cl.nodes[i%len(cl.nodes)], names, l, &stop)
		}()
	}
	stopped := false
	stopLoad := func() {
		if stopped {
			return
		}
		stopped = true
		stop.Store(true)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * clusterOpTimeout):
			t.Errorf("workers still running %v after the load was told to stop", 2*clusterOpTimeout)
		}
	}
	defer stopLoad()
	waitGrants := func(what string) {
		t.Helper()
		target := l.n.Load() + movePhaseGrants
		deadline := time.Now().Add(clusterProgress)
		for l.n.Load() < target {
			if time.Now().After(deadline) {
				l.mu.Lock()
				errs := strings.Join(l.errs, "\n")
				l.mu.Unlock()
				t.Fatalf("%s: fewer than %d grants within %v (%d in all); errors:\n%s", what, movePhaseGrants, clusterProgress, l.n.Load(), errs)
			}
			time.Sleep(pollEvery)
		}
	}

	waitGrants("before the first move")
	for i, g := range route {
		s := strconv.FormatInt(slot, 10)
		at := time.Now()
		r, err := admin.do("RAFT", "MOVESLOTS", s, s, strconv.Itoa(g))
		if err != nil || r.kind != ':' || r.n != 1 {
			t.Fatalf("move %d: RAFT MOVESLOTS %s %s %d = %v, %v; want 1 (slot moved)", i+1, s, s, g, r, err)
		}
		t.Logf("move %d: slot %d to group %d took %v; %d grants so far", i+1, slot, g, time.Since(at).Round(time.Millisecond), l.n.Load())
		waitGrants(fmt.Sprintf("after move %d", i+1))
	}
	stopLoad()
	final := route[len(route)-1]

	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		t.Error(e)
	}
	// Per name, in the log's (grant) order, tokens strictly increase.
	last := map[string]moveGrant{}
	for _, g := range l.grants {
		if p, ok := last[g.name]; ok && g.tok <= p.tok {
			t.Errorf("%s: token %d (worker %d, %s) granted after token %d (worker %d, %s): tokens went back", g.name, g.tok,
				g.worker, g.at.Format("15:04:05.000"), p.tok, p.worker, p.at.Format("15:04:05.000"))
		}
		last[g.name] = g
	}
	t.Logf("%d grants of %d names over 3 moves", len(l.grants), len(last))

	// The long leases survived every move with their tokens; a fresh grant of
	// every name has a token above all earlier ones.
	for _, nd := range cl.nodes {
		c := nd.proc.conn()
		c.timeout = clusterOpTimeout
		for _, k := range held {
			if r := must(t, c, "LOCK.VALIDATE", k, strconv.FormatInt(heldTok[k], 10)); r.n != 1 {
				t.Errorf("LOCK.VALIDATE %s %d via %s after the moves = %v, want 1", k, heldTok[k], nd.id, r)
			}
			if r := must(t, c, "LOCK.ACQUIRE", k, "other", "PX", "1000"); !r.null {
				t.Errorf("LOCK.ACQUIRE %s other via %s after the moves = %v, want nil (held by keeper)", k, nd.id, r)
			}
		}
	}
	maxTok := map[string]int64{}
	for _, g := range l.grants {
		maxTok[g.name] = max(maxTok[g.name], g.tok)
	}
	for _, k := range held {
		maxTok[k] = heldTok[k]
	}
	for _, k := range names {
		if tok := mustInt(t, admin, "LOCK.ACQUIRE", k, "final", "PX", "60000"); tok <= maxTok[k] {
			t.Errorf("LOCK.ACQUIRE %s final after the moves = %d, not above %d, its largest earlier token", k, tok, maxTok[k])
		}
	}

	// Every node routes the slot to its final group: RAFT GROUPS counts one
	// slot less in the source and one more in the target, the shard map
	// version grew by one a move, and CLUSTER SHARDS shows the slot there.
	want := map[int]int64{}
	for _, g := range before {
		want[g.group] = g.slots
	}
	want[src]--
	want[final]++
	for _, nd := range cl.nodes {
		deadline := time.Now().Add(leaderTimeout)
		for {
			gs, err1 := raftGroups(nd.addrs.resp)
			info, err2 := raftInfo(nd.addrs.resp)
			ranges, _, err3 := shardsByGroup(nd.addrs.resp, moveGroups)
			var problems []string
			if err := cmp.Or(err1, err2, err3); err != nil {
				problems = append(problems, err.Error())
			} else {
				for _, g := range gs {
					if g.slots != want[g.group] {
						problems = append(problems, fmt.Sprintf("RAFT GROUPS: group %d holds %d slots, want %d", g.group, g.slots, want[g.group]))
					}
				}
				if v := info["shard_map_version"]; v != strconv.FormatInt(version+int64(len(route)), 10) {
					problems = append(problems, fmt.Sprintf("shard_map_version %s, want %d", v, version+int64(len(route))))
				}
				if g := groupOfSlot(ranges, slot); g != final {
					problems = append(problems, fmt.Sprintf("CLUSTER SHARDS puts slot %d in group %d, want %d: %v", slot, g, final, ranges))
				}
				if p := slotMaster(cl, nd, slot, final); p != "" {
					problems = append(problems, p)
				}
			}
			if len(problems) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s after the moves: %s", nd.id, strings.Join(problems, "; "))
				break
			}
			time.Sleep(pollEvery)
		}
	}
	t.Logf("whole test %v", time.Since(testStart).Round(time.Millisecond))
}

// slotMaster checks that CLUSTER SLOTS through nd names the leader of group g
// first for slot; it returns the problem ("" when none).
func slotMaster(cl *lockdCluster, nd *clusterNode, slot int64, g int) string {
	ls, views := cl.groupLeaders()
	if ls == nil {
		return "no agreed group leaders: " + views
	}
	c, err := dialRESP(nd.addrs.resp, infoTimeout)
	if err != nil {
		return err.Error()
	}
	defer c.close()
	r, err := c.do("CLUSTER", "SLOTS")
	if err != nil {
		return err.Error()
	}
	for _, e := range r.elems {
		if len(e.elems) < 3 || e.elems[0].n > slot || slot > e.elems[1].n {
			continue
		}
		m := e.elems[2].elems
		if len(m) < 2 {
			return fmt.Sprintf("CLUSTER SLOTS range %v has no master address", e)
		}
		if addr := fmt.Sprintf("%s:%d", m[0].str, m[1].n); addr != ls[g].addrs.resp {
			return fmt.Sprintf("CLUSTER SLOTS names %s first for slot %d; group %d is led by %s (%s)", addr, slot, g, ls[g].id, ls[g].addrs.resp)
		}
		return ""
	}
	return fmt.Sprintf("CLUSTER SLOTS has no range for slot %d: %v", slot, r)
}
