package test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// TestRedlockOverOneCluster is a Redlock client (redsync, one pool per node)
// configured with the three nodes of one lockd cluster as its "independent"
// masters, as a team replacing three Redis masters points it (issue 48):
// the first node's SET … NX PX is the grant, and the same owner's SET
// through the other two nodes answers as a grant too (the key holds that
// owner's value: docs/compatibility.md), so the quorum forms. Another owner
// is refused through every node; extend works; release reaches its quorum
// too (the first node's delete frees the key, and the same owner's release
// through the other two answers as that release did: the group keeps the
// released value with the key's tombstone, raftstore/fsm/watch.go) and frees
// the lock on every node, and the other owner acquires after it. A release
// by an owner who no longer holds the lock still fails.
func TestRedlockOverOneCluster(t *testing.T) {
	cl := startCluster(t, 3)
	cl.waitBalanced(spreadTimeout)
	var pools []redis.Pool
	var clients []*goredislib.Client
	for _, nd := range cl.nodes {
		c := goredislib.NewClient(&goredislib.Options{Addr: nd.addrs.resp})
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	rs := redsync.New(pools...)
	opts := []redsync.Option{redsync.WithExpiry(20 * time.Second), redsync.WithTries(1)}
	for _, name := range []string{"orders:42", "{hot}:a", "payments"} { // names of different groups
		first, second := rs.NewMutex(name, opts...), rs.NewMutex(name, opts...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := first.LockContext(ctx); err != nil {
			cancel()
			t.Fatalf("%s: the first owner's Redlock acquire over the 3 nodes failed: %v", name, err)
		}
		// Every node shows the one lock, with the first owner's value.
		for i, c := range clients {
			if v, err := c.Get(ctx, name).Result(); err != nil || v != first.Value() {
				t.Fatalf("%s: node %d GET = %q, %v; want the first owner's value", name, i+1, v, err)
			}
		}
		err := second.LockContext(ctx)
		var taken *redsync.ErrTaken
		if err == nil || !(errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed)) {
			cancel()
			t.Fatalf("%s: a second owner's acquire while the first holds = %v, want refused", name, err)
		}
		if ok, err := first.ExtendContext(ctx); !ok || err != nil {
			cancel()
			t.Fatalf("%s: extend = %v, %v", name, ok, err)
		}
		if ok, err := first.UnlockContext(ctx); !ok || err != nil {
			cancel()
			t.Fatalf("%s: release = %v, %v; want true through all 3 nodes", name, ok, err)
		}
		for i, c := range clients {
			if n, err := c.Exists(ctx, name).Result(); err != nil || n != 0 {
				cancel()
				t.Fatalf("%s: node %d EXISTS after release = %d, %v; want 0", name, i+1, n, err)
			}
		}
		if err := second.LockContext(ctx); err != nil {
			cancel()
			t.Fatalf("%s: the second owner's acquire after release failed: %v", name, err)
		}
		if ok, err := second.UnlockContext(ctx); !ok || err != nil {
			cancel()
			t.Fatalf("%s: the second owner's release = %v, %v", name, ok, err)
		}
		// The first owner's late release: the key's last deletion removed
		// the second owner's value, so it answers as Redis does.
		if ok, err := first.UnlockContext(ctx); ok || err == nil {
			cancel()
			t.Fatalf("%s: the first owner's release after another owner's = %v, %v; want a failure", name, ok, err)
		}
		cancel()
	}
}
