package group

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
)

// popWaiters is the number of blocked pops in s's replica of the state.
func popWaiters(s *Store) int { return s.BlockedPops() }

// TestBlockedPopOnFollowerServed blocks BLPOP clients on a follower; a push
// through the leader serves them in the order they blocked, each woken by
// the follower's own apply; a client that goes away leaves the queue and
// the element stays in the list.
func TestBlockedPopOnFollowerServed(t *testing.T) {
	c := newCluster(t, 3)
	li, leader := c.leader()
	follower := c.node((li + 1) % 3)
	ctx := context.Background()
	first := acquireAsync(ctx, follower, "BLPOP", "q", "0")
	waitFor(t, 5*time.Second, "the first pop to queue", func() bool { return popWaiters(leader) == 1 })
	second := acquireAsync(ctx, follower, "BRPOP", "q", "10")
	waitFor(t, 5*time.Second, "the second pop to queue", func() bool { return popWaiters(leader) == 2 })
	gone, leave := context.WithCancel(ctx)
	third := acquireAsync(gone, follower, "BLPOP", "q", "0")
	waitFor(t, 5*time.Second, "the third pop to queue", func() bool { return popWaiters(leader) == 3 })
	leave()
	<-third
	waitFor(t, 5*time.Second, "the gone client to leave the queue", func() bool { return popWaiters(leader) == 2 })
	if v := do(leader, "RPUSH", "q", "a", "b", "c"); v.Int != 3 {
		t.Fatalf("RPUSH = %v", v)
	}
	for i, want := range []struct {
		ch   chan result
		elem string
	}{{first, "a"}, {second, "c"}} {
		select {
		case r := <-want.ch:
			if r.v.Kind != resp.KindArray || len(r.v.Elems) != 2 || r.v.Elems[1].String() != want.elem {
				t.Fatalf("pop %d got %v, want [q %s]", i+1, r.v, want.elem)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("pop %d on the follower was not served within 5s", i+1)
		}
	}
	if v := do(leader, "LRANGE", "q", "0", "-1"); len(v.Elems) != 1 || v.Elems[0].String() != "b" {
		t.Fatalf("left in the list: %v", v)
	}
	// A timeout on the follower answers a nil array and leaves the queue.
	start := time.Now()
	r := <-acquireAsync(ctx, follower, "BLMOVE", "empty", "d", "LEFT", "RIGHT", "0.3")
	if r.v.Kind != resp.KindNullArray || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("timed-out BLMOVE got %v after %v", r.v, time.Since(start))
	}
	waitFor(t, 5*time.Second, "the timed-out pop to leave", func() bool { return popWaiters(leader) == 0 })
	c.converge()
}

// TestBlockedPopsSurviveLeaderCrash pushes numbered elements while clients
// blocked on followers pop them, and kills the leader midway: no element is
// popped twice, and every element whose push was acknowledged is popped
// exactly once or still in the list — also when a blocking pop's own entry
// had an unknown outcome (its node settles it with POP.CANCEL and its tag).
func TestBlockedPopsSurviveLeaderCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("a leader crash under load")
	}
	c := newCluster(t, 3)
	li, _ := c.leader()
	f1, f2 := (li+1)%3, (li+2)%3
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	popped := map[string]int{}
	var popErrs []string
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		s := c.node([]int{f1, f2}[w%2])
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				v := s.Do(ctx, []command.Request{req("BLPOP", "jobs", "0.5")})[0]
				if v.Kind == resp.KindArray && len(v.Elems) == 2 {
					mu.Lock()
					popped[v.Elems[1].String()]++
					mu.Unlock()
				}
				if v.IsError() {
					mu.Lock()
					popErrs = append(popErrs, v.String())
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	pusher := c.node(f1)
	acked := map[string]bool{}
	maybe := map[string]bool{}
	for i := 0; i < 200; i++ {
		if i == 60 {
			c.crash(li)
		}
		e := fmt.Sprintf("e%d", i)
		v := pusher.Do(context.Background(), []command.Request{req("RPUSH", "jobs", e)})[0]
		if v.Kind == resp.KindInt {
			acked[e] = true
		} else {
			maybe[e] = true // refused or an unknown outcome
			time.Sleep(20 * time.Millisecond)
		}
	}
	_, leader := c.leader()
	waitFor(t, 15*time.Second, "the pops to drain the list", func() bool {
		v := leader.Do(context.Background(), []command.Request{req("LLEN", "jobs")})[0]
		return v.Kind == resp.KindInt && v.Int == 0
	})
	stop()
	wg.Wait()
	left := map[string]bool{}
	for _, e := range leader.Do(context.Background(), []command.Request{req("LRANGE", "jobs", "0", "-1")})[0].Elems {
		left[e.String()] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for e, n := range popped {
		if n > 1 {
			t.Errorf("%s popped %d times", e, n)
		}
		if !acked[e] && !maybe[e] {
			t.Errorf("%s popped but never pushed", e)
		}
	}
	lost := 0
	for e := range acked {
		if popped[e] == 0 && !left[e] {
			lost++
			t.Errorf("%s was pushed (acknowledged) but neither popped nor in the list", e)
		}
	}
	t.Logf("pop errors: %q", popErrs)
	t.Logf("%d acknowledged, %d unknown, %d popped, %d left, %d lost", len(acked), len(maybe), len(popped), len(left), lost)
}

// With a short lease, a client blocked for many leases keeps its place (its
// node renews it), while a waiter no node holds (a POP.WAIT sent past the
// node's own path, as one whose node died) lapses and takes no element.
func TestBlockedPopLease(t *testing.T) {
	old := fsm.PopLease
	fsm.PopLease = 600
	defer func() { fsm.PopLease = old }()
	c := newCluster(t, 3)
	li, leader := c.leader()
	follower := c.node((li + 1) % 3)
	ctx := context.Background()
	orphan := req("POP.WAIT", "orphan-tag", "BLPOP", "q", "0")
	if v := leader.route(ctx, []command.Request{orphan})[0]; !strings.HasPrefix(v.String(), "QUEUED") {
		t.Fatalf("orphan POP.WAIT = %v", v)
	}
	live := acquireAsync(ctx, follower, "BLPOP", "q", "0")
	waitFor(t, 5*time.Second, "both pops to queue", func() bool { return popWaiters(leader) == 2 })
	waitFor(t, 5*time.Second, "the orphan to lapse", func() bool { return popWaiters(leader) == 1 })
	// Three leases more: the live one stays, renewed.
	for until := time.Now().Add(2 * time.Second); time.Now().Before(until) && popWaiters(leader) == 1; {
		select {
		case r := <-live:
			t.Fatalf("the live pop was answered while renewed: %v", r.v)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if n := popWaiters(leader); n != 1 {
		t.Fatalf("%d pops waiting after three leases, want the live one", n)
	}
	if v := do(leader, "RPUSH", "q", "x", "y"); v.Int != 2 {
		t.Fatalf("RPUSH = %v", v)
	}
	select {
	case r := <-live:
		if len(r.v.Elems) != 2 || r.v.Elems[1].String() != "x" {
			t.Fatalf("live pop got %v", r.v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the live pop was not served")
	}
	if v := do(leader, "LRANGE", "q", "0", "-1"); len(v.Elems) != 1 || v.Elems[0].String() != "y" {
		t.Fatalf("left %v: the lapsed orphan took an element", v)
	}
}
