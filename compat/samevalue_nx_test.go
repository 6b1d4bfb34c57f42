//go:build !compat_redis

package compat

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestSameValueNX checks lockd's one intended difference in SET … NX (issue
// 48, docs/compatibility.md): by default, SET key value NX on a key that
// already holds exactly that value is a grant to the same owner — the write
// happens (new expiry) and the fencing token stays the grant's — where Redis
// answers nil. A different value is refused as in Redis, and -strict-nx
// (what startOther runs) answers as Redis.
func TestSameValueNX(t *testing.T) {
	ctx := context.Background()
	_, defAddr := startDefault(t)
	_, strictAddr := startOther(t)
	redisAddr := startRedis(t)
	def, strict, rds := newClient(t, defAddr), newClient(t, strictAddr), newClient(t, redisAddr)

	// The same first grant everywhere.
	for _, c := range []*redis.Client{def, strict, rds} {
		if v, err := c.Do(ctx, "SET", "lock", "owner-1", "NX", "PX", "100000").Text(); err != nil || v != "OK" {
			t.Fatalf("first SET NX: %q, %v", v, err)
		}
	}
	// The same owner again: Redis and -strict-nx refuse, the default grants
	// and takes the new expiry.
	for name, c := range map[string]*redis.Client{"redis-server": rds, "lockd -strict-nx": strict} {
		if err := c.Do(ctx, "SET", "lock", "owner-1", "NX", "PX", "300000").Err(); err != redis.Nil {
			t.Fatalf("%s: same-value SET NX = %v, want nil", name, err)
		}
		if n, _ := c.SetNX(ctx, "lock", "owner-1", 0).Result(); n {
			t.Fatalf("%s: same-value SETNX = 1, want 0", name)
		}
	}
	token, err := def.Do(ctx, "FENCE", "lock").Int64()
	if err != nil || token <= 0 {
		t.Fatalf("FENCE: %d, %v", token, err)
	}
	if v, err := def.Do(ctx, "SET", "lock", "owner-1", "NX", "PX", "300000").Text(); err != nil || v != "OK" {
		t.Fatalf("same-value SET NX on lockd = %q, %v; want OK", v, err)
	}
	if pttl, _ := def.PTTL(ctx, "lock").Result(); pttl.Milliseconds() <= 100000 {
		t.Fatalf("PTTL after the same-value grant = %v, want the new 300 s expiry", pttl)
	}
	if got, _ := def.Do(ctx, "SET", "lock", "owner-1", "NX", "PX", "300000", "FENCE").Int64(); got != token {
		t.Fatalf("same-value SET NX FENCE = %d, want the grant's token %d", got, token)
	}
	if n, _ := def.SetNX(ctx, "lock", "owner-1", 0).Result(); !n {
		t.Fatal("same-value SETNX on lockd = 0, want 1")
	}
	// Another owner is refused everywhere, and the value stays.
	for name, c := range map[string]*redis.Client{"redis-server": rds, "lockd -strict-nx": strict, "lockd": def} {
		if err := c.Do(ctx, "SET", "lock", "owner-2", "NX", "PX", "100000").Err(); err != redis.Nil {
			t.Fatalf("%s: another owner's SET NX = %v, want nil", name, err)
		}
		if v, _ := c.Get(ctx, "lock").Result(); v != "owner-1" {
			t.Fatalf("%s: lock holds %q after another owner's SET NX", name, v)
		}
	}
	// A value that is not a plain string is never "the same".
	def.HSet(ctx, "h", "f", "owner-1")
	if err := def.Do(ctx, "SET", "h", "owner-1", "NX").Err(); err != redis.Nil {
		t.Fatalf("SET NX on a hash = %v, want nil", err)
	}
	// After release, a new grant has a new, higher token.
	def.Del(ctx, "lock")
	if v, _ := def.Do(ctx, "SET", "lock", "owner-1", "NX", "PX", "100000", "FENCE").Int64(); v <= token {
		t.Fatalf("token after release and a new grant = %d, want above %d", v, token)
	}
}
