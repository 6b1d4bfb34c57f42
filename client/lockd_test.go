package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/redis/go-redis/v9"
)

func TestLockdAcquireExtendRelease(t *testing.T) {
	t.Parallel()
	nLifecycle := lockName("it:lifecycle")
	ctx := context.Background()
	l := client.New(newRedis(t, lockdAddr))
	lk, err := l.Acquire(ctx, nLifecycle, client.WithTTL(10*time.Second), client.WithOwner("worker-17"))
	if err != nil {
		t.Fatal(err)
	}
	t1, err := lk.Token()
	if err != nil || t1 <= 0 {
		t.Fatalf("token %d, %v", t1, err)
	}
	if r := lk.Remaining(); r < 5*time.Second || r > 8*time.Second {
		t.Fatalf("%v left of a 10s lease, want at most 8s (10s less the 20%% margin)", r)
	}
	if _, err := l.Acquire(ctx, nLifecycle); !errors.Is(err, client.ErrNotObtained) {
		t.Fatalf("second holder: %v, want ErrNotObtained", err)
	}
	in, err := l.Info(ctx, nLifecycle)
	if err != nil || in == nil || len(in.Holders) != 1 || in.Holders[0].Owner != "worker-17" || in.Holders[0].Token != t1 {
		t.Fatalf("Info = %+v, %v", in, err)
	}
	if ok, err := l.Validate(ctx, nLifecycle, t1); !ok || err != nil {
		t.Fatalf("Validate = %v, %v", ok, err)
	}
	// The same owner asking again gets its grant back.
	again, err := l.Acquire(ctx, nLifecycle, client.WithOwner("worker-17"))
	if tok, _ := again.Token(); err != nil || tok != t1 {
		t.Fatalf("the holder asking again: %d, %v", tok, err)
	}
	if err := lk.Extend(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := lk.Remaining(); r < 12*time.Second || r > 16*time.Second {
		t.Fatalf("%v left after extending to 20s, want at most 16s", r)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if lk.Context().Err() == nil {
		t.Fatal("Context not cancelled by Release")
	}
	if ok, _ := l.Validate(ctx, nLifecycle, t1); ok {
		t.Fatal("a released token validates")
	}
	next, err := l.Acquire(ctx, nLifecycle)
	if err != nil {
		t.Fatal(err)
	}
	if t2, _ := next.Token(); t2 <= t1 {
		t.Fatalf("token %d after %d", t2, t1)
	}
	next.Release(ctx)
}

// A lease that is not extended ends locally (a margin before the server ends
// it); the server then gives the lock to the next owner with a larger token,
// and the old holder's Extend and Release say it was lost.
func TestLockdLeaseLapses(t *testing.T) {
	t.Parallel()
	nLapse := lockName("it:lapse")
	ctx := context.Background()
	// A 1s lease with a 50% margin: the holder stops after 0.5s, the server
	// ends the lease after 1s.
	l := client.New(newRedis(t, lockdAddr), client.WithSafetyMargin(0.5))
	lk, err := l.Acquire(ctx, nLapse, client.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t1, _ := lk.Token()
	select {
	case <-lk.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lock's Context outlived its lease")
	}
	if !errors.Is(context.Cause(lk.Context()), client.ErrLockLost) {
		t.Fatalf("cause %v", context.Cause(lk.Context()))
	}
	if ok, err := l.Validate(ctx, nLapse, t1); err != nil || !ok {
		t.Fatalf("the server ended the lease before the holder's local deadline: %v %v", ok, err)
	}
	var next *client.Lock
	waitUntil(t, 5*time.Second, "the next owner's grant", func() bool {
		next, err = l.Acquire(ctx, nLapse)
		return err == nil
	})
	if t2, _ := next.Token(); t2 <= t1 {
		t.Fatalf("token %d after %d", t2, t1)
	}
	if err := lk.Extend(ctx, 0); !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("Extend after the lease = %v", err)
	}
	if err := lk.Release(ctx); !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("Release after the lease = %v", err)
	}
	if ok, _ := l.Validate(ctx, nLapse, mustToken(t, next)); !ok {
		t.Fatal("the stale holder's release freed the new holder's lock")
	}
}

func mustToken(t *testing.T, lk *client.Lock) int64 {
	t.Helper()
	tok, err := lk.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestLockdSharedAndSemaphore(t *testing.T) {
	t.Parallel()
	nRw := lockName("it:rw")
	nSem := lockName("it:sem")
	ctx := context.Background()
	l := client.New(newRedis(t, lockdAddr))
	r1, err := l.Acquire(ctx, nRw, client.Shared())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.Acquire(ctx, nRw, client.Shared())
	if err != nil {
		t.Fatal(err)
	}
	if mustToken(t, r1) == mustToken(t, r2) {
		t.Fatal("two readers share a token")
	}
	if _, err := l.Acquire(ctx, nRw); !errors.Is(err, client.ErrNotObtained) {
		t.Fatalf("a writer among readers: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := l.Acquire(ctx, nSem, client.Semaphore(2)); err != nil {
			t.Fatalf("slot %d: %v", i+1, err)
		}
	}
	if _, err := l.Acquire(ctx, nSem, client.Semaphore(2)); !errors.Is(err, client.ErrNotObtained) {
		t.Fatalf("a third holder of 2 slots: %v", err)
	}
}

// Locks held in a session live while it is kept alive, end together when it
// is closed, and end when the server has ended the session (NOSESSION on the
// next keepalive).
func TestLockdSession(t *testing.T) {
	t.Parallel()
	nSessA := lockName("it:sess:a")
	nSessB := lockName("it:sess:b")
	nSessC := lockName("it:sess:c")
	ctx := context.Background()
	l := client.New(newRedis(t, lockdAddr))
	s, err := l.OpenSession(ctx, client.WithSessionTTL(5*time.Second), client.WithSessionName("it-session"))
	if err != nil {
		t.Fatal(err)
	}
	if s.TTL() != 5*time.Second {
		t.Fatalf("TTL %v", s.TTL())
	}
	a, err := l.Acquire(ctx, nSessA, client.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Acquire(ctx, nSessB, client.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Extend(ctx, 0); err != nil {
		t.Fatalf("a session lock's Extend (a liveness check): %v", err)
	}
	// Two keepalives (every third of the TTL) keep the session past its
	// first local deadline (4 s).
	select {
	case <-s.Context().Done():
		t.Fatalf("the session ended while kept alive: %v", context.Cause(s.Context()))
	case <-time.After(4500 * time.Millisecond):
	}
	if a.Err() != nil || b.Err() != nil || s.Err() != nil {
		t.Fatalf("session locks lost while kept alive: %v %v %v", a.Err(), b.Err(), s.Err())
	}
	if in, _ := l.Info(ctx, nSessA); in == nil || in.Holders[0].Session != s.ID() || in.Holders[0].TTL != -1 {
		t.Fatalf("Info = %+v", in)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Context().Err() == nil || b.Context().Err() == nil {
		t.Fatal("locks outlived their closed session")
	}
	if in, _ := l.Info(ctx, nSessB); in != nil {
		t.Fatalf("the server still has b: %+v", in)
	}

	// The server ends the session (closed by someone else): the next keepalive
	// hears NOSESSION and the lock is lost at once.
	s2, err := l.OpenSession(ctx, client.WithSessionTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Acquire(ctx, nSessC, client.WithSession(s2))
	if err != nil {
		t.Fatal(err)
	}
	if err := newRedis(t, lockdAddr).Do(ctx, "SESSION.CLOSE", s2.ID()).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lock outlived its session's end on the server")
	}
	if !errors.Is(context.Cause(c.Context()), client.ErrSessionExpired) || !strings.Contains(context.Cause(c.Context()).Error(), "NOSESSION") {
		t.Fatalf("cause %v", context.Cause(c.Context()))
	}
}

// loseReplies makes the first n replies to commands named cmd get lost after
// the server applied them (the hook passes the command on, then drops the
// reply), as a broken connection or a failover does.
type loseReplies struct {
	cmd     string
	n       atomic.Int32
	applied atomic.Int32
}

func (h *loseReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *loseReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *loseReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if strings.EqualFold(cmd.Name(), h.cmd) {
			h.applied.Add(1)
			if h.n.Add(-1) >= 0 {
				cmd.SetErr(io.ErrUnexpectedEOF)
				return io.ErrUnexpectedEOF
			}
		}
		return err
	}
}

// An acquire whose reply is lost after the server granted it is resolved by
// asking the server: the client returns that grant and does not ask again.
func TestLockdLostReplyResolved(t *testing.T) {
	t.Parallel()
	nLostReply := lockName("it:lost-reply")
	nLostWaitReply := lockName("it:lost-wait-reply")
	ctx := context.Background()
	rc := newRedis(t, lockdAddr)
	h := &loseReplies{cmd: "LOCK.ACQUIRE"}
	h.n.Store(1)
	rc.AddHook(h)
	l := client.New(rc)
	lk, err := l.Acquire(ctx, nLostReply)
	if err != nil {
		t.Fatal(err)
	}
	if h.applied.Load() != 1 {
		t.Fatalf("%d acquires reached the server, want 1", h.applied.Load())
	}
	in, err := l.Info(ctx, nLostReply)
	if err != nil || in == nil || len(in.Holders) != 1 || in.Holders[0].Token != mustToken(t, lk) || in.Holders[0].Owner != lk.Owner() {
		t.Fatalf("Info = %+v, %v; lock %d", in, err, mustToken(t, lk))
	}
	// A lost release reply: retried (idempotent), and Release says nil.
	h2 := &loseReplies{cmd: "LOCK.RELEASE"}
	h2.n.Store(1)
	rc.AddHook(h2)
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := l.Info(ctx, nLostReply); in != nil {
		t.Fatalf("still held: %+v", in)
	}

	// A blocking acquire whose reply is lost: the server may withdraw a
	// waiter's grant when its connection closes, so the client gives the
	// grant it finds back and queues again as a new owner.
	h3 := &loseReplies{cmd: "LOCK.ACQUIRE"}
	h3.n.Store(1)
	rc3 := newRedis(t, lockdAddr)
	rc3.AddHook(h3)
	l3 := client.New(rc3)
	lk3, err := l3.Acquire(ctx, nLostWaitReply, client.WithWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	in, err = l.Info(ctx, nLostWaitReply)
	if err != nil || in == nil || len(in.Holders) != 1 || in.Holders[0].Token != mustToken(t, lk3) || in.Waiters != 0 || h3.applied.Load() != 2 {
		t.Fatalf("Info = %+v, %v; lock %d after %d acquires", in, err, mustToken(t, lk3), h3.applied.Load())
	}
	lk3.Release(ctx)
}

// A ClusterClient works too. The test's lockd is a single node, which
// answers CLUSTER SLOTS as a standalone Redis does (cluster support
// disabled), so the client is given the one-node slot map, as go-redis
// documents for servers that are no cluster; on a cluster it reads CLUSTER
// SLOTS itself (test/'s TestClusterAwareClients).
func TestLockdClusterClient(t *testing.T) {
	t.Parallel()
	nCluster := lockName("it:cluster")
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: lockdAddr}}}}, nil
		},
	})
	t.Cleanup(func() { cc.Close() })
	l := client.New(cc)
	s, err := l.OpenSession(ctx, client.WithSessionTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	lk, err := l.Acquire(ctx, nCluster, client.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Validate(ctx, nCluster, mustToken(t, lk)); !ok || err != nil {
		t.Fatalf("Validate = %v, %v", ok, err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A Locker in lockd mode says clearly that plain Redis has no tokens; in
// plain-Redis mode the same API takes efficiency locks.
func TestPlainRedis(t *testing.T) {
	t.Parallel()
	nPlain := lockName("it:plain")
	nPlain2 := lockName("it:plain2")
	nPlain3 := lockName("it:plain3")
	ctx := context.Background()
	addr := startRedis(t)
	rc := newRedis(t, addr)

	_, err := client.New(rc).Acquire(ctx, nPlain)
	if !errors.Is(err, client.ErrNoToken) || !strings.Contains(err.Error(), "PlainRedis") {
		t.Fatalf("lockd mode against Redis: %v, want ErrNoToken naming PlainRedis", err)
	}

	l := client.New(rc, client.PlainRedis())
	lk, err := l.Acquire(ctx, nPlain, client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Token(); !errors.Is(err, client.ErrNoToken) {
		t.Fatalf("Token = %v", err)
	}
	if v, _ := rc.Get(ctx, nPlain).Result(); v != lk.Owner() {
		t.Fatalf("the key holds %q, want the owner %q", v, lk.Owner())
	}
	if _, err := l.Acquire(ctx, nPlain); !errors.Is(err, client.ErrNotObtained) {
		t.Fatalf("second holder: %v", err)
	}
	if err := lk.Extend(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if pttl, _ := rc.PTTL(ctx, nPlain).Result(); pttl <= 15*time.Second {
		t.Fatalf("PTTL %v after extending to 20s", pttl)
	}
	// A waiter polls and gets the lock once it is released.
	got := make(chan error, 1)
	go func() {
		w, err := l.Acquire(ctx, nPlain, client.WithWait(5*time.Second))
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the released lock")
	}
	// Compare-and-delete: a stale holder does not delete the new holder's key.
	old, err := l.Acquire(ctx, nPlain2, client.WithTTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	<-old.Context().Done()
	var cur *client.Lock
	waitUntil(t, 5*time.Second, "the lapsed key's next holder", func() bool {
		cur, err = l.Acquire(ctx, nPlain2)
		return err == nil
	})
	if err := old.Release(ctx); !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("stale Release = %v", err)
	}
	if v, _ := rc.Get(ctx, nPlain2).Result(); v != cur.Owner() {
		t.Fatal("the stale holder's release deleted the new holder's key")
	}
	// A lost SET reply is resolved (GET, then compare-and-pexpire).
	h := &loseReplies{cmd: "SET"}
	h.n.Store(1)
	rc.AddHook(h)
	lk3, err := l.Acquire(ctx, nPlain3)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rc.Get(ctx, nPlain3).Result(); v != lk3.Owner() || h.applied.Load() != 1 {
		t.Fatalf("after a lost reply: key %q, owner %q, %d SETs", v, lk3.Owner(), h.applied.Load())
	}
}

// Blocked acquires are granted in arrival order, each as soon as the lock is
// given back: the server wakes them (FIFO), nobody polls.
func TestLockdWaitFIFO(t *testing.T) {
	t.Parallel()
	nFifo := lockName("it:fifo")
	ctx := context.Background()
	l := client.New(newRedis(t, lockdAddr))
	holder, err := l.Acquire(ctx, nFifo)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		who int
		lk  *client.Lock
		err error
	}
	grants := make(chan grant, 3)
	for i := 1; i <= 3; i++ {
		go func() {
			lk, err := l.Acquire(ctx, nFifo, client.WithWait(20*time.Second), client.WithOwner(fmt.Sprint("waiter-", i)))
			grants <- grant{i, lk, err}
		}()
		waitUntil(t, 5*time.Second, fmt.Sprintf("waiter %d in the queue", i), func() bool {
			in, err := l.Info(ctx, nFifo)
			return err == nil && in != nil && in.Waiters == i
		})
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	last := mustToken(t, holder)
	for want := 1; want <= 3; want++ {
		select {
		case g := <-grants:
			if g.err != nil {
				t.Fatalf("waiter %d: %v", g.who, g.err)
			}
			if g.who != want || mustToken(t, g.lk) <= last {
				t.Fatalf("granted waiter %d (token %d after %d), want waiter %d", g.who, mustToken(t, g.lk), last, want)
			}
			last = mustToken(t, g.lk)
			if g.lk.Remaining() < 9*time.Second {
				t.Fatalf("waiter %d: %v left of a 15s lease", g.who, g.lk.Remaining())
			}
			if err := g.lk.Release(ctx); err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("waiter %d was not granted", want)
		}
	}
}

// A wait that ends answers ErrNotObtained and leaves nothing in the queue; a
// context deadline shorter than the wait bounds it too.
func TestLockdWaitEnds(t *testing.T) {
	t.Parallel()
	nWaitEnds := lockName("it:wait-ends")
	ctx := context.Background()
	l := client.New(newRedis(t, lockdAddr))
	if _, err := l.Acquire(ctx, nWaitEnds); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := l.Acquire(ctx, nWaitEnds, client.WithWait(300*time.Millisecond))
	if !errors.Is(err, client.ErrNotObtained) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("Acquire after %v = %v, want ErrNotObtained after 300ms", time.Since(start), err)
	}
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = l.Acquire(cctx, nWaitEnds, client.WithWait(time.Minute))
	if !errors.Is(err, client.ErrNotObtained) || time.Since(start) > 5*time.Second {
		t.Fatalf("Acquire with a 500ms context = %v after %v", err, time.Since(start))
	}
	if in, _ := l.Info(ctx, nWaitEnds); in == nil || in.Waiters != 0 {
		t.Fatalf("Info = %+v, want the holder and an empty queue", in)
	}
}

// A wait longer than the client's socket read timeout is sent in pieces, so
// that the server answers before the read times out.
func TestLockdWaitLongerThanReadTimeout(t *testing.T) {
	t.Parallel()
	nLongWait := lockName("it:long-wait")
	ctx := context.Background()
	rc := newRedis(t, lockdAddr, func(o *redis.Options) { o.ReadTimeout = 300 * time.Millisecond })
	sent := &loseReplies{cmd: "LOCK.ACQUIRE"} // counts, loses nothing
	rc.AddHook(sent)
	l := client.New(rc)
	holder, err := l.Acquire(ctx, nLongWait)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lk, err := l.Acquire(ctx, nLongWait, client.WithWait(20*time.Second))
		if err == nil {
			err = lk.Release(ctx)
		}
		got <- err
	}()
	waitUntil(t, 10*time.Second, "three pieces of the wait", func() bool { return sent.applied.Load() >= 4 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the long wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long wait was not granted")
	}
}

// A full queue answers ErrQueueFull.
func TestLockdQueueFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc := newRedis(t, lockdAddr)
	nQ := lockName("itq/x")
	if err := rc.Do(ctx, "NAMESPACE.SET", "itq/", "MAXWAITERS", 1).Err(); err != nil {
		t.Fatal(err)
	}
	l := client.New(rc)
	holder, err := l.Acquire(ctx, nQ)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		lk, err := l.Acquire(ctx, nQ, client.WithWait(20*time.Second))
		if err == nil {
			err = lk.Release(ctx)
		}
		first <- err
	}()
	waitUntil(t, 5*time.Second, "the first waiter in the queue", func() bool {
		in, err := l.Info(ctx, nQ)
		return err == nil && in != nil && in.Waiters == 1
	})
	if _, err := l.Acquire(ctx, nQ, client.WithWait(20*time.Second)); !errors.Is(err, client.ErrQueueFull) {
		t.Fatalf("a second waiter: %v, want ErrQueueFull", err)
	}
	holder.Release(ctx)
	select {
	case err := <-first:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first waiter was not granted")
	}
}

// A session opened in a namespace gets the TTL the namespace allows, and its
// deadline counts with that TTL.
func TestLockdSessionNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc := newRedis(t, lockdAddr)
	if err := rc.Do(ctx, "NAMESPACE.SET", "itns/", "MAXTTL", 6000).Err(); err != nil {
		t.Fatal(err)
	}
	l := client.New(rc)
	s, err := l.OpenSession(ctx, client.WithSessionTTL(30*time.Second), client.WithSessionNamespace("itns/"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if s.TTL() != 6*time.Second || s.Remaining() > 4800*time.Millisecond {
		t.Fatalf("TTL %v, %v left; want 6s and at most 4.8s", s.TTL(), s.Remaining())
	}
}
