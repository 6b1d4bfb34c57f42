package test

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/command"
)

// The checks of the chaos suite must have teeth. The planted-bug runs show it
// end to end; these cases show each check on a history made by hand.

func chaosEntry(index uint64, at int64, args ...string) raft.Log {
	e := command.Entry{Kind: command.KindCommand, Time: at}
	for _, a := range args {
		e.Args = append(e.Args, []byte(a))
	}
	return raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: e.Encode()}
}

func hasViolation(vs []string, part string) bool {
	for _, v := range vs {
		if strings.Contains(v, part) {
			return true
		}
	}
	return false
}

func TestChaosReplayFindsDivergence(t *testing.T) {
	a := []raft.Log{
		chaosEntry(1, 10, "SET", "chaos:lock:r0", "w0-0", "NX", "PX", "1000", "FENCE"),
		chaosEntry(2, 20, "DELEX", "chaos:lock:r0", "IFEQ", "w0-0"),
		chaosEntry(3, 30, "SET", "chaos:lock:r0", "w1-0", "NX", "PX", "1000", "FENCE"),
	}
	res := replayReplicas([]string{"n1", "n2"}, [][]raft.Log{a, a}, 3)
	if len(res.violations) != 0 {
		t.Fatalf("identical replicas: %v", res.violations)
	}
	if g := res.grants[3]; g == nil || g.owner != "w1-0" || len(res.byName["chaos:lock:r0"]) != 2 || !res.byName["chaos:lock:r0"][0].released {
		t.Fatalf("grants found: %+v %+v", res.grants, res.byName)
	}
	b := append([]raft.Log(nil), a...)
	b[2] = chaosEntry(3, 30, "SET", "chaos:lock:r0", "w2-0", "NX", "PX", "1000", "FENCE")
	res = replayReplicas([]string{"n1", "n2"}, [][]raft.Log{a, b}, 3)
	if !hasViolation(res.violations, "diverge at index 3") || !hasViolation(res.violations, "different states") {
		t.Fatalf("diverging replicas not reported: %v", res.violations)
	}
	res = replayReplicas([]string{"n1", "n2"}, [][]raft.Log{a, a[:2]}, 3)
	if !hasViolation(res.violations, "n2: "+errNoMarker.Error()) {
		t.Fatalf("a replica short of the marker not reported: %v", res.violations)
	}
}

// The model follows hand-overs to queued waiters (FIFO) without false alarms.
func TestChaosReplayFollowsWaiters(t *testing.T) {
	name := "chaos:lock:r1"
	log := []raft.Log{
		chaosEntry(1, 10, "LOCK.ACQUIRE", name, "a", "PX", "1000"),
		chaosEntry(2, 20, "LOCK.ACQUIRE", name, "b", "PX", "1000", "WAIT", "5000"),
		chaosEntry(3, 30, "LOCK.ACQUIRE", name, "c", "PX", "1000", "WAIT", "5000"),
		chaosEntry(4, 40, "LOCK.RELEASE", name, "1"),
		chaosEntry(5, 2000, "LOCK.ACQUIRE", name, "d", "PX", "1000"), // b's lease ended at 1040: c is next
	}
	res := replayReplicas([]string{"n1"}, [][]raft.Log{log}, 5)
	if len(res.violations) != 0 {
		t.Fatalf("violations: %v", res.violations)
	}
	var got []string
	for _, g := range res.byName[name] {
		got = append(got, g.owner)
	}
	if strings.Join(got, ",") != "a,b,c" || res.grants[4] == nil || res.grants[4].owner != "b" {
		t.Fatalf("grants in order: %v (want a,b,c; b by the release at index 4)", got)
	}
}

func TestChaosGrantChecksCatchBadHistories(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	rep := replayResult{grants: map[uint64]*replayGrant{}, byName: map[string][]*replayGrant{}}
	for _, g := range []*replayGrant{
		{index: 5, name: "chaos:lock:r0", owner: "a", ttl: 1000},
		{index: 9, name: "chaos:lock:r0", owner: "b", ttl: 1000},
	} {
		rep.grants[g.index] = g
		rep.byName[g.name] = append(rep.byName[g.name], g)
	}
	good := []chaosAcquire{
		{name: "chaos:lock:r0", owner: "a", sent: ms(0), ack: ms(5), token: 5},
		{name: "chaos:lock:r0", owner: "b", sent: ms(900), ack: ms(1010), token: 9},
	}
	var res chaosResult
	checkGrants(good, rep, true, &res)
	if len(res.violations) != 0 {
		t.Fatalf("a good history: %v", res.violations)
	}
	cases := []struct {
		name string
		acqs []chaosAcquire
		want string
	}{
		{"repeated token", append(good[:2:2], chaosAcquire{name: "chaos:lock:r0", owner: "c", sent: ms(2000), ack: ms(2001), token: 9}), "acknowledged to b and to c"},
		{"grant missing from the log", append(good[:2:2], chaosAcquire{name: "chaos:lock:r0", owner: "d", sent: ms(3000), ack: ms(3001), token: 12}), "the log has no such grant"},
		{"token lower than an earlier acknowledged one", []chaosAcquire{good[1], {name: "chaos:lock:r0", owner: "a", sent: ms(1100), ack: ms(1101), token: 5}}, "after b had been acknowledged token 9"},
		{"lease ended early", []chaosAcquire{good[0], {name: "chaos:lock:r0", owner: "b", sent: ms(300), ack: ms(400), token: 9}}, "ended 600ms early"},
	}
	for _, c := range cases {
		var res chaosResult
		checkGrants(c.acqs, rep, true, &res)
		if !hasViolation(res.violations, c.want) {
			t.Errorf("%s: want a violation with %q, got %v", c.name, c.want, res.violations)
		}
	}
	// Under clock faults an early lease end is counted, not a violation.
	res = chaosResult{}
	checkGrants(cases[3].acqs, rep, false, &res)
	if len(res.violations) != 0 || res.earlyLeases != 1 {
		t.Fatalf("early lease under clock faults: %v, %d counted", res.violations, res.earlyLeases)
	}
}

func TestChaosResourceLosesUpdatesOnlyWithoutFencing(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		rs := startResourceServer(t, fenced)
		r := rs.res[0]
		// a (token 5) reads; its lease ends; b (token 9) reads, writes; a writes.
		rs.check(r, 5, "a")
		rs.check(r, 9, "b")
		r.versions = append(r.versions, &resState{elem: "b", n: 1})
		r.cur = 1
		r.accepted = append(r.accepted, "b")
		if rs.check(r, 5, "a") {
			r.versions = append(r.versions, &resState{elem: "a", n: 1}) // a's write is based on the empty record it read
			r.cur = 2
			r.accepted = append(r.accepted, "a")
		}
		lost, _, _ := rs.lost()
		if fenced && len(lost) != 0 {
			t.Errorf("fenced: lost %v", lost)
		}
		if !fenced && (len(lost) != 1 || lost[0] != "r0:b") {
			t.Errorf("unfenced: lost %v, want [r0:b]", lost)
		}
		rs.check(r, 9, "c") // token 9 again, from another owner
		if !hasViolation(rs.violations, "token 9 presented by b and by c") {
			t.Errorf("a repeated token not reported: %v", rs.violations)
		}
	}
}
