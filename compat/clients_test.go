//go:build !compat_redis

package compat

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// TestRealClients runs real, unchanged Redis lock clients against redis-server
// and against lockd, and requires the same observable story from both: who
// gets the lock, who is refused, extend, release, expiry. Each scenario returns
// a log of outcomes; the two logs must be equal.
func TestRealClients(t *testing.T) {
	redisAddr := startRedis(t)
	_, lockdAddr := startDefault(t) // as `make run` runs it: the same-value SET NX grant on
	runScenarios(t, redisAddr, lockdAddr, []scenario{
		{"redsync", redsyncScenario},
		{"redislock", redislockScenario},
		{"go-redis Script", scriptScenario},
		{"redis-cli --eval", redisCliEvalScenario},
	})
}

// scenario is a client recipe run against one server: its log of outcomes.
type scenario struct {
	name string
	run  func(t *testing.T, addr string) []string
}

// runScenarios runs each scenario against redis-server, then lockd, as a
// subtest; the two logs must be equal.
func runScenarios(t *testing.T, redisAddr, lockdAddr string, scenarios []scenario) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			want := sc.run(t, redisAddr)
			got := sc.run(t, lockdAddr)
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Fatalf("outcomes differ\nredis-server:\n  %s\nlockd:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
			}
			t.Logf("%d outcomes match:\n  %s", len(got), strings.Join(got, "\n  "))
		})
	}
}

func newClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	return c
}

// waitUntil polls cond every 10 ms for at most d.
func waitUntil(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

func clientOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, redsync.ErrFailed), errors.Is(err, redislock.ErrNotObtained):
		return "not obtained"
	case errors.Is(err, redsync.ErrLockAlreadyExpired), errors.Is(err, redislock.ErrLockNotHeld):
		return "not held"
	}
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		return "taken"
	}
	return "error: " + err.Error()
}

func redsyncScenario(t *testing.T, addr string) []string {
	ctx := context.Background()
	c := newClient(t, addr)
	rs := redsync.New(goredis.NewPool(c))
	var log []string
	add := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }

	m1 := rs.NewMutex("job", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	add("m1 lock: %s", clientOutcome(m1.LockContext(ctx)))
	m2 := rs.NewMutex("job", redsync.WithExpiry(2*time.Second), redsync.WithTries(3), redsync.WithRetryDelay(20*time.Millisecond))
	add("m2 lock while held: %s", clientOutcome(m2.LockContext(ctx)))
	ok, err := m1.ExtendContext(ctx)
	add("m1 extend: %v %s", ok, clientOutcome(err))
	pttl, _ := c.PTTL(ctx, "job").Result()
	add("extended ttl in (1.5s, 2s]: %v", pttl > 1500*time.Millisecond && pttl <= 2*time.Second)
	ok, err = m2.UnlockContext(ctx)
	add("m2 unlock of m1's lock: %v %s", ok, clientOutcome(err))
	ok, err = m1.UnlockContext(ctx)
	add("m1 unlock: %v %s", ok, clientOutcome(err))
	add("m2 lock after release: %s", clientOutcome(m2.LockContext(ctx)))

	// Expiry: a short lock frees itself.
	m3 := rs.NewMutex("short", redsync.WithExpiry(150*time.Millisecond), redsync.WithTries(1))
	add("m3 lock: %s", clientOutcome(m3.LockContext(ctx)))
	gone := waitUntil(5*time.Second, func() bool { n, _ := c.Exists(ctx, "short").Result(); return n == 0 })
	add("short lock expired: %v", gone)
	ok, err = m3.ExtendContext(ctx)
	add("m3 extend after expiry: %v %s", ok, clientOutcome(err))
	m4 := rs.NewMutex("short", redsync.WithExpiry(time.Second), redsync.WithTries(1))
	add("m4 lock after expiry: %s", clientOutcome(m4.LockContext(ctx)))
	ok, err = m3.UnlockContext(ctx)
	add("m3 unlock after losing it: %v %s", ok, clientOutcome(err))
	valid, err := m4.ValidContext(ctx)
	add("m4 valid: %v %s", valid, clientOutcome(err))
	return log
}

func redislockScenario(t *testing.T, addr string) []string {
	ctx := context.Background()
	c := newClient(t, addr)
	lc := redislock.New(c)
	var log []string
	add := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }

	l1, err := lc.Obtain(ctx, "res", time.Second, nil)
	add("obtain: %s", clientOutcome(err))
	_, err = lc.Obtain(ctx, "res", time.Second, nil)
	add("obtain while held: %s", clientOutcome(err))
	_, err = lc.Obtain(ctx, "res", time.Second, &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(20*time.Millisecond), 3)})
	add("obtain with retries while held: %s", clientOutcome(err))
	if l1 == nil {
		return log
	}
	ttl, err := l1.TTL(ctx)
	add("ttl in (0.5s, 1s]: %v %s", ttl > 500*time.Millisecond && ttl <= time.Second, clientOutcome(err))
	add("refresh: %s", clientOutcome(l1.Refresh(ctx, 3*time.Second, nil)))
	ttl, _ = l1.TTL(ctx)
	add("refreshed ttl in (2.5s, 3s]: %v", ttl > 2500*time.Millisecond && ttl <= 3*time.Second)
	add("metadata: %q", l1.Metadata())
	add("release: %s", clientOutcome(l1.Release(ctx)))
	add("release again: %s", clientOutcome(l1.Release(ctx)))
	ttl, err = l1.TTL(ctx)
	add("ttl after release: %v %s", ttl, clientOutcome(err))

	l2, err := lc.Obtain(ctx, "short", 100*time.Millisecond, &redislock.Options{Metadata: "m"})
	add("obtain short: %s", clientOutcome(err))
	gone := waitUntil(5*time.Second, func() bool { n, _ := c.Exists(ctx, "short").Result(); return n == 0 })
	add("short expired: %v", gone)
	if l2 != nil {
		add("refresh after expiry: %s", clientOutcome(l2.Refresh(ctx, time.Second, nil)))
		add("release after expiry: %s", clientOutcome(l2.Release(ctx)))
	}
	return log
}

// scriptScenario uses go-redis's Script: EVALSHA first, EVAL on NOSCRIPT.
func scriptScenario(t *testing.T, addr string) []string {
	ctx := context.Background()
	c := newClient(t, addr)
	var log []string
	add := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	cad := redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	c.ScriptFlush(ctx)
	exists, _ := c.ScriptExists(ctx, cad.Hash()).Result()
	add("exists before: %v", exists)
	c.Set(ctx, "k", "me", 0)
	v, err := cad.Run(ctx, c, []string{"k"}, "other").Result()
	add("cad other: %v %v", v, err)
	exists, _ = c.ScriptExists(ctx, cad.Hash()).Result()
	add("exists after EVAL fallback: %v", exists)
	v, err = cad.EvalSha(ctx, c, []string{"k"}, "me").Result()
	add("evalsha me: %v %v", v, err)
	v, err = cad.Run(ctx, c, []string{"k"}, "me").Result()
	add("cad again: %v %v", v, err)
	bad := redis.NewScript(`return redis.call("nosuch")`)
	_, err = bad.Run(ctx, c, nil).Result()
	add("bad script: %v", err)
	ro := redis.NewScript(`return redis.call("get", KEYS[1])`)
	c.Set(ctx, "r", "x", 0)
	v, err = ro.RunRO(ctx, c, []string{"r"}).Result()
	add("run ro: %v %v", v, err)
	return log
}

// redisCliEvalScenario runs redis-cli --eval with a script file.
func redisCliEvalScenario(t *testing.T, addr string) []string {
	c := newClient(t, addr)
	c.Set(context.Background(), "k", "v1", 0)
	host, port, _ := strings.Cut(addr, ":")
	file := t.TempDir() + "/cas.lua"
	script := `if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("set", KEYS[1], ARGV[2]) return 1 end return 0`
	if err := writeFile(file, script); err != nil {
		t.Fatal(err)
	}
	var log []string
	for _, args := range [][]string{{"k", ",", "v1", "v2"}, {"k", ",", "v1", "v3"}} {
		out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port, "--eval", file}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli --eval: %v: %s", err, out)
		}
		log = append(log, strings.TrimSpace(string(out)))
	}
	v, _ := c.Get(context.Background(), "k").Result()
	return append(log, "k="+v)
}

// TestCachingClient runs rueidis, a client with client-side caching on by
// default (RESP3, CLIENT TRACKING ON OPTIN, and for each cached read CLIENT
// CACHING YES, MULTI, PTTL, GET, EXEC), reading a key that another client
// changes: on redis-server through another connection, on a three-node lockd
// cluster through another node than the one rueidis reads from. The two
// stories must be the same: a cached read is served from the cache until the
// write, and after the write's invalidation the new value is read. rueidis
// keeps its defaults but ForceSingleClient, which keeps it on the node it was
// given rather than following the cluster's slot map.
func TestCachingClient(t *testing.T) {
	redisAddr := startRedis(t)
	want := cachingScenario(t, redisAddr, redisAddr)
	addrs := startLockdCluster(t, 3)
	got := cachingScenario(t, addrs[0], addrs[1])
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Fatalf("outcomes differ\nredis-server:\n  %s\nlockd:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
	}
	t.Logf("%d outcomes match:\n  %s", len(got), strings.Join(got, "\n  "))
}

func cachingScenario(t *testing.T, readAt, writeAt string) []string {
	ctx := context.Background()
	w := newClient(t, writeAt)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{readAt}, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("rueidis: %v", err)
	}
	defer rc.Close()
	var log []string
	add := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	get := func() (string, bool) {
		r := rc.DoCache(ctx, rc.B().Get().Key("cfg").Cache(), time.Minute)
		v, err := r.ToString()
		switch {
		case rueidis.IsRedisNil(err):
			v = "(nil)"
		case err != nil:
			v = "error: " + err.Error()
		}
		return v, r.IsCacheHit()
	}
	if err := w.Set(ctx, "cfg", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	v, hit := get()
	add("first read: %s (from the cache: %v)", v, hit)
	// A node that follows applies a write after its leader answered it: an
	// invalidation of the write before the first read may still come. So
	// the cache is polled, bounded, until it serves the value.
	hitOK := waitUntil(5*time.Second, func() bool { v, hit = get(); return hit })
	add("a later read: %s (from the cache within 5s: %v)", v, hitOK)
	add("write v2: %s", clientOutcome(w.Set(ctx, "cfg", "v2", 0).Err()))
	ok := waitUntil(5*time.Second, func() bool { v, _ = get(); return v == "v2" })
	add("read after the write: %s (within 5s: %v)", v, ok)
	hitOK = waitUntil(5*time.Second, func() bool { v, hit = get(); return hit })
	add("a later read: %s (from the cache within 5s: %v)", v, hitOK)
	add("delete: %s", clientOutcome(w.Del(ctx, "cfg").Err()))
	ok = waitUntil(5*time.Second, func() bool { v, _ = get(); return v == "(nil)" })
	add("read after the delete: %s (within 5s: %v)", v, ok)
	return log
}

// TestRealClientRecipes runs, with go-redis, two recipes that real clients
// build on sorted sets and lists, against redis-server and against lockd, and
// requires the same observable story from both (as TestRealClients): a
// counting semaphore on a sorted set and a mutex whose waiters are woken by a
// push on a list. Each scenario has a scripted, sequential part whose replies
// are logged one by one, and a contended part whose checked properties are
// logged.
func TestRealClientRecipes(t *testing.T) {
	redisAddr := startRedis(t)
	_, lockdAddr := startOther(t)
	runScenarios(t, redisAddr, lockdAddr, []scenario{
		{"sorted-set semaphore", semaphoreScenario},
		{"list-signalled mutex", signalMutexScenario},
	})
}

// The counting semaphore of the redis-semaphore npm library, Redisson's
// RPermitExpirableSemaphore and "Redis in Action" 6.3: a sorted set of holder
// ids scored by the time they acquired (or last refreshed), the time passed by
// the client in milliseconds. Acquire drops the holders older than the ttl
// and joins when fewer than limit remain; refresh moves a holder's score
// (ZADD XX) while it still holds; release is ZREM.
var (
	// KEYS[1] the semaphore; ARGV limit, id, ttl (ms), now (ms). 1 if acquired.
	semAcquire = redis.NewScript(`
local key, limit, id, ttl, now = KEYS[1], tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('zremrangebyscore', key, '-inf', now - ttl)
if redis.call('zcard', key) < limit then
  redis.call('zadd', key, now, id)
  redis.call('pexpire', key, ttl)
  return 1
end
return 0`)
	// KEYS[1] the semaphore; ARGV id, ttl (ms), now (ms). 1 if still held.
	semRefresh = redis.NewScript(`
local key, id, ttl, now = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('zremrangebyscore', key, '-inf', now - ttl)
if redis.call('zscore', key, id) then
  redis.call('zadd', key, 'XX', now, id)
  redis.call('pexpire', key, ttl)
  return 1
end
return 0`)
)

// semaphoreScenario: the semaphore's replies on a scripted sequence with
// the client's clock made up (so the same on both servers), then six clients
// contending for two places on the real clock, then two holders that never
// release and whose places a third gets after their ttl.
func semaphoreScenario(t *testing.T, addr string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(t, addr)
	var log []string
	add := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	const (
		base = int64(1_700_000_000_000) // a made-up "now", in ms
		ttl  = 60_000                   // also the key's PEXPIRE: longer than the sequence runs
	)
	acquire := func(id string, now int64) string {
		v, err := semAcquire.Run(ctx, c, []string{"sem"}, 2, id, ttl, now).Result()
		return fmt.Sprintf("%v %v", v, err)
	}
	refresh := func(id string, now int64) string {
		v, err := semRefresh.Run(ctx, c, []string{"sem"}, id, ttl, now).Result()
		return fmt.Sprintf("%v %v", v, err)
	}
	members := func() string {
		v, err := c.ZRangeWithScores(ctx, "sem", 0, -1).Result()
		return fmt.Sprintf("%v %v", v, err)
	}
	c.ScriptFlush(ctx)
	add("a acquires: %s", acquire("a", base))
	add("b acquires: %s", acquire("b", base+1))
	add("c acquires while full: %s", acquire("c", base+2))
	add("holders: %s", members())
	add("a refreshes: %s", refresh("a", base+30_000))
	n, err := c.ZRem(ctx, "sem", "b").Result()
	add("b releases: %v %v", n, err)
	n, err = c.ZRem(ctx, "sem", "b").Result()
	add("b releases again: %v %v", n, err)
	add("b refreshes after releasing: %s", refresh("b", base+30_000))
	add("c acquires: %s", acquire("c", base+30_001))
	add("d acquires while full: %s", acquire("d", base+30_002))
	pttl, err := c.PTTL(ctx, "sem").Result()
	add("key ttl in (0, ttl]: %v %v", pttl > 0 && pttl <= ttl*time.Millisecond, err)
	add("holders: %s", members())
	// A ttl later a and c are stale (the bound is inclusive: c's score is
	// exactly now - ttl): d takes a place, e the other, f none.
	add("d acquires a ttl later: %s", acquire("d", base+90_001))
	add("holders: %s", members())
	add("e acquires: %s", acquire("e", base+90_001))
	add("f acquires while full: %s", acquire("f", base+90_001))
	add("a refreshes after expiring: %s", refresh("a", base+90_002))
	card, err := c.ZCard(ctx, "sem").Result()
	add("zcard: %v %v", card, err)
	c.Del(ctx, "sem")

	// Contention: six clients, two places, four turns each, on the real clock.
	const (
		clients = 6
		limit   = 2
		turns   = 4
		realTTL = 10_000 // far longer than a turn holds
	)
	var mu sync.Mutex
	holders, most, got, refreshed := 0, 0, 0, 0
	var failures []string
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := range turns {
				id := fmt.Sprintf("w%d.%d", i, turn)
				for {
					v, err := semAcquire.Run(ctx, c, []string{"sem:busy"}, limit, id, realTTL, time.Now().UnixMilli()).Int()
					if err != nil {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("%s acquire: %v", id, err))
						mu.Unlock()
						return
					}
					if v == 1 {
						break
					}
					time.Sleep(2 * time.Millisecond) // the library's retry delay
				}
				mu.Lock()
				holders++
				most = max(most, holders)
				got++
				mu.Unlock()
				time.Sleep(time.Millisecond) // the holder's work
				ok, err := semRefresh.Run(ctx, c, []string{"sem:busy"}, id, realTTL, time.Now().UnixMilli()).Int()
				mu.Lock()
				if ok == 1 && err == nil {
					refreshed++
				}
				holders--
				mu.Unlock()
				if err := c.ZRem(ctx, "sem:busy", id).Err(); err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s release: %v", id, err))
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	add("contention: failures %q", failures)
	add("contention: acquired %d of %d turns, refreshed %d while held", got, clients*turns, refreshed)
	add("contention: never more than %d holders: %v", limit, most <= limit)
	card, err = c.ZCard(ctx, "sem:busy").Result()
	add("contention: holders left: %v %v", card, err)

	// Reclaim: two holders that never release; a third gets a place once
	// their ttl has passed.
	const shortTTL = 300
	takeAt := func(id string, at int64) int {
		v, err := semAcquire.Run(ctx, c, []string{"sem:ghosts"}, limit, id, shortTTL, at).Int()
		if err != nil {
			return -1
		}
		return v
	}
	take := func(id string) int { return takeAt(id, time.Now().UnixMilli()) }
	// Both ghosts at one time, so that they expire together: c then finds
	// both places free at once, on either server, however its polls fall.
	ghostsAt := time.Now().UnixMilli()
	add("ghost-a acquires: %d", takeAt("ghost-a", ghostsAt))
	add("ghost-b acquires: %d", takeAt("ghost-b", ghostsAt))
	add("c acquires while the ghosts hold: %d", take("c"))
	ok := waitUntil(5*time.Second, func() bool { return take("c") == 1 })
	add("c acquires after the ghosts' ttl (within 5s): %v", ok)
	left, err := c.ZRange(ctx, "sem:ghosts", 0, -1).Result()
	add("holders: %v %v", left, err)
	return log
}

// signalMutexScenario: a mutex whose holder releases with DEL lock and RPUSH
// signal:lock 1 in one MULTI, and whose waiters, refused by SET NX PX, wait
// in BLPOP signal:lock 5 and try again. A scripted handover first, then four
// clients taking it five times each: never two holders, and every turn done
// within a bound far under what BLPOP timeouts would take (each waiter is
// woken by a release's push, not by its timeout).
func signalMutexScenario(t *testing.T, addr string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(t, addr)
	var log []string
	add := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	const lockTTL = 10 * time.Second
	release := func(lock string) string {
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, lock)
			p.RPush(ctx, "signal:"+lock, 1)
			return nil
		})
		var out []string
		for _, cmd := range cmds {
			out = append(out, fmt.Sprint(cmd.(*redis.IntCmd).Val()))
		}
		return fmt.Sprintf("%v %v", out, err)
	}
	set := func(lock, who string) string {
		ok, err := c.SetNX(ctx, lock, who, lockTTL).Result()
		return fmt.Sprintf("%v %v", ok, err)
	}

	add("a takes it: %s", set("lock", "a"))
	add("b is refused: %s", set("lock", "b"))
	woken := make(chan string, 1)
	go func() {
		v, err := c.BLPop(ctx, 5*time.Second, "signal:lock").Result()
		woken <- fmt.Sprintf("%q %v", v, err)
	}()
	add("a releases: %s", release("lock"))
	add("b's BLPOP: %s", <-woken)
	add("b takes it: %s", set("lock", "b"))
	add("a is refused: %s", set("lock", "a"))
	add("b releases: %s", release("lock"))
	v, err := c.BLPop(ctx, 5*time.Second, "signal:lock").Result()
	add("a's BLPOP finds the signal: %q %v", v, err)
	add("a takes it: %s", set("lock", "a"))
	n, err := c.Del(ctx, "lock", "signal:lock").Result()
	add("cleanup: %v %v", n, err)

	// Contention: four clients, five turns each. Each BLPOP waits at most
	// 5 s; the whole run is bounded by 30 s, while 20 turns woken only by
	// timeouts would take minutes.
	const (
		clients = 4
		turns   = 5
		bound   = 30 * time.Second
	)
	runCtx, stop := context.WithTimeout(ctx, bound)
	defer stop()
	var mu sync.Mutex
	holding, overlaps, done := 0, 0, 0
	var failures []string
	fail := func(f string, a ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(f, a...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me := fmt.Sprintf("w%d", i)
			for turn := 0; turn < turns; {
				ok, err := c.SetNX(runCtx, "mutex", me, lockTTL).Result()
				if err != nil {
					fail("%s SET NX: %v", me, err)
					return
				}
				if !ok {
					if err := c.BLPop(runCtx, 5*time.Second, "signal:mutex").Err(); err != nil && !errors.Is(err, redis.Nil) {
						fail("%s BLPOP: %v", me, err)
						return
					}
					continue
				}
				mu.Lock()
				holding++
				if holding > 1 {
					overlaps++
				}
				mu.Unlock()
				time.Sleep(time.Millisecond) // the holder's work
				mu.Lock()
				holding--
				done++
				mu.Unlock()
				if _, err := c.TxPipelined(runCtx, func(p redis.Pipeliner) error {
					p.Del(runCtx, "mutex")
					p.RPush(runCtx, "signal:mutex", 1)
					return nil
				}); err != nil {
					fail("%s release: %v", me, err)
					return
				}
				turn++
			}
		}()
	}
	wg.Wait()
	add("contention: failures %q", failures)
	add("contention: %d of %d turns within %v", done, clients*turns, bound)
	add("contention: two holders at once %d times", overlaps)
	n, err = c.Exists(ctx, "mutex").Result()
	add("contention: mutex left held: %v %v", n, err)
	return log
}
