package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
	"github.com/redis/go-redis/v9"
)

// Migration from a running Redis (issue 48): lockd follows a real
// redis-server with REPLICAOF while a writer changes it, survives the loss of
// the node that runs the link with a partial resync, and after the cut-over
// (CLIENT PAUSE WRITE, offsets equal, REPLICAOF NO ONE) holds what the
// source held: every key, value and TTL; imported locks release and new
// grants work.

// replTimeout bounds each wait of these tests.
const replTimeout = 60 * time.Second

// startRedisServer starts a private redis-server (clustertest.StartRedis: a
// free 127.0.0.1 port, up once it answers PING, stopped in t.Cleanup) with a
// backlog large enough for the tests' partial resyncs, and returns a client
// for it, closed in t.Cleanup, and its address.
func startRedisServer(t *testing.T) (*redis.Client, string) {
	t.Helper()
	addr, _ := clustertest.StartRedis(t, "--repl-diskless-sync-delay", "0", "--repl-backlog-size", "256mb")
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c, addr
}

// pollUntil polls cond every 20 ms for at most d.
func pollUntil(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// replInfo reads INFO replication from c as a map.
func replInfo(c *redis.Client) map[string]string {
	out := map[string]string{}
	s, err := c.Info(context.Background(), "replication").Result()
	if err != nil {
		return out
	}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// fillSource writes the data a migration starts from: lock keys with TTLs,
// plain keys (some with TTLs), hashes, lists, sorted sets, and one set and
// one stream (types lockd does not hold), plus a key in db 1.
func fillSource(t *testing.T, src *redis.Client, locks int) {
	t.Helper()
	ctx := context.Background()
	p := src.Pipeline()
	for i := range locks {
		p.Set(ctx, fmt.Sprintf("lock:%d", i), fmt.Sprintf("owner-%d", i), time.Duration(60+i%60)*time.Second)
	}
	for i := range 500 {
		ttl := time.Duration(0)
		if i%3 == 0 {
			ttl = 300 * time.Second
		}
		p.Set(ctx, fmt.Sprintf("plain:%d", i), strings.Repeat("v", i%40), ttl)
	}
	for i := range 200 {
		p.HSet(ctx, fmt.Sprintf("h:%d", i), "a", i, "b", "x", "c", strings.Repeat("y", 70))
	}
	for i := range 50 {
		p.RPush(ctx, fmt.Sprintf("l:%d", i), "a", "b", i)
		p.ZAdd(ctx, fmt.Sprintf("z:%d", i), redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: float64(i), Member: "b"})
	}
	p.SAdd(ctx, "a-set", "x", "y")
	p.XAdd(ctx, &redis.XAddArgs{Stream: "a-stream", Values: []string{"f", "v"}})
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("fill the source: %v", err)
	}
	c1 := redis.NewClient(&redis.Options{Addr: src.Options().Addr, DB: 1})
	defer c1.Close()
	c1.Set(ctx, "in-db-1", "x", 0)
}

// sourceWriter changes the source until stop is closed: lock grants and
// releases, counters, hash fields, expiries, list pushes and pops, and
// MULTI/EXEC blocks. It returns the number of writes Redis acknowledged.
func sourceWriter(src *redis.Client, stop <-chan struct{}, seed uint64) func() int64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx := context.Background()
		r := rand.New(rand.NewPCG(seed, 1))
		for i := 0; i < 200000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			switch r.IntN(8) {
			case 0:
				err = src.Set(ctx, fmt.Sprintf("lock:%d", r.IntN(4000)), fmt.Sprintf("w-%d", i), time.Duration(30+r.IntN(60))*time.Second).Err()
			case 1:
				err = src.Del(ctx, fmt.Sprintf("lock:%d", r.IntN(4000)), fmt.Sprintf("plain:%d", r.IntN(500))).Err()
			case 2:
				err = src.Incr(ctx, fmt.Sprintf("ctr:%d", r.IntN(20))).Err()
			case 3:
				err = src.HSet(ctx, fmt.Sprintf("h:%d", r.IntN(300)), "w", i).Err()
			case 4:
				err = src.PExpire(ctx, fmt.Sprintf("plain:%d", r.IntN(500)), 200*time.Second).Err()
			case 5:
				err = src.RPush(ctx, fmt.Sprintf("l:%d", r.IntN(60)), i).Err()
			case 6:
				err = src.LPop(ctx, fmt.Sprintf("l:%d", r.IntN(60))).Err()
			case 7:
				_, err = src.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Incr(ctx, "tx:a")
					p.ZAdd(ctx, fmt.Sprintf("z:%d", r.IntN(60)), redis.Z{Score: float64(i), Member: strconv.Itoa(i)})
					return nil
				})
			}
			if err == nil || err == redis.Nil {
				n.Add(1)
			}
		}
	}()
	return func() int64 { wg.Wait(); return n.Load() }
}

// cutOver pauses the source's writes, waits until the lockd node running the
// link (dst: the client of the node that runs it now) has every byte of the
// source's stream, and turns lockd writable.
func cutOver(t *testing.T, src *redis.Client, dst func() *redis.Client) {
	t.Helper()
	ctx := context.Background()
	if err := src.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	t.Cleanup(func() { src.Do(context.Background(), "CLIENT", "UNPAUSE") })
	var want, got string
	var c *redis.Client
	if !pollUntil(replTimeout, func() bool {
		c = dst()
		want, got = replInfo(src)["master_repl_offset"], replInfo(c)["slave_repl_offset"]
		return want != "" && want == got
	}) {
		t.Fatalf("lockd's slave_repl_offset %s did not reach the source's master_repl_offset %s", got, want)
	}
	if v, err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Text(); err != nil || v != "OK" {
		t.Fatalf("REPLICAOF NO ONE: %q, %v", v, err)
	}
}

// compareKeyspaces checks that dst holds every db-0 key of src of the kinds
// lockd holds, with the same value and a TTL within tolerance, and no other
// key.
func compareKeyspaces(t *testing.T, src, dst *redis.Client) {
	t.Helper()
	ctx := context.Background()
	keys, err := src.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatalf("KEYS on the source: %v", err)
	}
	want := map[string]bool{}
	diffs := 0
	for _, k := range keys {
		typ := src.Type(ctx, k).Val()
		if typ == "set" || typ == "stream" {
			continue
		}
		want[k] = true
		var a, b string
		switch typ {
		case "string":
			a, b = src.Get(ctx, k).Val(), dst.Get(ctx, k).Val()
		case "hash":
			a, b = fmt.Sprint(src.HGetAll(ctx, k).Val()), fmt.Sprint(dst.HGetAll(ctx, k).Val())
		case "list":
			a, b = fmt.Sprint(src.LRange(ctx, k, 0, -1).Val()), fmt.Sprint(dst.LRange(ctx, k, 0, -1).Val())
		case "zset":
			a, b = fmt.Sprint(src.ZRangeWithScores(ctx, k, 0, -1).Val()), fmt.Sprint(dst.ZRangeWithScores(ctx, k, 0, -1).Val())
		}
		ta, tb := src.PTTL(ctx, k).Val(), dst.PTTL(ctx, k).Val()
		ttlOK := (ta < 0 && tb == ta) || (ta >= 0 && tb >= 0 && (ta-tb).Abs() < 3*time.Second)
		if a != b || !ttlOK {
			if diffs++; diffs <= 5 {
				t.Errorf("key %s (%s): source %q ttl %v, lockd %q ttl %v", k, typ, a, ta, b, tb)
			}
		}
	}
	extra, err := dst.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatalf("KEYS on lockd: %v", err)
	}
	for _, k := range extra {
		if !want[k] {
			if diffs++; diffs <= 10 {
				t.Errorf("lockd holds %s, the source does not", k)
			}
		}
	}
	if diffs > 0 {
		t.Fatalf("%d differences between the source (%d keys) and lockd (%d keys)", diffs, len(want), len(extra))
	}
	t.Logf("%d keys equal on the source and lockd", len(want))
}

// TestReplicaOfRedis: one lockd node follows a redis-server under a write
// load; it is killed -9 mid-stream and restarted, and resumes with a partial
// resync; after the cut-over it holds what the source held.
func TestReplicaOfRedis(t *testing.T) {
	ctx := context.Background()
	src, srcAddr := startRedisServer(t)
	fillSource(t, src, 3000)
	dir := t.TempDir()
	nd := startLockd(t, "n1", dir)
	dst := redis.NewClient(&redis.Options{Addr: nd.addr})
	defer dst.Close()

	stop := make(chan struct{})
	writes := sourceWriter(src, stop, 1)
	host, port, _ := strings.Cut(srcAddr, ":")
	if v, err := dst.Do(ctx, "REPLICAOF", host, port).Text(); err != nil || v != "OK" {
		t.Fatalf("REPLICAOF: %q, %v", v, err)
	}
	if !pollUntil(replTimeout, func() bool {
		i := replInfo(dst)
		return i["master_link_status"] == "up" && i["lockd_full_syncs"] == "1"
	}) {
		t.Fatalf("the link did not come up after a full sync: %v", replInfo(dst))
	}
	if err := dst.Set(ctx, "client-write", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY ") {
		t.Fatalf("a client's write while following: %v, want READONLY", err)
	}
	// What lockd does not hold is counted and named, not dropped silently.
	for _, want := range []string{"type_set=1", "type_stream=1", "db_1=1"} {
		if s := replInfo(dst)["lockd_skipped"]; !strings.Contains(s, want) {
			t.Errorf("lockd_skipped %q lacks %s", s, want)
		}
	}
	// The stream runs a while, then the node dies mid-stream.
	before := replInfo(dst)["slave_repl_offset"]
	pollUntil(replTimeout, func() bool { return replInfo(dst)["slave_repl_offset"] != before })
	nd.kill()
	nd = startLockd(t, "n1b", dir)
	dst = redis.NewClient(&redis.Options{Addr: nd.addr})
	defer dst.Close()
	if !pollUntil(replTimeout, func() bool { return replInfo(dst)["master_link_status"] == "up" }) {
		t.Fatalf("the restarted node did not resume the link: %v", replInfo(dst))
	}
	if i := replInfo(dst); i["lockd_partial_syncs"] != "1" || i["lockd_full_syncs"] != "0" {
		t.Fatalf("the restarted node resumed with %s full and %s partial syncs, want a partial one only", i["lockd_full_syncs"], i["lockd_partial_syncs"])
	}
	close(stop)
	t.Logf("the source acknowledged %d writes during the migration", writes())
	cutOver(t, src, func() *redis.Client { return dst })
	compareKeyspaces(t, src, dst)
	if s := replInfo(dst); s["role"] != "master" {
		t.Fatalf("after REPLICAOF NO ONE INFO says role %q", s["role"])
	}

	// Imported locks: their holders release and extend them with the usual
	// scripts; new grants carry tokens.
	const cad = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	keys := dst.Keys(ctx, "lock:*").Val()
	if len(keys) == 0 {
		t.Fatal("no lock key was imported")
	}
	owner := src.Get(ctx, keys[0]).Val()
	if n, err := dst.Eval(ctx, cad, []string{keys[0]}, owner).Int(); err != nil || n != 1 {
		t.Fatalf("releasing imported %s as its owner: %d, %v", keys[0], n, err)
	}
	var highest int64 // the highest fencing token of an imported lock key
	for _, k := range keys[1:] {
		if v, err := dst.Do(ctx, "FENCE", k).Int64(); err == nil {
			highest = max(highest, v)
		}
	}
	if tok, err := dst.Do(ctx, "SET", keys[0], "new-owner", "NX", "PX", "10000", "FENCE").Int64(); err != nil || tok <= highest {
		t.Fatalf("a new grant of %s: token %d, %v; want above every imported key's (%d)", keys[0], tok, err, highest)
	}
	if err := dst.Set(ctx, "client-write", "x", 0).Err(); err != nil {
		t.Fatalf("a client's write after REPLICAOF NO ONE: %v", err)
	}
}

// currentLinkNode is a client of the running node that says it runs the
// link now (a fresh one each call, closed in t.Cleanup), or of the first
// running node when none does.
func currentLinkNode(t *testing.T, cl *lockdCluster) *redis.Client {
	var first *redis.Client
	for _, nd := range cl.running() {
		c := redis.NewClient(&redis.Options{Addr: nd.addrs.resp})
		t.Cleanup(func() { c.Close() })
		if first == nil {
			first = c
		}
		if replInfo(c)["lockd_link_here"] == "1" {
			return c
		}
	}
	return first
}

// linkNode polls until a running node of cl says it runs the link (it leads
// group 0) with the link up, and returns a client for it.
func linkNode(t *testing.T, cl *lockdCluster) (*clusterNode, *redis.Client) {
	t.Helper()
	var found *clusterNode
	var views []string
	if !pollUntil(replTimeout, func() bool {
		views = views[:0]
		for _, nd := range cl.running() {
			c := redis.NewClient(&redis.Options{Addr: nd.addrs.resp})
			i := replInfo(c)
			c.Close()
			views = append(views, fmt.Sprintf("%s: here %s link %s", nd.id, i["lockd_link_here"], i["master_link_status"]))
			if i["lockd_link_here"] == "1" && i["master_link_status"] == "up" {
				found = nd
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no node runs an up link: %v", views)
	}
	c := redis.NewClient(&redis.Options{Addr: found.addrs.resp})
	t.Cleanup(func() { c.Close() })
	return found, c
}

// TestReplicaOfRedisCluster: a 3-node cluster of 4 groups follows a
// redis-server under a write load (REPLICAOF through a node that may not run
// the link); the node that runs it (the leader of group 0) is killed -9
// mid-stream, and the new leader of group 0 resumes with a partial resync;
// after the cut-over every node holds what the source held.
func TestReplicaOfRedisCluster(t *testing.T) {
	ctx := context.Background()
	src, srcAddr := startRedisServer(t)
	fillSource(t, src, 2000)
	cl := startCluster(t, 3, "-groups", "4")
	cl.waitBalanced(spreadTimeout)
	any := redis.NewClient(&redis.Options{Addr: cl.nodes[1].addrs.resp})
	defer any.Close()

	stop := make(chan struct{})
	writes := sourceWriter(src, stop, 2)
	host, port, _ := strings.Cut(srcAddr, ":")
	if v, err := any.Do(ctx, "REPLICAOF", host, port).Text(); err != nil || v != "OK" {
		t.Fatalf("REPLICAOF: %q, %v", v, err)
	}
	first, fc := linkNode(t, cl)
	if i := replInfo(fc); i["lockd_full_syncs"] != "1" {
		t.Fatalf("the first link: %v", i)
	}
	for _, nd := range cl.nodes {
		c := redis.NewClient(&redis.Options{Addr: nd.addrs.resp})
		err := c.Set(ctx, "client-write", "x", 0).Err()
		c.Close()
		if err == nil || !strings.HasPrefix(err.Error(), "READONLY ") {
			t.Fatalf("a client's write through %s while following: %v, want READONLY", nd.id, err)
		}
	}
	before := replInfo(fc)["slave_repl_offset"]
	pollUntil(replTimeout, func() bool { return replInfo(fc)["slave_repl_offset"] != before })
	t.Logf("killing %s, which runs the link, at offset %s", first.id, replInfo(fc)["slave_repl_offset"])
	cl.kill(first)
	second, sc := linkNode(t, cl)
	if i := replInfo(sc); i["lockd_partial_syncs"] != "1" || i["lockd_full_syncs"] != "0" {
		t.Fatalf("%s resumed the link with %s full and %s partial syncs, want a partial one only", second.id, i["lockd_full_syncs"], i["lockd_partial_syncs"])
	}
	// What the first link did not import is still named, on every node
	// (group 0 records it).
	for _, nd := range cl.running() {
		c := redis.NewClient(&redis.Options{Addr: nd.addrs.resp})
		sk := replInfo(c)["lockd_skipped"]
		c.Close()
		for _, want := range []string{"type_set=1", "type_stream=1", "db_1=1"} {
			if !strings.Contains(sk, want) {
				t.Errorf("%s: lockd_skipped %q lacks %s", nd.id, sk, want)
			}
		}
	}
	cl.restart(first)
	close(stop)
	t.Logf("the source acknowledged %d writes during the migration", writes())
	cutOver(t, src, func() *redis.Client { return currentLinkNode(t, cl) })
	for _, nd := range cl.nodes {
		c := redis.NewClient(&redis.Options{Addr: nd.addrs.resp})
		compareKeyspaces(t, src, c)
		c.Close()
	}
	for _, nd := range cl.nodes {
		c := redis.NewClient(&redis.Options{Addr: nd.addrs.resp})
		if err := c.Set(ctx, "client-write:"+nd.id, "x", 0).Err(); err != nil {
			t.Fatalf("a client's write through %s after REPLICAOF NO ONE: %v", nd.id, err)
		}
		c.Close()
	}
}

// TestReplicaOfStopsAtUnsupported: with -replica-unsupported stop, the link
// stops at the first value lockd cannot import and INFO names it; after
// REPLICAOF NO ONE and the source fixed, REPLICAOF follows again; CONFIG
// SET lockd-replica-unsupported switches the mode.
func TestReplicaOfStopsAtUnsupported(t *testing.T) {
	ctx := context.Background()
	src, srcAddr := startRedisServer(t)
	src.Set(ctx, "k", "v", 0)
	src.SAdd(ctx, "a-set", "x")
	nd := startLockdArgs(t, "n1", t.TempDir(), "-replica-unsupported", "stop")
	dst := redis.NewClient(&redis.Options{Addr: nd.addr})
	defer dst.Close()
	if v := dst.ConfigGet(ctx, "lockd-replica-unsupported").Val()["lockd-replica-unsupported"]; v != "stop" {
		t.Fatalf("CONFIG GET lockd-replica-unsupported = %q", v)
	}
	host, port, _ := strings.Cut(srcAddr, ":")
	dst.Do(ctx, "REPLICAOF", host, port)
	var i map[string]string
	if !pollUntil(replTimeout, func() bool {
		i = replInfo(dst)
		return strings.Contains(i["lockd_link_error"], "stopped at type set")
	}) {
		t.Fatalf("the link did not stop at the set: %v", i)
	}
	if i["master_link_status"] != "down" {
		t.Fatalf("a stopped link says master_link_status:%s", i["master_link_status"])
	}
	// It stays stopped: no retry that would make the source sync again.
	syncs := func() string {
		s := src.Info(ctx, "stats").Val()
		_, v, _ := strings.Cut(s, "sync_full:")
		v, _, _ = strings.Cut(v, "\r\n")
		return v
	}
	full := syncs()
	time.Sleep(2 * time.Second) // a span in which a retrying link (1 s back-off) would have synced again; not synchronisation
	if s := replInfo(dst); !strings.Contains(s["lockd_link_error"], "stopped at") || syncs() != full {
		t.Fatalf("the stopped link started again (source full syncs %s, then %s): %v", full, syncs(), s)
	}
	dst.Do(ctx, "REPLICAOF", "NO", "ONE")
	src.Del(ctx, "a-set")
	if err := dst.ConfigSet(ctx, "lockd-replica-unsupported", "count").Err(); err != nil {
		t.Fatalf("CONFIG SET lockd-replica-unsupported count: %v", err)
	}
	if err := dst.ConfigSet(ctx, "lockd-replica-unsupported", "maybe").Err(); err == nil {
		t.Fatal("CONFIG SET lockd-replica-unsupported maybe was accepted")
	}
	dst.Do(ctx, "REPLICAOF", host, port)
	if !pollUntil(replTimeout, func() bool { i = replInfo(dst); return i["master_link_status"] == "up" }) {
		t.Fatalf("REPLICAOF after the fix: %v", i)
	}
	if v := dst.Get(ctx, "k").Val(); v != "v" {
		t.Fatalf("k = %q after following again", v)
	}
}

// TestReplicaOfFollowsASourceFailover: the source fails over to its own
// replica (promoted with REPLICAOF NO ONE); REPLICAOF to the promoted one
// continues with a partial sync, as a Redis replica does, and keeps what
// was imported.
func TestReplicaOfFollowsASourceFailover(t *testing.T) {
	ctx := context.Background()
	src, srcAddr := startRedisServer(t)
	standby, standbyAddr := startRedisServer(t)
	host, port, _ := strings.Cut(srcAddr, ":")
	shost, sport, _ := strings.Cut(standbyAddr, ":")
	if err := standby.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		src.Set(ctx, fmt.Sprintf("k%d", i), i, 0)
	}
	nd := startLockd(t, "n1", t.TempDir())
	dst := redis.NewClient(&redis.Options{Addr: nd.addr})
	defer dst.Close()
	dst.Do(ctx, "REPLICAOF", host, port)
	caughtUp := func(c *redis.Client, offsetOf *redis.Client) bool {
		want := replInfo(offsetOf)["master_repl_offset"]
		return replInfo(c)["master_link_status"] == "up" && replInfo(c)["slave_repl_offset"] == want
	}
	if !pollUntil(replTimeout, func() bool { return caughtUp(dst, src) && caughtUp(standby, src) }) {
		t.Fatalf("lockd %v, standby %v did not catch up with the source", replInfo(dst), replInfo(standby))
	}
	// The failover: the standby is promoted; lockd follows it.
	if err := standby.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	standby.Set(ctx, "after-failover", "1", 0)
	dst.Do(ctx, "REPLICAOF", shost, sport)
	var i map[string]string
	if !pollUntil(replTimeout, func() bool { i = replInfo(dst); return i["master_port"] == sport && caughtUp(dst, standby) }) {
		t.Fatalf("lockd did not follow the promoted standby: %v", i)
	}
	if i["lockd_partial_syncs"] != "1" || i["lockd_full_syncs"] != "0" {
		t.Fatalf("following the promoted standby took %s full and %s partial syncs, want one partial", i["lockd_full_syncs"], i["lockd_partial_syncs"])
	}
	if v := dst.Get(ctx, "after-failover").Val(); v != "1" || dst.Get(ctx, "k199").Val() != "199" {
		t.Fatalf("after the failover lockd holds after-failover=%q k199=%q", v, dst.Get(ctx, "k199").Val())
	}
	// FLUSHDB of database 0 empties lockd (it has one database).
	standby.FlushDB(ctx)
	if !pollUntil(replTimeout, func() bool { return dst.DBSize(ctx).Val() == 0 }) {
		t.Fatalf("after the source's FLUSHDB lockd holds %d keys", dst.DBSize(ctx).Val())
	}
}
