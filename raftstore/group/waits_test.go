package group

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/raftstore/group/grouptest"
	"github.com/lockd/lockd/resp"
)

// waitFor polls cond every 5 ms for at most limit (clustertest.WaitFor).
var waitFor = clustertest.WaitFor

// queueLength reads LOCK.INFO's queue_length through s (grouptest.QueueLength).
func queueLength(s *Store, name string) int64 { return grouptest.QueueLength(s, name) }

type result struct {
	v  resp.Value
	at time.Time
}

// acquireAsync runs a blocking acquire on s in the background.
func acquireAsync(ctx context.Context, s *Store, cmd ...string) chan result {
	ch := make(chan result, 1)
	go func() {
		v := s.Do(ctx, []command.Request{req(cmd...)})[0]
		ch <- result{v, time.Now()}
	}()
	return ch
}

func TestWaitGrantedOnRelease(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	tok := do(s, "LOCK.ACQUIRE", "job", "a", "PX", "60000")
	ch := acquireAsync(context.Background(), s, "LOCK.ACQUIRE", "job", "b", "PX", "60000", "WAIT", "10000")
	waitFor(t, 5*time.Second, "the waiter to queue", func() bool { return queueLength(s, "job") == 1 })
	// Other commands are served while the waiter blocks.
	if v := do(s, "SET", "other", "1"); v.String() != "OK" {
		t.Fatalf("SET while a waiter blocks: %v", v)
	}
	released := time.Now()
	if v := do(s, "LOCK.RELEASE", "job", fmt.Sprint(tok.Int)); v.Int != 1 {
		t.Fatalf("release: %v", v)
	}
	select {
	case r := <-ch:
		if r.v.Kind != resp.KindInt || r.v.Int <= tok.Int {
			t.Fatalf("waiter got %v, want a token above %d", r.v, tok.Int)
		}
		t.Logf("hand-over took %v", r.at.Sub(released))
		if v := do(s, "LOCK.VALIDATE", "job", fmt.Sprint(r.v.Int)); v.Int != 1 {
			t.Fatalf("the waiter's token is not held: %v", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken within 5s of the release")
	}
}

func TestWaitTimesOut(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	do(s, "LOCK.ACQUIRE", "job", "a", "PX", "60000")
	start := time.Now()
	v := do(s, "LOCK.ACQUIRE", "job", "b", "WAIT", "200")
	if v.Kind != resp.KindNull {
		t.Fatalf("timed-out wait = %v, want nil", v)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("WAIT 200 answered after %v", d)
	}
	if n := queueLength(s, "job"); n != 0 {
		t.Fatalf("timed-out waiter still queued (queue_length %d)", n)
	}
}

func TestWaitPipelineOrder(t *testing.T) {
	// Commands after a blocking acquire in one pipeline run after it.
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	tok := do(s, "LOCK.ACQUIRE", "job", "a", "PX", "300")
	out := s.Do(context.Background(), []command.Request{
		req("SET", "before", "1"),
		req("LOCK.ACQUIRE", "job", "b", "WAIT", "5000"),
		req("LOCK.INFO", "job"),
	})
	if out[0].String() != "OK" || out[1].Kind != resp.KindInt || out[1].Int <= tok.Int {
		t.Fatalf("pipeline = %v", out)
	}
	if info := string(resp.Append(nil, out[2], 2)); !strings.Contains(info, "owner\r\n$1\r\nb\r\n") {
		t.Fatalf("LOCK.INFO after the blocking acquire = %q, want b holding", info)
	}
}

func TestWaitCancelledByDisconnect(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	tok := do(s, "LOCK.ACQUIRE", "job", "a", "PX", "60000")
	ctx, cancel := context.WithCancel(context.Background())
	ch := acquireAsync(ctx, s, "LOCK.ACQUIRE", "job", "gone", "WAIT", "30000")
	waitFor(t, 5*time.Second, "the waiter to queue", func() bool { return queueLength(s, "job") == 1 })
	cancel() // the client disconnects
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled wait did not return")
	}
	if n := queueLength(s, "job"); n != 0 {
		t.Fatalf("disconnected waiter still queued (queue_length %d)", n)
	}
	do(s, "LOCK.RELEASE", "job", fmt.Sprint(tok.Int))
	if v := do(s, "LOCK.ACQUIRE", "job", "c"); v.Kind != resp.KindInt {
		t.Fatalf("the lock went to a disconnected waiter: %v", v)
	}
}

// TestRateLimit: a namespace's RATE refuses what passes it, and goes on
// doing so after a restart that restores it from a snapshot.
func TestRateLimit(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 0)
	defer func() { s.Close() }()
	if v := do(s, "LOCK.ACQUIRE", "fast/0", "o"); v.IsError() {
		t.Fatalf("before any namespace: %v", v)
	}
	do(s, "NAMESPACE.SET", "slow/", "RATE", "5")
	limitedOf := func(round string) int {
		limited := 0
		for i := 0; i < 20; i++ {
			v := do(s, "LOCK.ACQUIRE", fmt.Sprintf("slow/%s%d", round, i), "o")
			if v.IsError() {
				if !strings.HasPrefix(v.String(), "RATELIMITED namespace 'slow/' allows 5 operations per second; retry in ") {
					t.Fatalf("error = %q", v.String())
				}
				limited++
			}
		}
		return limited
	}
	if limited := limitedOf("a"); limited < 10 {
		t.Fatalf("%d of 20 back-to-back operations limited at RATE 5", limited)
	}
	if v := do(s, "LOCK.ACQUIRE", "fast/1", "o"); v.IsError() {
		t.Fatalf("another namespace limited: %v", v)
	}
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 0)
	if limited := limitedOf("b"); limited < 10 {
		t.Fatalf("after a restart from a snapshot: %d of 20 back-to-back operations limited at RATE 5", limited)
	}
}

// TestWaiterOnFollowerWoken blocks a waiter on a follower; the grant is decided
// on the leader (a release) and the follower's own apply wakes it.
func TestWaiterOnFollowerWoken(t *testing.T) {
	c := newCluster(t, 3)
	li, leader := c.leader()
	fi := (li + 1) % 3
	follower := c.node(fi)
	ctx := context.Background()
	tok := leader.Do(ctx, []command.Request{req("LOCK.ACQUIRE", "job", "a", "PX", "60000")})[0]
	ch := acquireAsync(ctx, follower, "LOCK.ACQUIRE", "job", "b", "WAIT", "20000")
	waitFor(t, 5*time.Second, "the waiter to queue", func() bool { return queueLength(leader, "job") == 1 })
	released := time.Now()
	if v := leader.Do(ctx, []command.Request{req("LOCK.RELEASE", "job", fmt.Sprint(tok.Int))})[0]; v.Int != 1 {
		t.Fatalf("release: %v", v)
	}
	select {
	case r := <-ch:
		if r.v.Kind != resp.KindInt || r.v.Int <= tok.Int {
			t.Fatalf("follower's waiter got %v", r.v)
		}
		t.Logf("the waiter on a follower was woken %v after the release was sent", r.at.Sub(released))
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter on the follower was not woken within 5s")
	}
	// A session's lock is freed and handed over when its session expires.
	open := leader.Do(ctx, []command.Request{req("SESSION.OPEN", "TTL", "5000")})[0]
	id := fmt.Sprint(open.Elems[1].Int)
	leader.Do(ctx, []command.Request{req("LOCK.ACQUIRE", "sess", "holder", "SESSION", id)})
	start := time.Now()
	r := <-acquireAsync(ctx, follower, "LOCK.ACQUIRE", "sess", "next", "WAIT", "15000")
	if r.v.Kind != resp.KindInt {
		t.Fatalf("waiter behind an expiring session got %v", r.v)
	}
	if d := r.at.Sub(start); d < 4500*time.Millisecond || d > 9*time.Second {
		t.Fatalf("the session's lock was handed over after %v, want about its 5s TTL", d)
	}
	c.converge()
}

// A script that would allocate gigabytes is refused by the leader's dry run
// before it enters the log (and runs on every replica).
func TestScriptMemoryRefusedBeforeTheLog(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	before := s.raft.LastIndex()
	v := do(s, "EVAL", "local s = 'x' for i = 1, 40 do s = s .. s end redis.call('SET', 'k', s) return #s", "0")
	if !strings.HasPrefix(v.String(), "ERR script exceeded its memory budget") {
		t.Fatalf("EVAL = %v", v)
	}
	if after := s.raft.LastIndex(); after != before {
		t.Fatalf("the refused script reached the log (last index %d -> %d)", before, after)
	}
	if n := s.LockCounters().ScriptsMemory; n != 1 {
		t.Fatalf("scripts refused for memory = %d, want 1", n)
	}
	if v := do(s, "EXISTS", "k"); v.Int != 0 {
		t.Fatalf("EXISTS k = %v", v)
	}
	if v := do(s, "EVAL", "return redis.call('SET', 'k', 'v')", "0"); v.String() != "OK" {
		t.Fatalf("a small script: %v", v)
	}
}

// TestLeaderAnswersAWaitersOutcome: the leader tells a follower a queued
// waiter's outcome without the log (askLeader's "await"): the token once a
// release grants it, nil when its wait ends first, an error for a bad id.
func TestLeaderAnswersAWaitersOutcome(t *testing.T) {
	c := newCluster(t, 3)
	_, leader := c.leader()
	ctx := context.Background()
	tok := leader.Do(ctx, []command.Request{req("LOCK.ACQUIRE", "job", "a", "PX", "60000")})[0]
	if tok.Kind != resp.KindInt {
		t.Fatalf("acquire: %v", tok)
	}
	// Queue a waiter without blocking on it (doLocal answers QUEUED).
	q := leader.doLocal(ctx, []command.Request{req("LOCK.ACQUIRE", "job", "b", "WAIT", "20000")})[0]
	id, queued := fsm.QueuedWaiter(q)
	if !queued {
		t.Fatalf("second acquire: %v, want QUEUED", q)
	}
	await := func(id, ms string) chan resp.Value {
		ch := make(chan resp.Value, 1)
		go func() {
			ch <- leader.Do(ctx, []command.Request{{Op: command.Admin{Action: "await", ID: id, Addr: ms}, Spec: command.AdminSpec}})[0]
		}()
		return ch
	}
	answer := await(fmt.Sprint(id), "10000")
	if v := leader.Do(ctx, []command.Request{req("LOCK.RELEASE", "job", fmt.Sprint(tok.Int))})[0]; v.Int != 1 {
		t.Fatalf("release: %v", v)
	}
	select {
	case v := <-answer:
		got, err := strconv.ParseUint(v.String(), 10, 64)
		if v.Kind != resp.KindBulk || err != nil || got <= uint64(tok.Int) {
			t.Fatalf("await answered %v, want the grant's token above %d", v, tok.Int)
		}
		if hv := leader.Do(ctx, []command.Request{req("LOCK.VALIDATE", "job", v.String())})[0]; hv.IsError() || hv.Int != 1 {
			t.Fatalf("the answered token does not hold the lock: LOCK.VALIDATE %v", hv)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("await did not answer within 5s of the release")
	}
	if v := <-await("999999", "100"); v.Kind != resp.KindNull {
		t.Fatalf("await of a waiter that never wakes: %v, want nil", v)
	}
	if v := <-await("x", "100"); !v.IsError() {
		t.Fatalf("await of a bad id: %v, want an error", v)
	}
}

// TestNudgeWaitsForTakeover: a nudge (a tick proposed so that followers learn
// a commit at once) is not proposed while the leader is still taking office:
// its clock may still run on from an earlier term, and a tick stamped by it
// would end leases early. It goes out once the leader is ready.
func TestNudgeWaitsForTakeover(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	s.ready.Store(false) // as between winning an election and the takeover barrier
	before := s.raft.LastIndex()
	s.nudgeFollowers()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if s.raft.LastIndex() != before {
			t.Fatalf("a nudge was proposed before the leader was ready (last index %d -> %d)", before, s.raft.LastIndex())
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.ready.Store(true)
	waitFor(t, 5*time.Second, "the nudge once ready", func() bool { return s.raft.LastIndex() > before })
}
