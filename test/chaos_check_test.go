package test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/shard"
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
	if g := res.grants[tokenKey{0, 3}]; g == nil || g.owner != "w1-0" || len(res.byName["chaos:lock:r0"]) != 2 || !res.byName["chaos:lock:r0"][0].released {
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
	if strings.Join(got, ",") != "a,b,c" || res.grants[tokenKey{0, 4}] == nil || res.grants[tokenKey{0, 4}].owner != "b" {
		t.Fatalf("grants in order: %v (want a,b,c; b by the release at index 4)", got)
	}
}

// A batch entry's commands are checked one by one at their logical indexes:
// a grant, a queued waiter and a hand-over inside one entry each get their
// own token, and the final marker is found by its token.
func TestChaosReplayBatchEntries(t *testing.T) {
	name := "chaos:lock:r1"
	var cmds [][][]byte
	for _, c := range []string{"LOCK.ACQUIRE " + name + " a PX 1000", "LOCK.ACQUIRE " + name + " b PX 1000 WAIT 5000", "LOCK.RELEASE " + name + " 1"} {
		cmds = append(cmds, bytes.Fields([]byte(c)))
	}
	batch := command.Entry{Kind: command.KindBatch, Time: 10, Args: command.BatchArgs(cmds)}
	log := []raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: batch.Encode()},
		chaosEntry(2, 20, "SET", "chaos:end:0", "run", "FENCE"), // token 4
	}
	res := replayReplicas([]string{"n1", "n2"}, [][]raft.Log{log, log}, 2)
	if len(res.violations) != 0 {
		t.Fatalf("violations: %v", res.violations)
	}
	if a, b := res.grants[tokenKey{0, 1}], res.grants[tokenKey{0, 3}]; a == nil || a.owner != "a" || b == nil || b.owner != "b" || res.handovers != 1 {
		t.Fatalf("grants %+v, %d hand-overs; want a at token 1, b handed over at token 3", res.grants, res.handovers)
	}
	if at, err := markerEntry(log, 4, "chaos:end:0"); err != nil || at != 2 {
		t.Fatalf("marker of token 4 found at entry %d, %v; want 2", at, err)
	}
	if _, err := markerEntry(log, 3, "chaos:end:0"); err == nil || !strings.Contains(err.Error(), "the command of token 3 (entry 1) is not the final marker") {
		t.Fatalf("a token of a batch's command taken for the marker: %v", err)
	}
	if _, err := markerEntry(log, 5, "chaos:end:0"); err == nil {
		t.Fatal("a token past the log found a marker")
	}
}

func TestChaosGrantChecksCatchBadHistories(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	rep := replayResult{grants: map[tokenKey]*replayGrant{}, byName: map[string][]*replayGrant{}}
	for _, g := range []*replayGrant{
		{index: 5, name: "chaos:lock:r0", owner: "a", ttl: 1000},
		{index: 9, name: "chaos:lock:r0", owner: "b", ttl: 1000},
	} {
		rep.grants[tokenKey{0, g.index}] = g
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

// A sharded cluster's replay: every group's log is replayed on its own up to
// its own marker; tokens repeat across groups without a false alarm, while a
// grant in the wrong group, a marker index that is not the marker, and a
// token repeated within one group are reported.
func TestChaosReplayPerGroup(t *testing.T) {
	smap, err := shard.NewMap(chaosShardedGroups)
	if err != nil {
		t.Fatal(err)
	}
	keys := chaosMarkerKeys(smap)
	for g, k := range keys {
		if smap.GroupOf([]byte(k)) != g {
			t.Fatalf("marker key %s is in group %d, not %d", k, smap.GroupOf([]byte(k)), g)
		}
	}
	r0, r1 := chaosLockName(0), chaosLockName(1)
	g0, g1 := smap.GroupOf([]byte(r0)), smap.GroupOf([]byte(r1))
	if g0 == g1 {
		t.Fatalf("%s and %s are both in group %d: the sharded runs would load one group only", r0, r1, g0)
	}
	build := func(where map[int][]raft.Log) ([][]raft.Log, []uint64) {
		logs := make([][]raft.Log, chaosShardedGroups)
		markers := make([]uint64, chaosShardedGroups)
		for g := range logs {
			logs[g] = append(logs[g], where[g]...)
			markers[g] = uint64(len(logs[g]) + 1)
			logs[g] = append(logs[g], chaosEntry(markers[g], 100, "SET", keys[g], "run", "FENCE"))
		}
		return logs, markers
	}
	good := map[int][]raft.Log{
		g0: {chaosEntry(1, 10, "SET", r0, "a", "NX", "PX", "1000", "FENCE")},
		g1: {chaosEntry(1, 10, "LOCK.ACQUIRE", r1, "b", "PX", "1000")},
	}
	logs, markers := build(good)
	rep := replayGroups([]string{"n1", "n2"}, [][][]raft.Log{logs, logs}, markers, keys, smap)
	if len(rep.violations) != 0 {
		t.Fatalf("a good sharded history: %v", rep.violations)
	}
	if a, b := rep.grants[tokenKey{g0, 1}], rep.grants[tokenKey{g1, 1}]; a == nil || a.owner != "a" || b == nil || b.owner != "b" || len(rep.perGroup) != chaosShardedGroups {
		t.Fatalf("grants by group: %+v, per group %+v", rep.grants, rep.perGroup)
	}
	acqs := []chaosAcquire{
		{name: r0, owner: "a", sent: time.Unix(1, 0), ack: time.Unix(1, 1), token: 1},
		{name: r1, owner: "b", sent: time.Unix(1, 0), ack: time.Unix(1, 1), token: 1},
	}
	var res chaosResult
	checkGrants(acqs, rep, true, &res)
	if len(res.violations) != 0 || res.crossTokens != 1 {
		t.Fatalf("token 1 in two groups: %v, %d counted across groups", res.violations, res.crossTokens)
	}
	res = chaosResult{}
	checkGrants(append(acqs, chaosAcquire{name: r1, owner: "c", sent: time.Unix(2, 0), ack: time.Unix(2, 1), token: 1}), rep, true, &res)
	if !hasViolation(res.violations, fmt.Sprintf("token 1 (group %d) acknowledged to b and to c", g1)) {
		t.Errorf("a token repeated within a group not reported: %v", res.violations)
	}
	res = chaosResult{}
	checkGrants([]chaosAcquire{{name: r1, owner: "a", sent: time.Unix(1, 0), ack: time.Unix(1, 1), token: 1}}, rep, true, &res)
	if !hasViolation(res.violations, fmt.Sprintf("the log has no such grant at index 1 of group %d", g1)) {
		t.Errorf("a grant found only in another group's log not reported: %v", res.violations)
	}

	wrong := map[int][]raft.Log{g1: {chaosEntry(1, 10, "SET", r0, "a", "NX", "PX", "1000", "FENCE")}}
	logs, markers = build(wrong)
	rep = replayGroups([]string{"n1"}, [][][]raft.Log{logs}, markers, keys, smap)
	if !hasViolation(rep.violations, fmt.Sprintf("group %d: 1 grants of %s are in this group's log, but the shard map puts %s in group %d", g1, r0, r0, g0)) {
		t.Errorf("a grant in the wrong group's log not reported: %v", rep.violations)
	}
	logs, markers = build(good)
	markers[g0] = 1 // the grant, not the marker
	rep = replayGroups([]string{"n1"}, [][][]raft.Log{logs}, markers, keys, smap)
	if !hasViolation(rep.violations, fmt.Sprintf("group %d: n1: the command of token 1 (entry 1) is not the final marker (SET %s)", g0, keys[g0])) {
		t.Errorf("a marker index that is not the marker not reported: %v", rep.violations)
	}
}

// readReplicaLogs reads each group's log out of a replica's shared DB.
func TestChaosReadsSharedLogs(t *testing.T) {
	dir := t.TempDir()
	sh, err := logstore.OpenShared(filepath.Join(dir, "raft"), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for g := range 3 {
		s, err := sh.Group(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ls []*raft.Log
		for i := 1; i <= g+1; i++ {
			l := chaosEntry(uint64(i), int64(i), "SET", fmt.Sprintf("k%d", g), strconv.Itoa(i))
			ls = append(ls, &l)
		}
		if err := s.StoreLogs(ls); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	logs, err := readReplicaLogs(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for g, l := range logs {
		if len(l) != g+1 {
			t.Fatalf("group %d: %d entries, want %d", g, len(l), g+1)
		}
		e, err := command.Decode(l[g].Data)
		if err != nil || string(e.Args[1]) != fmt.Sprintf("k%d", g) || string(e.Args[2]) != strconv.Itoa(g+1) {
			t.Fatalf("group %d: last entry %+v, %v", g, e, err)
		}
	}
}

// A placed group's replay (issue 49): the members come from the group's own
// configuration entries. A former member's shorter log, and a node that
// never held the group, are no findings; a member short of the marker, a
// former member's log that differs from the others' at an entry of the same
// term, and members that diverge are. A former member's log that ends in
// entries of another term (left uncommitted by its removal) is counted.
func TestChaosReplayPlaced(t *testing.T) {
	conf := func(index uint64, ids ...string) raft.Log {
		var c raft.Configuration
		for _, id := range ids {
			c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(id + ":1")})
		}
		return raft.Log{Index: index, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(c)}
	}
	name := "chaos:lock:r0"
	// n1 leaves at index 3 (its log stops there), n4 joins; n5 never holds
	// the group. The marker is index 6.
	full := []raft.Log{
		conf(1, "n1", "n2", "n3"),
		chaosEntry(2, 10, "SET", name, "a", "NX", "PX", "1000", "FENCE"),
		conf(3, "n1", "n2", "n3", "n4"),
		conf(4, "n2", "n3", "n4"),
		chaosEntry(5, 20, "DELEX", name, "IFEQ", "a"),
		chaosEntry(6, 30, "SET", name, "b", "NX", "PX", "1000", "FENCE"),
	}
	ids := []string{"n1", "n2", "n3", "n4", "n5"}
	res := replayReplicas(ids, [][]raft.Log{full[:3], full, full, full, nil}, 6)
	if len(res.violations) != 0 || res.replicas != 3 || res.stale != 1 || res.staleTails != 0 {
		t.Fatalf("a good placed history: %v (%d replicas, %d stale, %d stale tails)", res.violations, res.replicas, res.stale, res.staleTails)
	}
	if g := res.grants[tokenKey{0, 6}]; g == nil || g.owner != "b" {
		t.Fatalf("the grants come from the first log that reaches the marker (n2): %+v", res.grants)
	}

	res = replayReplicas(ids, [][]raft.Log{full[:3], full, full[:5], full, nil}, 6)
	if !hasViolation(res.violations, "n3: "+errNoMarker.Error()) {
		t.Errorf("a member short of the marker not reported: %v", res.violations)
	}

	sameTerm := append([]raft.Log(nil), full[:3]...)
	sameTerm[1] = chaosEntry(2, 10, "SET", name, "x", "NX", "PX", "1000", "FENCE")
	res = replayReplicas(ids, [][]raft.Log{sameTerm, full, full, full, nil}, 6)
	if !hasViolation(res.violations, "replicas n2 and n1 diverge at index 2 (terms 1, 1)") {
		t.Errorf("a former member's log that breaks log matching not reported: %v", res.violations)
	}

	otherTerm := append([]raft.Log(nil), full[:3]...)
	otherTerm[2] = chaosEntry(3, 15, "SET", "k", "v")
	otherTerm[2].Term = 2
	res = replayReplicas(ids, [][]raft.Log{otherTerm, full, full, full, nil}, 6)
	if len(res.violations) != 0 || res.staleTails != 1 {
		t.Errorf("a former member's replaced tail: %v, %d counted", res.violations, res.staleTails)
	}

	diverged := append([]raft.Log(nil), full...)
	diverged[4] = chaosEntry(5, 20, "SET", "k", "v")
	diverged[4].Term = 2
	res = replayReplicas(ids, [][]raft.Log{full[:3], full, full, diverged, nil}, 6)
	if !hasViolation(res.violations, "replicas n2 and n4 diverge at index 5 (terms 1, 2)") {
		t.Errorf("members that diverge at another term not reported: %v", res.violations)
	}

	// replayGroups finds the marker in the first log that holds it, not in
	// the first node's (which never held this group).
	smap, err := shard.NewMap(1)
	if err != nil {
		t.Fatal(err)
	}
	keys := chaosMarkerKeys(smap)
	withMarker := append(append([]raft.Log(nil), full...), chaosEntry(7, 40, "SET", keys[0], "run", "FENCE"))
	rep := replayGroups([]string{"n5", "n2"}, [][][]raft.Log{{nil}, {withMarker}}, []uint64{7}, keys, smap)
	if len(rep.violations) != 0 || rep.perGroup[0].marker != 7 || rep.perGroup[0].replicas != 1 {
		t.Fatalf("a group held by the second node only: %v, %+v", rep.violations, rep.perGroup)
	}
}
