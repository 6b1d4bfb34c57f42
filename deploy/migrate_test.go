package deploy

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
	"github.com/redis/go-redis/v9"
)

// TestMigrateScript runs deploy/migrate-from-redis.sh as docs/migration.md
// tells a user to: a redis-server with lock keys and a hash, a lone lockd,
// the script with both addresses. It must end with lockd writable and
// holding the source's keys, the source paused, and the set it cannot import
// named; and it must stop with a message, leaving nothing paused, when the
// source does not answer.
func TestMigrateScript(t *testing.T) {
	tool(t, "redis-cli", "redis-tools")
	ctx := context.Background()
	srcAddr, _ := clustertest.StartRedis(t, "--repl-diskless-sync-delay", "0") // bound before freeAddrs looks
	addrs := append([]string{srcAddr}, freeAddrs(t, 3)...)
	dir := t.TempDir()
	node := exec.Command(lockdBin, "-addr", addrs[1], "-peer-addr", addrs[2], "-http-addr", addrs[3], "-data-dir", filepath.Join(dir, "lockd"))
	var logs syncBuffer
	node.Stderr = &logs
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Process.Kill(); node.Wait() })
	src := redis.NewClient(&redis.Options{Addr: srcAddr})
	dst := redis.NewClient(&redis.Options{Addr: addrs[1]})
	defer src.Close()
	defer dst.Close()
	for end := time.Now().Add(30 * time.Second); src.Ping(ctx).Err() != nil || dst.Set(ctx, "probe", "1", 0).Err() != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("redis-server or lockd did not start:\n%s", &logs)
		}
	}
	dst.Del(ctx, "probe")
	for i := range 100 {
		src.Set(ctx, fmt.Sprintf("lock:%d", i), fmt.Sprintf("owner-%d", i), time.Minute)
	}
	src.HSet(ctx, "h", "f", "v")
	src.SAdd(ctx, "a-set", "x")

	// A source that is not there: a clear message, exit 1.
	out, err := run(t, "", nil, "sh", "migrate-from-redis.sh", "127.0.0.1:1", addrs[1])
	if err == nil || !strings.Contains(out, "migrate: the source 127.0.0.1:1 does not answer PING") {
		t.Fatalf("with no source: %v\n%s", err, out)
	}

	out, err = run(t, "", []string{"PATH=" + pathEnv(), "TIMEOUT=30", "PAUSE_MS=20000"}, "sh", "migrate-from-redis.sh", srcAddr, addrs[1])
	if err != nil {
		t.Fatalf("migrate-from-redis.sh: %v\n%s\nlockd:\n%s", err, out, &logs)
	}
	defer src.Do(ctx, "CLIENT", "UNPAUSE")
	if !strings.Contains(out, "migrate: done") || !strings.Contains(out, "type_set=1") {
		t.Fatalf("the script's report lacks its end or the skipped set:\n%s", out)
	}
	for i := range 100 {
		k := fmt.Sprintf("lock:%d", i)
		if v := dst.Get(ctx, k).Val(); v != fmt.Sprintf("owner-%d", i) {
			t.Fatalf("%s on lockd = %q after the script", k, v)
		}
		if ttl := dst.PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Minute {
			t.Fatalf("%s's TTL on lockd = %v", k, ttl)
		}
	}
	if v := dst.HGet(ctx, "h", "f").Val(); v != "v" {
		t.Fatalf("h on lockd: %q", v)
	}
	if err := dst.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("a write to lockd after the script: %v", err)
	}
	// The source stays paused until the user unpauses it: a write waits.
	short := redis.NewClient(&redis.Options{Addr: srcAddr, ReadTimeout: 300 * time.Millisecond})
	defer short.Close()
	if err := short.Set(ctx, "during-pause", "1", 0).Err(); err == nil {
		t.Fatal("the source accepted a write after the script")
	}
}

// pathEnv is this process's PATH, for the script's redis-cli.
func pathEnv() string {
	p, _ := exec.LookPath("redis-cli")
	return filepath.Dir(p) + ":/usr/bin:/bin"
}
