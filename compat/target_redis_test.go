//go:build compat_redis

package compat

import "testing"

// startOther, built with -tags compat_redis, compares redis-server with a
// second redis-server: for proving the harness while lockd does not build.
func startOther(t testing.TB, requirePass ...string) (name, addr string) {
	t.Helper()
	for _, p := range requirePass {
		return "redis2", startRedis(t, "--requirepass", p)
	}
	return "redis2", startRedis(t)
}
