package test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// Issue 48, the cut-over as lock clients live it: redsync clients keep
// taking, extending and releasing locks while lockd follows the Redis they
// use, the Redis pauses its writes, lockd turns writable and the clients are
// switched to it. No lock is ever held by two clients at once, and the
// holders of locks granted by Redis extend and release them on lockd.

// Server names the cut-over test records grants and operations under.
const (
	onRedis = "redis"
	onLockd = "lockd"
)

// switchPool is a redsync pool of one client that can be switched at run
// time: each Get serves the client current at that moment, as a client
// whose configured address changes between two commands does. When ctx
// carries a *sentTo, Get records in it which client it served.
type switchPool struct {
	cur atomic.Pointer[redis.Client]
}

// Get returns a connection to the current client.
func (p *switchPool) Get(ctx context.Context) (rsredis.Conn, error) {
	c := p.cur.Load()
	if rec, ok := ctx.Value(sentToKey{}).(*sentTo); ok {
		rec.c.Store(c)
	}
	return goredis.NewPool(c).Get(ctx)
}

// sentToKey is the context key of a *sentTo.
type sentToKey struct{}

// sentTo records the client a switchPool served last for one redsync call
// (the last Get of a successful LockContext is the acquire that succeeded).
type sentTo struct{ c atomic.Pointer[redis.Client] }

// lockOp is one extend or release a holder sent.
type lockOp struct {
	kind   string // "extend" or "release"
	server string
	ok     bool
	err    string
}

// lockHold is one grant and what its holder did with it.
type lockHold struct {
	name      string
	worker    int
	grantedBy string
	long      bool      // held 300 ms
	at        time.Time // when it was marked held
	ops       []lockOp
	released  bool // a release succeeded
}

// cutoverRun is the state the workers of TestCutOverUnderLockClients share:
// the in-test resource (which worker holds each name) and the record.
type cutoverRun struct {
	mu          sync.Mutex
	held        map[string]*lockHold // name → its holder now
	violations  []string
	holds       []*lockHold
	grants      map[string]int // server → grants
	openOnRedis int            // holds granted by Redis not yet released
	acquireErrs map[string]int // error text (truncated) → count
}

func (r *cutoverRun) grantCount(server string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grants[server]
}

// mark records h's grant and marks its name held; a name already held is a
// violation: two holders at once.
func (r *cutoverRun) mark(h *lockHold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds = append(r.holds, h)
	r.grants[h.grantedBy]++
	if h.grantedBy == onRedis {
		r.openOnRedis++
	}
	if o := r.held[h.name]; o != nil {
		r.violations = append(r.violations, fmt.Sprintf("%s granted to worker %d by %s while worker %d holds it (granted by %s)",
			h.name, h.worker, h.grantedBy, o.worker, o.grantedBy))
		return
	}
	r.held[h.name] = h
}

// unmark ends h's hold of its name in the resource.
func (r *cutoverRun) unmark(h *lockHold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[h.name] == h {
		delete(r.held, h.name)
	}
}

// record appends op to h's operations.
func (r *cutoverRun) record(h *lockHold, op lockOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.ops = append(h.ops, op)
	if op.kind == "release" && op.ok {
		h.released = true
		if h.grantedBy == onRedis {
			r.openOnRedis--
		}
	}
}

// abandon ends h's life in the record (a hold of Redis's whose release never
// succeeded no longer counts as open).
func (r *cutoverRun) abandon(h *lockHold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.grantedBy == onRedis && !h.released {
		r.openOnRedis--
	}
}

func (r *cutoverRun) acquireFailed(err error) {
	s := err.Error()
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) {
		s = "taken"
	}
	if len(s) > 120 {
		s = s[:120]
	}
	r.mu.Lock()
	r.acquireErrs[s]++
	r.mu.Unlock()
}

// TestCutOverUnderLockClients: 8 redsync workers contend for 4 lock names
// through one pool pointed at a real redis-server; meanwhile lockd follows
// that Redis (REPLICAOF), the Redis's writes are paused, lockd catches up to
// its last offset and turns writable (REPLICAOF NO ONE), and the pool is
// switched to lockd; the Redis is never unpaused, and is shut down at the
// end. Never are two holders of one name at once; grants happen on both
// servers; locks granted by Redis are extended and released on lockd; every
// grant is released in the end and lockd holds no lock key.
func TestCutOverUnderLockClients(t *testing.T) {
	ctx := context.Background()
	src, srcAddr := startRedisServer(t)
	nd := startLockd(t, "n1", t.TempDir())
	dst := redis.NewClient(&redis.Options{Addr: nd.addr})
	defer dst.Close()

	// The workers' clients: a command blocked by the pause fails after
	// ReadTimeout instead of hanging, and is never sent again (MaxRetries
	// -1: a resent SET NX would be a second try the worker did not make).
	workerClient := func(addr string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	onR, onL := workerClient(srcAddr), workerClient(nd.addr)
	serverOf := func(rec *sentTo) string {
		switch rec.c.Load() {
		case onR:
			return onRedis
		case onL:
			return onLockd
		}
		return "none"
	}
	pool := &switchPool{}
	pool.cur.Store(onR)
	rs := redsync.New(pool)

	const (
		workers   = 8
		rounds    = 5000
		expiry    = 10 * time.Second
		runFor    = 2 * replTimeout
		opBound   = 20 * time.Second // a holder's retries of its release
		namespace = "cutover:lock:"
	)
	names := []string{namespace + "a", namespace + "b", namespace + "c", namespace + "d"}
	run := &cutoverRun{held: map[string]*lockHold{}, grants: map[string]int{}, acquireErrs: map[string]int{}}
	stop := make(chan struct{})
	stopOnce := sync.OnceFunc(func() { close(stop) })
	defer stopOnce()
	var wg sync.WaitGroup
	deadline := time.Now().Add(runFor)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 48))
			for i := 0; i < rounds && time.Now().Before(deadline); i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := names[r.IntN(len(names))]
				m := rs.NewMutex(name, redsync.WithExpiry(expiry), redsync.WithTries(4))
				acq := &sentTo{}
				if err := m.LockContext(context.WithValue(ctx, sentToKey{}, acq)); err != nil {
					run.acquireFailed(err)
					continue
				}
				h := &lockHold{name: name, worker: w, grantedBy: serverOf(acq), long: r.IntN(4) == 0, at: time.Now()}
				run.mark(h)
				hold := time.Duration(1+r.IntN(30)) * time.Millisecond
				if h.long {
					hold = 300 * time.Millisecond // held across the switch
				}
				time.Sleep(hold) // the critical section's work
				ext := &sentTo{}
				ok, err := m.ExtendContext(context.WithValue(ctx, sentToKey{}, ext))
				run.record(h, lockOp{kind: "extend", server: serverOf(ext), ok: ok, err: errText(err)})
				run.unmark(h)
				// Release; a release lost to the pause (it timed out on
				// the paused Redis, which never runs it) is sent again,
				// to the server current then, as a client does.
				for end := time.Now().Add(opBound); ; {
					rel := &sentTo{}
					ok, err := m.UnlockContext(context.WithValue(ctx, sentToKey{}, rel))
					run.record(h, lockOp{kind: "release", server: serverOf(rel), ok: ok, err: errText(err)})
					var re *redsync.RedisError
					if ok || !errors.As(err, &re) || time.Now().After(end) {
						break
					}
					time.Sleep(20 * time.Millisecond) // the client's retry backoff
				}
				run.abandon(h)
			}
		}()
	}
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()

	// Redis grants for a while before the migration starts.
	if !pollUntil(replTimeout, func() bool { return run.grantCount(onRedis) >= 20 }) {
		t.Fatalf("the workers made %d grants on Redis", run.grantCount(onRedis))
	}
	host, port, _ := strings.Cut(srcAddr, ":")
	if v, err := dst.Do(ctx, "REPLICAOF", host, port).Text(); err != nil || v != "OK" {
		t.Fatalf("REPLICAOF: %q, %v", v, err)
	}
	var caught map[string]string
	if !pollUntil(replTimeout, func() bool {
		caught = replInfo(dst)
		if caught["master_link_status"] != "up" || caught["lockd_full_syncs"] != "1" {
			return false
		}
		var a, b int64
		fmt.Sscan(replInfo(src)["master_repl_offset"], &a)
		fmt.Sscan(caught["slave_repl_offset"], &b)
		return a-b < 64<<10
	}) {
		t.Fatalf("lockd did not catch up with the source: %v", caught)
	}
	// Grants Redis makes while lockd follows reach lockd by the stream.
	streamed := run.grantCount(onRedis)
	if !pollUntil(replTimeout, func() bool { return run.grantCount(onRedis) >= streamed+20 }) {
		t.Fatalf("the workers made %d grants on Redis after the link came up", run.grantCount(onRedis)-streamed)
	}

	// The cut-over (docs/migration.md, steps 5 to 8), written out rather
	// than with cutOver: the source stays paused to the end (a write
	// blocked by the pause must never land on it after the switch), and
	// the switch waits until some worker's write is held by the pause.
	// The pause comes while a long hold granted by Redis has most of its
	// 300 ms to go: its holder extends and releases after the pause.
	if !pollUntil(replTimeout, func() bool {
		run.mu.Lock()
		defer run.mu.Unlock()
		for _, h := range run.held {
			if h.long && h.grantedBy == onRedis && time.Since(h.at) < 100*time.Millisecond {
				return true
			}
		}
		return false
	}) {
		t.Fatal("no worker held a lock granted by Redis for 300 ms")
	}
	pausedAt := time.Now()
	if err := src.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	blocked := func() int {
		var n int
		for _, line := range strings.Split(src.Info(ctx, "clients").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
				fmt.Sscan(v, &n)
			}
		}
		return n
	}
	if !pollUntil(replTimeout, func() bool { return blocked() >= 2 }) {
		t.Fatalf("no worker's write was held by CLIENT PAUSE WRITE (blocked_clients %d)", blocked())
	}
	var want, got string
	if !pollUntil(replTimeout, func() bool {
		want, got = replInfo(src)["master_repl_offset"], replInfo(dst)["slave_repl_offset"]
		return want != "" && want == got
	}) {
		t.Fatalf("lockd's slave_repl_offset %s did not reach the source's master_repl_offset %s", got, want)
	}
	if s := replInfo(dst)["lockd_skipped"]; s != "" {
		t.Errorf("lockd skipped part of the stream: %q", s)
	}
	if v, err := dst.Do(ctx, "REPLICAOF", "NO", "ONE").Text(); err != nil || v != "OK" {
		t.Fatalf("REPLICAOF NO ONE: %q, %v", v, err)
	}
	pool.cur.Store(onL)
	t.Logf("the clients were switched %v after CLIENT PAUSE (%d writes held by it then); %d grants on Redis before it",
		time.Since(pausedAt).Round(time.Millisecond), blocked(), run.grantCount(onRedis))

	// lockd grants; every hold granted by Redis ends (released on lockd).
	if !pollUntil(replTimeout, func() bool {
		run.mu.Lock()
		defer run.mu.Unlock()
		return run.grants[onLockd] >= 20 && run.openOnRedis == 0
	}) {
		run.mu.Lock()
		t.Errorf("after the switch: %d grants on lockd, %d holds granted by Redis still open", run.grants[onLockd], run.openOnRedis)
		run.mu.Unlock()
	}
	// Shut the source down (its blocked commands fail: no grant), then
	// stop the workers.
	probe := redis.NewClient(&redis.Options{Addr: srcAddr, MaxRetries: -1})
	defer probe.Close()
	probe.Do(ctx, "SHUTDOWN", "NOSAVE", "NOW")
	if !pollUntil(replTimeout, func() bool { return probe.Ping(ctx).Err() != nil }) {
		t.Errorf("the source still answers PING after SHUTDOWN")
	}
	stopOnce()
	select {
	case <-workersDone:
	case <-time.After(replTimeout):
		t.Fatalf("the workers did not stop within %v", replTimeout)
	}

	run.mu.Lock()
	defer run.mu.Unlock()
	t.Logf("grants: %d on Redis, %d on lockd; failed acquires: %v", run.grants[onRedis], run.grants[onLockd], run.acquireErrs)
	for i, v := range run.violations {
		if i == 10 {
			t.Errorf("… %d violations in all", len(run.violations))
			break
		}
		t.Errorf("two holders at once: %s", v)
	}
	if run.grants[onRedis] == 0 || run.grants[onLockd] == 0 {
		t.Errorf("grants: %d on Redis, %d on lockd; want both", run.grants[onRedis], run.grants[onLockd])
	}
	imported := map[string]int{} // op kind → successes on lockd of holds granted by Redis
	failed := 0
	lostOnRedis := map[string]int{} // op kind → extends and releases the paused Redis never ran
	for _, h := range run.holds {
		for _, op := range h.ops {
			if op.server == onRedis && !op.ok {
				lostOnRedis[op.kind]++
			}
			if op.server == onLockd && h.grantedBy == onRedis && op.ok {
				imported[op.kind]++
			}
			// A holder's lock is valid on lockd: every extend and
			// release it sends there succeeds.
			if op.server == onLockd && !op.ok {
				if failed++; failed <= 5 {
					t.Errorf("worker %d's %s of %s (granted by %s) on lockd failed: %s", h.worker, op.kind, h.name, h.grantedBy, op.err)
				}
			}
		}
		if !h.released {
			t.Errorf("worker %d's hold of %s (granted by %s) was never released: %+v", h.worker, h.name, h.grantedBy, h.ops)
		}
	}
	if imported["extend"]+imported["release"] == 0 {
		t.Errorf("no lock granted by Redis was extended or released on lockd")
	}
	t.Logf("locks granted by Redis, then extended on lockd: %d, released on lockd: %d; lost to the pause on Redis: %v",
		imported["extend"], imported["release"], lostOnRedis)
	if keys, err := dst.Keys(ctx, namespace+"*").Result(); err != nil || len(keys) != 0 {
		sort.Strings(keys)
		t.Errorf("lock keys left on lockd after every release: %v, %v", keys, err)
	}
}

// errText is err's text, or "".
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestMigrateCommandTargetsLockd: Redis's own MIGRATE, run on a
// redis-server with lockd as its target, moves strings, hashes, lists and
// sorted sets (small and large encodings) with their TTLs into lockd: MIGRATE
// sends SELECT and RESTORE, which lockd has. Each step runs twice, once
// against a second redis-server as the target and once against lockd, and
// must answer the same; then the two targets hold the same keys, values and
// TTLs. What lockd refuses (a set value, a database other than 0) MIGRATE
// reports as the target's error and keeps the source key.
func TestMigrateCommandTargetsLockd(t *testing.T) {
	ctx := context.Background()
	src, _ := startRedisServer(t)
	ref, refAddr := startRedisServer(t)
	nd := startLockd(t, "n1", t.TempDir())
	dst := redis.NewClient(&redis.Options{Addr: nd.addr})
	defer dst.Close()

	fill := func() {
		t.Helper()
		if err := src.FlushAll(ctx).Err(); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
		p := src.Pipeline()
		p.Set(ctx, "m:s", "a lock owner", 100*time.Second)
		p.Set(ctx, "m:n", "12345", 0)
		p.Set(ctx, "m:c", "copied", 0)
		p.HSet(ctx, "m:h", "a", "1", "b", "2")
		p.Expire(ctx, "m:h", 200*time.Second)
		p.RPush(ctx, "m:l", "x", "y", "z")
		p.ZAdd(ctx, "m:z", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: -2, Member: "b"})
		for i := range 300 { // past the listpack limits: hashtable, quicklist, skiplist
			p.HSet(ctx, "m:bigh", fmt.Sprintf("f%d", i), strings.Repeat("v", i%80))
			p.RPush(ctx, "m:bigl", strings.Repeat("e", i%90))
			p.ZAdd(ctx, "m:bigz", redis.Z{Score: float64(i) / 3, Member: fmt.Sprintf("m%d", i)})
		}
		p.PExpire(ctx, "m:bigz", 300*time.Second)
		p.SAdd(ctx, "m:set", "x")
		p.Set(ctx, "m:db1", "x", 0)
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("fill the source: %v", err)
		}
	}
	type step struct {
		args []string // after MIGRATE host port
		gone []string // source keys MIGRATE removed
		kept []string // source keys it kept
	}
	steps := []step{
		{args: []string{"m:s", "0", "5000"}, gone: []string{"m:s"}},
		{args: []string{"", "0", "5000", "REPLACE", "KEYS", "m:n", "m:h", "m:l", "m:z", "m:bigh", "m:bigl", "m:bigz"},
			gone: []string{"m:n", "m:h", "m:l", "m:z", "m:bigh", "m:bigl", "m:bigz"}},
		{args: []string{"m:c", "0", "5000", "COPY"}, kept: []string{"m:c"}},
		{args: []string{"m:c", "0", "5000", "COPY"}, kept: []string{"m:c"}},            // BUSYKEY
		{args: []string{"m:c", "0", "5000", "COPY", "REPLACE"}, kept: []string{"m:c"}}, // replaces it
		{args: []string{"m:missing", "0", "5000"}},                                     // NOKEY
	}
	migrate := func(addr string, s step) string {
		host, port, _ := strings.Cut(addr, ":")
		args := []any{"MIGRATE", host, port}
		for _, a := range s.args {
			args = append(args, a)
		}
		v, err := src.Do(ctx, args...).Result()
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprint(v)
	}
	var refReplies []string
	fill()
	for _, s := range steps {
		refReplies = append(refReplies, migrate(refAddr, s))
	}
	fill()
	for i, s := range steps {
		got := migrate(nd.addr, s)
		if got != refReplies[i] {
			t.Errorf("MIGRATE … %v: to Redis %q, to lockd %q", s.args, refReplies[i], got)
		}
		for _, k := range s.gone {
			if n := src.Exists(ctx, k).Val(); n != 0 {
				t.Errorf("MIGRATE … %v to lockd left %s on the source", s.args, k)
			}
		}
		for _, k := range s.kept {
			if n := src.Exists(ctx, k).Val(); n != 1 {
				t.Errorf("MIGRATE … %v to lockd removed %s from the source", s.args, k)
			}
		}
	}
	t.Logf("MIGRATE replies: %q", refReplies)

	// A set value: lockd refuses it (a Redis target takes it); MIGRATE
	// answers the target's error and keeps the source key.
	const setRefused = "error: ERR Target instance replied with error: ERR lockd does not hold set values"
	if got := migrate(nd.addr, step{args: []string{"m:set", "0", "5000"}}); got != setRefused {
		t.Errorf("MIGRATE m:set to lockd: %q, want %q", got, setRefused)
	}
	if src.Exists(ctx, "m:set").Val() != 1 || dst.Exists(ctx, "m:set").Val() != 0 {
		t.Errorf("after the refused MIGRATE of a set: source holds it %d, lockd %d; want 1, 0",
			src.Exists(ctx, "m:set").Val(), dst.Exists(ctx, "m:set").Val())
	}
	// A database the target lacks: MIGRATE pipelines SELECT and RESTORE,
	// so the target refuses the SELECT and restores into the database the
	// connection is on (0), while MIGRATE answers the SELECT's error and
	// keeps the source key. lockd does as a Redis target does.
	for _, s := range []step{
		{args: []string{"m:db1", "16", "5000", "COPY"}, kept: []string{"m:db1"}},
		{args: []string{"m:db1", "0", "5000", "COPY", "REPLACE"}, kept: []string{"m:db1"}}, // the cached connection selects again
	} {
		want, got := migrate(refAddr, s), migrate(nd.addr, s)
		if got != want {
			t.Errorf("MIGRATE … %v: to Redis %q, to lockd %q", s.args, want, got)
		}
		t.Logf("MIGRATE … %v: %q", s.args, got)
		if src.Exists(ctx, "m:db1").Val() != 1 {
			t.Errorf("MIGRATE … %v removed m:db1 from the source", s.args)
		}
	}
	compareKeyspaces(t, ref, dst)
}
