package group

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/resp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// heldLog is a node's shared-log hook that, once armed, holds every batch
// until released: the node's fsyncs stall while its Raft keeps running.
type heldLog struct {
	mu      sync.Mutex
	armed   bool
	release chan struct{}
}

func (h *heldLog) hook() error {
	h.mu.Lock()
	armed, release := h.armed, h.release
	h.mu.Unlock()
	if armed {
		<-release
	}
	return nil
}

// arm makes h hold every batch from now until letGo.
func (h *heldLog) arm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.armed {
		h.armed, h.release = true, make(chan struct{})
	}
}

// letGo disarms h and lets every held batch go; a call on a disarmed h
// does nothing.
func (h *heldLog) letGo() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.armed {
		h.armed = false
		close(h.release)
	}
}

// writeUntilPipelined makes writes with set (its argument counts them; each
// must answer OK) until leader's pipelines have answered for n followers
// (hashicorp/raft sends the first appends of a term one at a time, then
// pipelines them), 10 s at most.
func writeUntilPipelined(t *testing.T, leader *Store, n int, set func(i int) resp.Value) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if v := set(i); v.String() != "OK" {
			t.Fatalf("SET before: %v", v)
		}
		leader.acks.mu.Lock()
		heard := len(leader.acks.by)
		leader.acks.mu.Unlock()
		if heard == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader's pipelines heard %d of %d followers", heard, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitReceived waits (10 s at most) until each of followers has an entry
// after index before: the leader sent it while its own fsync was held.
func waitReceived(t *testing.T, followers []*Store, before uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, f := range followers {
		for f.raft.LastIndex() <= before {
			if time.Now().After(deadline) {
				t.Fatal("a follower did not receive the write while the leader's fsync was held")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// counterValue reads a Prometheus counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// answeredOnRelease fails the test if reply already holds the answer to a
// write the leader's held log holds; then lets the log go and expects OK.
func answeredOnRelease(t *testing.T, h *heldLog, reply chan resp.Value) {
	t.Helper()
	select {
	case v := <-reply:
		t.Fatalf("the client was answered %v before the leader's copy was on disk", v)
	default:
	}
	h.letGo()
	expectOK(t, reply, "after the leader's write was released")
}

// expectOK waits (10 s at most) for the answer on reply and fails the test
// unless it is OK; when says at what point, in a failure.
func expectOK(t *testing.T, reply chan resp.Value, when string) {
	t.Helper()
	select {
	case v := <-reply:
		if v.String() != "OK" {
			t.Fatalf("SET %s: %v", when, v)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the client was not answered %s", when)
	}
}

// TestLeaderFsyncRunsWithReplication: with the group leader's own log write
// held, a write still reaches both followers' logs (the leader sent it
// without waiting for its fsync), and the followers, who learn of
// commitment only up to the leader's disk, apply it only once that write is
// released. On nodes of one group (the group's log of its own, with its own
// committer), once both followers hold it on disk a majority of the voters
// does, so the leader applies it and answers the client while its own write
// is still held; on nodes of several groups (one shared log) the leader
// applies it and answers only once its own write is on disk. With one
// follower down, the one left and the leader's held copy are not a durable
// majority: the client waits until the leader's write is on disk.
func TestLeaderFsyncRunsWithReplication(t *testing.T) {
	for _, groups := range []int{1, 2} {
		t.Run(fmt.Sprintf("groups=%d", groups), func(t *testing.T) { testLeaderFsyncRunsWithReplication(t, groups) })
	}
}

func testLeaderFsyncRunsWithReplication(t *testing.T, groups int) {
	holds := []*heldLog{{}, {}, {}}
	// Each node's group 0 as a node of that many groups has it: with one
	// group, a log of its own; with several, its part of the node's one
	// shared log (logstore.Shared, as raftstore.OpenNode opens it). Either
	// way the node's log writes first run the node's hold.
	c := newClusterWith(t, 3, func(i int, cfg *Config) {
		cfg.SnapshotThreshold, cfg.TrailingLogs = 0, 0 // the defaults, as a node's
		if groups == 1 {
			cfg.BeforeLogWrite = holds[i].hook
			return
		}
		sh, err := logstore.OpenShared(filepath.Join(cfg.DataDir, "raft"), logstore.Options{BeforeWrite: holds[i].hook})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sh.Close() }) // after the cluster's stores close
		cfg.sharedLog = sh
	})
	li, leader := c.leader()
	var followers []*Store
	var fi []int // their nodes
	for i := range c.peers {
		if i != li {
			followers = append(followers, c.node(i))
			fi = append(fi, i)
		}
	}
	applied := func(s *Store) uint64 {
		s.m.wmu.Lock()
		defer s.m.wmu.Unlock()
		return s.m.applied
	}
	// A group alone in its log counts its followers' acknowledgements; one
	// of a shared log waits for the leader's own disk.
	counts := groups == 1
	// Writes until both followers' pipelines have answered one (hashicorp/raft
	// sends the first appends of a term one at a time, then pipelines).
	set := func(n int) resp.Value { return do(leader, "SET", "k", fmt.Sprint("before", n)) }
	if counts {
		writeUntilPipelined(t, leader, len(followers), set)
	} else {
		if v := set(0); v.String() != "OK" {
			t.Fatalf("SET before: %v", v)
		}
		if leader.acks != nil {
			t.Fatal("a group of a shared log records its followers' acknowledgements")
		}
	}
	early := counterValue(t, leader.metrics.appliedEarly)

	before := leader.raft.LastIndex()
	h := holds[li]
	h.arm()
	defer h.letGo()
	reply := make(chan resp.Value, 1)
	go func() { reply <- do(leader, "SET", "k", "after") }()
	// The followers store the entry while the leader's own write is held.
	waitReceived(t, followers, before)
	entry := followers[0].raft.LastIndex()
	if counts {
		expectOK(t, reply, "with both followers holding the write and the leader's held")
		if d := leader.logs.Durable(); d >= entry {
			t.Fatalf("the leader's own log is durable to %d (entry %d) while its write is held", d, entry)
		}
		if got := counterValue(t, leader.metrics.appliedEarly); got <= early {
			t.Fatalf("lockd_raft_applied_before_own_fsync_total stayed at %v", got)
		}
		if v := do(leader, "GET", "k"); v.String() != "after" {
			t.Fatalf("GET on the leader while its write is held: %v", v)
		}
	}
	// Several commit timeouts pass (each sends the followers the commit
	// index): the followers do not apply the entry while the leader's copy
	// is not on disk; in a shared log neither does the leader, and the
	// client waits.
	for end := time.Now().Add(6 * commitTimeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		replicas := followers
		if !counts {
			replicas = append([]*Store{leader}, followers...)
			select {
			case v := <-reply:
				t.Fatalf("the client was answered %v before the leader's copy was on disk", v)
			default:
			}
		}
		for _, r := range replicas {
			if a := applied(r); a >= entry {
				t.Fatalf("a replica applied index %d (entry %d) before the leader's copy was on disk", a, entry)
			}
		}
	}
	if !counts {
		answeredOnRelease(t, h, reply)
	}
	h.letGo()
	for _, f := range followers {
		select {
		case <-f.m.appliedCh(entry):
		case <-time.After(10 * time.Second):
			t.Fatalf("a follower did not apply index %d after the release", entry)
		}
	}

	// One follower down: the other and the leader's held copy are the
	// majority, so the client waits for the leader's disk.
	down := c.node(fi[1])
	c.mu.Lock()
	c.nodes[fi[1]] = nil
	c.mu.Unlock()
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	up := followers[0]
	h.arm()
	before = leader.raft.LastIndex()
	reply = make(chan resp.Value, 1)
	go func() { reply <- do(leader, "SET", "k", "third") }()
	waitReceived(t, []*Store{up}, before)
	for end := time.Now().Add(6 * commitTimeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		select {
		case v := <-reply:
			t.Fatalf("the client was answered %v with one follower and the leader's held copy", v)
		default:
		}
	}
	answeredOnRelease(t, h, reply)
}

// A node started alone writes its log without deferring (it has no
// follower to overlap with); once its cluster has grown (a member added with
// RAFT ADD), its leader sends a write to the new follower while its own
// fsync is still held, without a restart, and answers the client only once
// that fsync is done.
func TestGrownNodeDefers(t *testing.T) {
	h := &heldLog{}
	a := openConfig(t, Config{NodeID: "n1", DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, BeforeLogWrite: h.hook})
	defer a.Close()
	b, err := Open(Config{NodeID: "n2", DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", Join: true, ApplyTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v := do(a, "SET", "k", "alone"); v.String() != "OK" {
		t.Fatalf("SET alone: %v", v)
	}
	if a.logs.Durable() != a.raft.LastIndex() {
		t.Fatalf("alone, the log is durable to %d of %d: a lone voter's write returns once on disk", a.logs.Durable(), a.raft.LastIndex())
	}
	ctx := context.Background()
	add := command.Request{Op: command.Admin{Action: "add", ID: "n2", Addr: b.PeerAddr()}, Spec: command.AdminSpec}
	if v := a.Do(ctx, []command.Request{add})[0]; v.String() != "OK" {
		t.Fatalf("RAFT ADD: %v", v)
	}
	if v := do(a, "SET", "k", "grown"); v.String() != "OK" {
		t.Fatalf("SET after the add: %v", v)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.raft.LastIndex() < a.raft.LastIndex() {
		if time.Now().After(deadline) {
			t.Fatal("the new member did not catch up")
		}
		time.Sleep(5 * time.Millisecond)
	}

	before := a.raft.LastIndex()
	h.arm()
	defer h.letGo()
	reply := make(chan resp.Value, 1)
	go func() { reply <- do(a, "SET", "k", "held") }()
	for b.raft.LastIndex() <= before {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the follower did not receive the write while the grown leader's fsync was held")
		}
		time.Sleep(5 * time.Millisecond)
	}
	answeredOnRelease(t, h, reply)
}

// appendOf is an AppendEntries of term carrying entries first..last of the
// given entry term.
func appendOf(term, entryTerm, first, last uint64) *raft.AppendEntriesRequest {
	args := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{}, Term: term}
	for i := first; i <= last; i++ {
		args.Entries = append(args.Entries, &raft.Log{Index: i, Term: entryTerm})
	}
	return args
}

// TestFollowerAcksCountAMajorityOfTheOthers: an entry counts as held by a
// majority without the leader only when more than half of the voters other
// than the leader (non-voters aside) acknowledged it on a live pipeline, in
// an append whose last entry is of the leader's term; a pipeline that ends
// takes its acknowledgements with it, and a newer term drops the older's.
func TestFollowerAcksCountAMajorityOfTheOthers(t *testing.T) {
	conf := raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: "n1"}, {Suffrage: raft.Voter, ID: "n2"}, {Suffrage: raft.Voter, ID: "n3"},
		{Suffrage: raft.Nonvoter, ID: "n4"},
	}}
	var a followerAcks
	if a.cover(1, conf.Servers, "n1") {
		t.Fatal("covered with no acknowledgement")
	}
	a.Stored("n2", 1, appendOf(5, 5, 1, 10))
	a.Stored("n4", 3, appendOf(5, 5, 1, 10)) // a non-voter does not count
	a.Stored("n1", 9, appendOf(5, 5, 1, 10)) // nor does the leader itself
	if a.cover(10, conf.Servers, "n1") {
		t.Fatal("one follower of two covers an entry of three voters")
	}
	// The other follower stored entries of an older term only: Raft does not
	// count those as committed on their own.
	a.Stored("n3", 2, appendOf(5, 4, 1, 10))
	if a.cover(10, conf.Servers, "n1") {
		t.Fatal("an append whose last entry is of an older term counted")
	}
	a.Stored("n3", 2, appendOf(5, 5, 11, 12))
	if !a.cover(10, conf.Servers, "n1") || !a.cover(9, conf.Servers, "n1") {
		t.Fatal("both followers stored index 10: not covered")
	}
	if a.cover(11, conf.Servers, "n1") {
		t.Fatal("index 11 is on one follower only")
	}
	// A lower acknowledgement on the same pipeline does not lower it; one
	// from an older pipeline to the same follower is ignored.
	a.Stored("n3", 2, appendOf(5, 5, 1, 3))
	a.Stored("n2", 0, appendOf(5, 5, 1, 2))
	if !a.cover(10, conf.Servers, "n1") {
		t.Fatal("a lower or older acknowledgement lowered what was held")
	}
	// Heartbeats and empty appends say nothing.
	a.Stored("n2", 1, &raft.AppendEntriesRequest{Term: 5, PrevLogEntry: 50})
	if a.cover(11, conf.Servers, "n1") {
		t.Fatal("an append without entries counted")
	}
	// n2's pipeline ends: its acknowledgements go.
	a.Ended("n2", 1)
	if a.cover(10, conf.Servers, "n1") {
		t.Fatal("an ended pipeline's acknowledgement still counts")
	}
	a.Stored("n2", 4, appendOf(5, 5, 1, 10)) // a new pipeline
	a.Ended("n2", 1)                         // the old one's end does not drop the new one's
	if !a.cover(10, conf.Servers, "n1") {
		t.Fatal("an older pipeline's end dropped the new one's acknowledgement")
	}
	// A newer term drops every acknowledgement of the older.
	a.Stored("n2", 5, appendOf(6, 6, 11, 11))
	if a.cover(10, conf.Servers, "n1") {
		t.Fatal("an acknowledgement of term 5 counted after one of term 6")
	}
	a.Stored("n3", 6, appendOf(5, 5, 11, 20))
	if a.cover(11, conf.Servers, "n1") {
		t.Fatal("an acknowledgement of an older term was recorded")
	}
	// A change wakes a watcher.
	w := a.watch()
	select {
	case <-w:
		t.Fatal("watch closed before a change")
	default:
	}
	a.Stored("n3", 6, appendOf(6, 6, 11, 11))
	select {
	case <-w:
	default:
		t.Fatal("an acknowledgement did not close the watch")
	}
	if !a.cover(11, conf.Servers, "n1") {
		t.Fatal("both followers stored index 11 in term 6: not covered")
	}
	// Five voters: three others needed.
	five := raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: "n1"}, {Suffrage: raft.Voter, ID: "n2"}, {Suffrage: raft.Voter, ID: "n3"},
		{Suffrage: raft.Voter, ID: "n4"}, {Suffrage: raft.Voter, ID: "n5"},
	}}
	if a.cover(11, five.Servers, "n1") {
		t.Fatal("two followers of four cover an entry of five voters")
	}
	a.Stored("n5", 7, appendOf(6, 6, 11, 11))
	if !a.cover(11, five.Servers, "n1") {
		t.Fatal("three followers of four do not cover an entry of five voters")
	}
}

// appliedIndex is the Raft index the machine has applied up to.
func (m *machine) appliedIndex() uint64 {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	return m.applied
}

// TestDurabilitySeamsHold is the durability rule's contract (parallelsync.go,
// durability): under a stream of writes to a 3-node group, each of its four
// seams is consulted — the log store asks whether to defer the leader's
// fsync, every AppendEntries passes the commit cap, the followers'
// acknowledgements reach the leader, every applied batch waits for a
// majority on disk — and what the cap is for holds throughout: no follower
// applies an entry that is not yet on the leader's disk. A seam that a
// change bypasses (installs elsewhere, or not at all) leaves its count at
// zero and fails this test.
func TestDurabilitySeamsHold(t *testing.T) {
	c := newCluster(t, 3)
	li, leader := c.leader()
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				select {
				case <-stop:
					return
				default:
				}
				leader.Do(ctx, []command.Request{req("SET", fmt.Sprintf("k%d", w), strconv.Itoa(i))})
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	samples, ahead := 0, 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(time.Millisecond):
		}
		for j := range c.peers {
			if j == li {
				continue
			}
			// The follower's applied index first: the leader's durable index
			// only grows, so a later read of it is at least what it was.
			applied := c.node(j).m.appliedIndex()
			durable := leader.dur.log.Durable()
			samples++
			if applied > durable {
				ahead++
				t.Errorf("follower %d applied index %d, above the leader's durable index %d", j, applied, durable)
			}
		}
		if ahead > 3 {
			break
		}
	}
	close(stop)
	wg.Wait()
	d := leader.dur
	for name, n := range map[string]int64{
		"deferral asked (seam 1)":            d.uses.deferAsked.Load(),
		"AppendEntries capped (seam 2)":      d.uses.capped.Load(),
		"follower acknowledgements (seam 3)": d.acks.heard.Load(),
		"apply waits (seam 4)":               d.uses.applyWaits.Load(),
	} {
		if n == 0 {
			t.Errorf("the leader's durability seam %q was never used: bypassed", name)
		}
	}
	t.Logf("%d samples of followers' applied index against the leader's durable index; seams used: defer %d, cap %d, acks %d, apply waits %d",
		samples, d.uses.deferAsked.Load(), d.uses.capped.Load(), d.acks.heard.Load(), d.uses.applyWaits.Load())
}
