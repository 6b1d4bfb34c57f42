//go:build compat_redis

package compat

import "testing"

// startOther, built with -tags compat_redis, compares redis-server with a
// second redis-server: for proving the harness while lockd does not build.
func startOther(t testing.TB) (name, addr string) {
	t.Helper()
	return "redis2", startRedis(t)
}
