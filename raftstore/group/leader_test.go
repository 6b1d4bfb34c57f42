package group

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// expiryWait sleeps until the next deadline, at most max, and never
// overflows: a deadline as far ahead as a PXAT allows (or a session-held
// lock's, math.MaxInt64) once made the expiry loop spin on a negative wait.
func TestExpiryWait(t *testing.T) {
	const now = 1_000_000
	for _, c := range []struct {
		d    int64
		want time.Duration
	}{
		{now + 5, 5 * time.Millisecond},
		{now + 999, 999 * time.Millisecond},
		{now + 2000, time.Second},
		{now + 9_000_000_000_000_000, time.Second},
		{math.MaxInt64, time.Second},
	} {
		if got := expiryWait(c.d, now, time.Second); got != c.want {
			t.Errorf("expiryWait(now+%d) = %v, want %v", c.d-now, got, c.want)
		}
	}
}

// TestReadRightAfterTakeover: a strict read sent to a new leader as soon as
// it serves, with no write after its takeover (so nothing but the term's
// no-op and barrier follows what the state machine applied), is answered,
// hand-over after hand-over. Each read is bounded well below the store's
// ApplyTimeout, after which a read waiting for entries the state machine
// never sees would be refused.
func TestReadRightAfterTakeover(t *testing.T) {
	c := newCluster(t, 3)
	li, s := c.leader()
	if v := s.Do(context.Background(), []command.Request{req("SET", "k", "v")})[0]; v.Kind != resp.KindSimple {
		t.Fatalf("SET k v = %v", v)
	}
	for round := range 30 {
		// From the node that took over last: c.leader could pick the one
		// before it, whose view of its office lags its step-down a little.
		s := c.node(li)
		to := (li + 1) % len(c.peers)
		if err := s.raft.LeadershipTransferToServer(raft.ServerID(c.peers[to].ID), raft.ServerAddress(c.peers[to].Addr)).Error(); err != nil {
			t.Fatalf("round %d: transfer to %s: %v", round, c.peers[to].ID, err)
		}
		next := c.node(to)
		for deadline := time.Now().Add(10 * time.Second); !next.IsLeader(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %s does not serve 10 s after the hand-over", round, c.peers[to].ID)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		v := next.Do(ctx, []command.Request{req("GET", "k")})[0]
		cancel()
		if v.Kind != resp.KindBulk || v.String() != "v" {
			t.Fatalf("round %d: GET k through the new leader %s = %v, want \"v\"", round, c.peers[to].ID, v)
		}
		li = to
	}
}

// indexFuture is a barrier future that answered at index.
type indexFuture struct{ index uint64 }

func (f indexFuture) Error() error  { return nil }
func (f indexFuture) Index() uint64 { return f.index }

// errFuture is a future without an index.
type errFuture struct{}

func (errFuture) Error() error { return nil }

// A new leader's state machine is complete up to its takeover barrier's
// index, even while hashicorp/raft's AppliedIndex still lags it (its main
// loop records the batch after the FSM goroutine may have answered the
// barrier); AppliedIndex counts only when it is ahead or the future has no
// index.
func TestTakeoverIndex(t *testing.T) {
	for _, c := range []struct {
		f       raft.Future
		applied uint64
		want    uint64
	}{
		{indexFuture{37}, 35, 37},
		{indexFuture{37}, 37, 37},
		{indexFuture{37}, 40, 40},
		{errFuture{}, 35, 35},
	} {
		if got := takeoverIndex(c.f, c.applied); got != c.want {
			t.Errorf("takeoverIndex(%T %v, applied %d) = %d, want %d", c.f, c.f, c.applied, got, c.want)
		}
	}
}

// A leader whose takeover barrier fails while it still leads (here refused
// twice, as hashicorp/raft refuses it during a leadership transfer) tries
// again and serves, instead of leading a group that never answers.
func TestRefusedTakeoverIsRetried(t *testing.T) {
	var refused atomic.Int32
	s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second,
		refuseTakeover: func() bool { return refused.Add(1) <= 2 }})
	defer s.Close()
	if n := refused.Load(); n != 3 {
		t.Fatalf("the store served after %d takeover attempts, want 3 (two refused)", n)
	}
	if v := do(s, "SET", "k", "v"); v.Kind != resp.KindSimple {
		t.Fatalf("SET k v after the refused takeovers = %v", v)
	}
	if v := do(s, "GET", "k"); v.String() != "v" {
		t.Fatalf("GET k = %v, want \"v\"", v)
	}
}
