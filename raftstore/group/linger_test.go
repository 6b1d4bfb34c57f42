package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockd/lockd/resp"
)

// openLingering opens a single-node store whose expected-to-queue acquires
// linger for d.
func openLingering(t *testing.T, d time.Duration) *Store {
	t.Helper()
	s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, lingerFor: d})
	t.Cleanup(func() { s.Close() })
	return s
}

// waitAcquire runs a blocking LOCK.ACQUIRE of name by owner in the background.
func waitAcquire(s *Store, name, owner string) chan result {
	return acquireAsync(context.Background(), s, "LOCK.ACQUIRE", name, owner, "PX", "60000", "WAIT", "30000")
}

// TestQueuedAcquireRidesWithNextWrite: acquires of a held name are not
// proposed alone but just before the next write, in the order they came, so
// that the holder's release and the queued acquires share one commit; and the
// hand-over that follows is what it would be without the wait.
func TestQueuedAcquireRidesWithNextWrite(t *testing.T) {
	s := openLingering(t, 10*time.Minute) // only a write releases them here
	held := do(s, "LOCK.ACQUIRE", "hot", "a", "PX", "60000")
	if held.Kind != resp.KindInt {
		t.Fatalf("first acquire = %v", held)
	}
	before := s.raft.LastIndex()
	b := waitAcquire(s, "hot", "b")
	waitFor(t, 10*time.Second, "b's acquire to linger", func() bool { return s.linger.n.Load() == 1 })
	c := waitAcquire(s, "hot", "c")
	waitFor(t, 10*time.Second, "c's acquire to linger", func() bool { return s.linger.n.Load() == 2 })
	if last := s.raft.LastIndex(); last != before {
		t.Fatalf("log grew from %d to %d while the acquires lingered", before, last)
	}
	if v := do(s, "LOCK.RELEASE", "hot", fmt.Sprint(held.Int)); v.Int != 1 {
		t.Fatalf("release = %v", v)
	}
	// b, c and the release went in that order, one after the other: the
	// release (before+3) granted b, the head of the queue.
	select {
	case res := <-b:
		v := res.v
		if v.Kind != resp.KindInt || uint64(v.Int) != before+3 {
			t.Fatalf("b = %v, want the release's index %d as its token", v, before+3)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b not granted within 10 s of the release")
	}
	if n := queueLength(s, "hot"); n != 1 {
		t.Fatalf("queue length after the hand-over = %d, want 1 (c)", n)
	}
	if v := do(s, "LOCK.RELEASE", "hot", fmt.Sprint(before+3)); v.Int != 1 {
		t.Fatalf("b's release = %v", v)
	}
	select {
	case res := <-c:
		v := res.v
		if v.Kind != resp.KindInt || uint64(v.Int) <= before+3 {
			t.Fatalf("c = %v, want a token above b's %d", v, before+3)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("c not granted within 10 s of b's release")
	}
	if c := s.LockCounters(); c.Lingered != 2 || c.LingeredAlone != 0 {
		t.Fatalf("lingered %d, alone %d; want 2, 0", c.Lingered, c.LingeredAlone)
	}
}

// TestLingerEndsByItself: with no write to ride with, a lingering acquire is
// proposed after the linger time and queues as always.
func TestLingerEndsByItself(t *testing.T) {
	s := openLingering(t, 20*time.Millisecond)
	held := do(s, "LOCK.ACQUIRE", "hot", "a", "PX", "60000")
	b := waitAcquire(s, "hot", "b")
	waitFor(t, 10*time.Second, "b in the queue", func() bool { return queueLength(s, "hot") == 1 })
	if n := s.linger.n.Load(); n != 0 {
		t.Fatalf("%d entries still lingering once b queued", n)
	}
	if c := s.LockCounters(); c.Lingered != 1 || c.LingeredAlone != 1 {
		t.Fatalf("lingered %d, alone %d; want 1, 1", c.Lingered, c.LingeredAlone)
	}
	do(s, "LOCK.RELEASE", "hot", fmt.Sprint(held.Int))
	select {
	case res := <-b:
		v := res.v
		if v.Kind != resp.KindInt {
			t.Fatalf("b = %v, want a token", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b not granted within 10 s of the release")
	}
}

// TestFreeNameDoesNotLinger: a blocking acquire that will be granted is
// proposed at once (it would wait the 10 minutes here otherwise), and so are
// acquires the state machine answers at once: a holder's own, a try-once.
func TestFreeNameDoesNotLinger(t *testing.T) {
	s := openLingering(t, 10*time.Minute)
	for _, owner := range []string{"a", "a"} { // granted, then the holder's own again
		ch := waitAcquire(s, "free", owner)
		select {
		case res := <-ch:
			v := res.v
			if v.Kind != resp.KindInt {
				t.Fatalf("acquire by %s = %v, want a token", owner, v)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("acquire by %s of a name it may have: no answer in 10 s", owner)
		}
	}
	if v := do(s, "LOCK.ACQUIRE", "free", "b"); v.Kind != resp.KindNull {
		t.Fatalf("try-once acquire of a held name = %v, want nil", v)
	}
	if n := s.linger.n.Load(); n != 0 {
		t.Fatalf("%d entries lingering", n)
	}
	if c := s.LockCounters(); c.Lingered != 0 {
		t.Fatalf("lingered %d, want 0", c.Lingered)
	}
}

// TestLingeringAcquireOfClosedStore: closing the store ends a lingering
// acquire (proposed, refused: not leader) instead of leaving it waiting.
func TestLingeringAcquireOfClosedStore(t *testing.T) {
	s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, lingerFor: 10 * time.Minute})
	do(s, "LOCK.ACQUIRE", "hot", "a", "PX", "60000")
	b := waitAcquire(s, "hot", "b")
	waitFor(t, 10*time.Second, "b's acquire to linger", func() bool { return s.linger.n.Load() == 1 })
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case res := <-b:
		v := res.v
		if !v.IsError() {
			t.Fatalf("b on a closed store = %v, want an error", v)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("b still lingering 20 s after Close")
	}
	// Close may still be writing its files when b is answered: the test's
	// directory goes only after it is done.
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return in 20 s")
	}
}
