package group

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/raftstore/faultnet"
	"github.com/lockd/lockd/resp"
)

// proxiedCluster is a 3-node cluster whose every peer link (Raft, pipes,
// forwarding) goes through its own faultnet proxy on 127.0.0.1, so that a
// test can cut links silently (faultnet.Drop), as a packet filter would.
func proxiedCluster(t *testing.T) (*cluster, *faultnet.Net) {
	fn := faultnet.New()
	t.Cleanup(func() { fn.Close() }) // after the cluster's own cleanup (LIFO)
	via := map[string]map[string]string{}
	c := newClusterWith(t, 3, func(i int, cfg *Config) {
		if len(via) == 0 {
			for _, a := range cfg.Peers {
				via[a.ID] = map[string]string{}
				for _, b := range cfg.Peers {
					if a.ID == b.ID {
						continue
					}
					p, err := fn.Add(faultnet.Link{From: a.ID, To: b.ID}, b.Addr)
					if err != nil {
						t.Fatal(err)
					}
					via[a.ID][b.Addr] = p
				}
			}
		}
		cfg.DialVia = via[cfg.NodeID]
	})
	return c, fn
}

// linksOf are the links between node i and every other node, both ways.
func linksOf(c *cluster, i int) []faultnet.Link {
	var ls []faultnet.Link
	for j := range c.peers {
		if j != i {
			ls = append(ls, faultnet.Link{From: c.peers[i].ID, To: c.peers[j].ID}, faultnet.Link{From: c.peers[j].ID, To: c.peers[i].ID})
		}
	}
	return ls
}

// timedWrite is one write of a stream: when it was sent, when it was
// answered (zero while it is not), and its reply.
type timedWrite struct {
	start, end time.Time
	reply      resp.Value
}

// writeStream sends SETs through s from a few writers until stop closes, and
// records each. Its waits are bounded by each write's own 30 s context.
type writeStream struct {
	mu     sync.Mutex
	writes []*timedWrite
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startWrites(s *Store, writers int) *writeStream {
	ws := &writeStream{stop: make(chan struct{})}
	for w := range writers {
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-ws.stop:
					return
				default:
				}
				tw := &timedWrite{start: time.Now()}
				ws.mu.Lock()
				ws.writes = append(ws.writes, tw)
				ws.mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				v := s.Do(ctx, []command.Request{req("SET", fmt.Sprintf("stream:%d", w), strconv.Itoa(n))})[0]
				cancel()
				ws.mu.Lock()
				tw.end, tw.reply = time.Now(), v
				ws.mu.Unlock()
				time.Sleep(2 * time.Millisecond) // a steady stream, not a flood
			}
		}()
	}
	return ws
}

// snapshot copies the writes recorded so far.
func (ws *writeStream) snapshot() []timedWrite {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := make([]timedWrite, len(ws.writes))
	for i, w := range ws.writes {
		out[i] = *w
	}
	return out
}

func (ws *writeStream) close() {
	close(ws.stop)
	ws.wg.Wait()
}

// isOutcome reports a reply a write may get under a fault: its result (OK),
// TRYAGAIN (not applied) or UNKNOWNOUTCOME.
func isOutcome(v resp.Value) bool {
	s := v.String()
	return !v.IsError() && s == "OK" || v.IsError() && (s == ErrNotApplied.Error() || s == ErrUnknownOutcome.Error())
}

// writingFollower starts a proxied 3-node cluster and 4 write streams
// through a follower, and returns once ok of their writes succeeded: the
// cluster, its fault net, the leader's and the follower's index, and the
// streams. The test's cleanup heals the net and then closes the streams
// (hung writes end only when the net heals).
func writingFollower(t *testing.T, ok int) (*cluster, *faultnet.Net, int, int, *writeStream) {
	t.Helper()
	c, fn := proxiedCluster(t)
	li, _ := c.leader()
	fi := (li + 1) % 3
	f := c.node(fi)
	waitFor(t, 10*time.Second, "the follower to know its leader", func() bool { return f.Serving() && !f.IsLeader() })
	ws := startWrites(f, 4)
	t.Cleanup(func() {
		fn.Heal()
		ws.close()
	})
	waitFor(t, 10*time.Second, "writes through the follower", func() bool {
		n := 0
		for _, w := range ws.snapshot() {
			if !w.end.IsZero() && w.reply.String() == "OK" {
				n++
			}
		}
		return n >= ok
	})
	return c, fn, li, fi, ws
}

// TestForwardedWritesOutliveACutLeader: a follower receives a steady stream of
// writes, forwarded to the leader, when the leader's peer links are cut
// silently (packets dropped, as a packet filter does; the follower's link to
// the leader a moment before the others, so that writes are in flight). Writes through the
// follower succeed again soon after the majority elects a new leader, and the
// writes in flight at the cut, forwarded to the old leader, are answered
// (their result, UNKNOWNOUTCOME, or TRYAGAIN when they never left) within a
// bound, never only when the partition heals.
func TestForwardedWritesOutliveACutLeader(t *testing.T) {
	c, fn, li, fi, ws := writingFollower(t, 20)

	// Hold the follower's forwarded writes first (its link to the leader
	// only: the leader's heartbeats still arrive), so that some are surely
	// in flight at the cut, then cut the leader off.
	fn.Set(faultnet.Drop, 0, faultnet.Link{From: c.peers[fi].ID, To: c.peers[li].ID})
	waitFor(t, 10*time.Second, "forwarded writes held on the way", func() bool {
		held := 0
		for _, w := range ws.snapshot() {
			if w.end.IsZero() && time.Since(w.start) > 20*time.Millisecond {
				held++
			}
		}
		return held >= 2
	})
	cutAt := time.Now()
	fn.Set(faultnet.Drop, 0, linksOf(c, li)...)
	var electedAt time.Time
	waitFor(t, 10*time.Second, "a new leader on the majority side", func() bool {
		for j := range c.peers {
			if j != li && c.node(j).IsLeader() {
				electedAt = time.Now()
				return true
			}
		}
		return false
	})

	// The bound for a write in flight at the cut: this node notices the
	// leader is gone within a few heartbeat timeouts, then gives it
	// forwardGrace; a write that never left is sent again within its
	// ElectionWait. The slack is for a loaded CI machine.
	inFlightBound := ElectionWait + forwardGrace + 500*time.Millisecond
	// Check before healing; the partition outlasts every bound.
	checkBy := cutAt.Add(4 * time.Second)
	var firstOK time.Time
	var inFlight []timedWrite
	settled := func() bool {
		firstOK, inFlight = time.Time{}, nil
		done := true
		for _, w := range ws.snapshot() {
			if w.start.Before(cutAt) && (w.end.IsZero() || w.end.After(cutAt)) {
				inFlight = append(inFlight, w)
				done = done && !w.end.IsZero()
			}
			if w.start.After(cutAt) && !w.end.IsZero() && w.reply.String() == "OK" && (firstOK.IsZero() || w.end.Before(firstOK)) {
				firstOK = w.end
			}
		}
		return done && !firstOK.IsZero()
	}
	for !settled() && time.Now().Before(checkBy) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(inFlight) == 0 {
		t.Fatal("no write was in flight at the cut")
	}
	var longest time.Duration
	for _, w := range inFlight {
		if w.end.IsZero() {
			t.Fatalf("a write in flight at the cut (sent %v before it) was still unanswered %v after the cut, with the old leader still cut off",
				cutAt.Sub(w.start).Round(time.Millisecond), time.Since(cutAt).Round(time.Millisecond))
		}
		took := w.end.Sub(cutAt)
		longest = max(longest, took)
		if !isOutcome(w.reply) {
			t.Errorf("a write in flight at the cut answered %q", w.reply.String())
		}
		if took > inFlightBound {
			t.Errorf("a write in flight at the cut was answered %v after it (bound %v): %q", took.Round(time.Millisecond), inFlightBound, w.reply.String())
		}
	}
	if firstOK.IsZero() {
		t.Fatalf("no write through the follower succeeded within %v of the cut (new leader elected %v after it)",
			time.Since(cutAt).Round(time.Millisecond), electedAt.Sub(cutAt).Round(time.Millisecond))
	}
	if d := firstOK.Sub(electedAt); d > time.Second {
		t.Errorf("the first write through the follower succeeded %v after the new leader was elected (bound 1s)", d.Round(time.Millisecond))
	}
	// The majority side noticed the silent leader itself (contact.go), not
	// at hashicorp/raft's next random timer.
	pokes := int64(0)
	for j := range c.peers {
		if j != li {
			pokes += c.node(j).metrics.contactPokes.Load()
		}
	}
	if pokes == 0 {
		t.Error("no follower ran its silent-leader check early (raft_silent_leader_checks 0 on both)")
	}
	t.Logf("cut → new leader %v; cut → first successful write through the follower %v; %d writes in flight at the cut, the last answered %v after it",
		electedAt.Sub(cutAt).Round(time.Millisecond), firstOK.Sub(cutAt).Round(time.Millisecond), len(inFlight), longest.Round(time.Millisecond))
}

// TestForwardedWritesOfACutFollower: the follower itself is cut off (the
// minority side). Its writes, in flight or new, are answered TRYAGAIN or
// UNKNOWNOUTCOME within the election wait, never only when the partition
// heals.
func TestForwardedWritesOfACutFollower(t *testing.T) {
	c, fn, _, fi, ws := writingFollower(t, 1)

	cutAt := time.Now()
	fn.Set(faultnet.Drop, 0, linksOf(c, fi)...)
	// Any write takes at most the election wait where there is no leader,
	// or until this node notices the leader is gone, plus forwardGrace.
	bound := ElectionWait + forwardGrace + 500*time.Millisecond
	watchUntil := cutAt.Add(4 * time.Second)
	for time.Now().Before(watchUntil) {
		for _, w := range ws.snapshot() {
			if w.end.IsZero() && time.Since(w.start) > bound {
				t.Fatalf("a write through the cut-off follower was still unanswered after %v (sent %v after the cut)",
					time.Since(w.start).Round(time.Millisecond), w.start.Sub(cutAt).Round(time.Millisecond))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	var longest time.Duration
	answered := 0
	for _, w := range ws.snapshot() {
		if w.end.IsZero() || w.end.Before(cutAt) {
			continue
		}
		answered++
		longest = max(longest, w.end.Sub(w.start))
		if !isOutcome(w.reply) {
			t.Errorf("a write answered %q", w.reply.String())
		}
		if w.start.After(cutAt.Add(2*time.Second)) && w.reply.String() == "OK" {
			t.Errorf("a write through the cut-off follower succeeded %v after the cut", w.end.Sub(cutAt).Round(time.Millisecond))
		}
	}
	if answered == 0 {
		t.Fatal("no write through the cut-off follower was answered")
	}
	t.Logf("%d writes answered through the cut-off follower in %v; the longest took %v", answered, watchUntil.Sub(cutAt), longest.Round(time.Millisecond))
}

// TestBlockedAcquireAcrossACutLeader: a LOCK.ACQUIRE … WAIT blocked on a
// follower keeps its place when the leader is cut off: the waiter is in the
// replicated queue, so the holder's release through the new leader grants
// it, and the client hears its token soon after, not when the partition heals.
func TestBlockedAcquireAcrossACutLeader(t *testing.T) {
	c, fn := proxiedCluster(t)
	li, _ := c.leader()
	f := c.node((li + 1) % 3)
	waitFor(t, 10*time.Second, "the follower to know its leader", func() bool { return f.Serving() && !f.IsLeader() })
	defer fn.Heal()

	held := do(f, "LOCK.ACQUIRE", "job", "a", "PX", "60000")
	if held.Kind != resp.KindInt {
		t.Fatalf("acquire through the follower = %v", held)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waiter := acquireAsync(ctx, f, "LOCK.ACQUIRE", "job", "b", "PX", "60000", "WAIT", "20000")
	waitFor(t, 10*time.Second, "b to queue", func() bool { return queueLength(f, "job") == 1 })

	cutAt := time.Now()
	fn.Set(faultnet.Drop, 0, linksOf(c, li)...)
	oldAddr := c.peers[li].Addr
	waitFor(t, 10*time.Second, "the follower to see a new leader", func() bool {
		a := f.leaderAddr()
		return a != "" && a != oldAddr && (f.IsLeader() || f.Serving())
	})
	var released time.Time
	waitFor(t, 10*time.Second, "the release through the follower, by the new leader", func() bool {
		v := do(f, "LOCK.RELEASE", "job", fmt.Sprint(held.Int))
		if v.Kind == resp.KindInt && v.Int == 1 {
			released = time.Now()
			return true
		}
		if !isOutcome(v) && !(v.IsError() && v.String() == ErrNotReadable.Error()) {
			t.Fatalf("release = %q", v.String())
		}
		return false
	})
	select {
	case r := <-waiter:
		if r.v.Kind != resp.KindInt || r.v.Int <= held.Int {
			t.Fatalf("the blocked acquire answered %v, want a token above %d", r.v, held.Int)
		}
		t.Logf("cut → release through the new leader %v; release → the blocked acquire's token %v",
			released.Sub(cutAt).Round(time.Millisecond), r.at.Sub(released).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatalf("the blocked acquire was not answered within 5s of the release, with the old leader still cut off")
	}
}

// A forwarded batch that got no answer says what failed: reads were not
// served, writes not sent were not applied, writes sent have an unknown
// outcome.
func TestFailedForwardOutcomes(t *testing.T) {
	reqs := []command.Request{req("GET", "k"), req("SET", "k", "v")}
	for _, tc := range []struct {
		notSent bool
		want    []error
	}{
		{true, []error{ErrNotReadable, ErrNotApplied}},
		{false, []error{ErrNotReadable, ErrUnknownOutcome}},
	} {
		out := failedForward(reqs, tc.notSent)
		for i, v := range out {
			if !v.IsError() || v.String() != tc.want[i].Error() {
				t.Errorf("notSent %v, %s: %q, want %q", tc.notSent, reqs[i].Args[0], v.String(), tc.want[i].Error())
			}
		}
	}
	if !strings.Contains(ErrNotReadable.Error(), "read not served") {
		t.Errorf("ErrNotReadable = %q", ErrNotReadable.Error())
	}
}

// TestForwardedRepliesKeepOutcomes: a reply that comes back from the leader
// to the follower that forwarded it keeps its outcome, not only its text
// (command.AppendOutcomes): what the follower decides by (a session gone, a
// refusal to send again) is the leader's typed answer.
func TestForwardedRepliesKeepOutcomes(t *testing.T) {
	c := newCluster(t, 3)
	c.leader()
	f := c.follower(t)
	do := func(args ...string) resp.Value {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return f.Do(ctx, []command.Request{req(args...)})[0]
	}
	if v := do("SET", "plain", "v"); v.String() != "OK" || v.Outcome != outcome.Done {
		t.Fatalf("SET through the follower: %q (%v)", v.String(), v.Outcome)
	}
	for _, c := range []struct {
		args []string
		want outcome.Outcome
	}{
		{[]string{"SESSION.KEEPALIVE", "4242"}, outcome.NoSession},
		{[]string{"HSET", "plain", "f", "v"}, outcome.WrongType},
		{[]string{"LOCK.ACQUIRE", "l", "owner", "SESSION", "4243"}, outcome.NoSession},
	} {
		v := do(c.args...)
		if !v.IsError() || v.Outcome != c.want {
			t.Errorf("%v through the follower: %q with outcome %v, want an error with outcome %v", c.args, v.String(), v.Outcome, c.want)
		}
	}
}
