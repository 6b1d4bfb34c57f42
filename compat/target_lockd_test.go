//go:build !compat_redis

package compat

import (
	"os"
	"testing"
	"time"

	"github.com/lockd/lockd/server"
)

// lockdStartTimeout bounds server.New, which itself waits up to its
// ReadyTimeout (30s by default) for the single node to lead.
const lockdStartTimeout = 45 * time.Second

// startOther starts the server under test: an in-process single-node lockd,
// closed in t.Cleanup, with requirePass (at most one) as the default user's
// password, and -strict-nx: the one intended difference from Redis that a
// byte-for-byte case can meet by chance (a SET … NX of the value a key
// already holds) is turned off; TestSameValueNX checks it, and
// startDefault gives the default. COMPAT_TARGET=redis compares
// redis-server with a second redis-server instead, which proves the
// harness and its cases.
func startOther(t testing.TB, requirePass ...string) (name, addr string) {
	t.Helper()
	var pass string
	for _, p := range requirePass {
		pass = p
	}
	if os.Getenv("COMPAT_TARGET") == "redis" {
		if pass != "" {
			return "redis2", startRedis(t, "--requirepass", pass)
		}
		return "redis2", startRedis(t)
	}
	return "lockd", startLockd(t, server.Config{RequirePass: pass, StrictNX: true})
}

// startDefault starts a single-node lockd as `make run` configures one
// (with COMPAT_TARGET=redis, a second redis-server).
func startDefault(t testing.TB) (name, addr string) {
	t.Helper()
	if os.Getenv("COMPAT_TARGET") == "redis" {
		return "redis2", startRedis(t)
	}
	return "lockd", startLockd(t, server.Config{})
}

// startLockd starts an in-process single-node lockd with cfg (its addresses
// and data directory filled in), closed in t.Cleanup, and returns its RESP
// address once it answers PING.
func startLockd(t testing.TB, cfg server.Config) string {
	t.Helper()
	type started struct {
		s   *server.Server
		err error
	}
	ch := make(chan started, 1)
	dir := t.TempDir()
	go func() {
		cfg.RESPAddr, cfg.PeerAddr, cfg.DataDir = "127.0.0.1:0", "127.0.0.1:0", dir
		s, err := server.New(cfg)
		ch <- started{s, err}
	}()
	select {
	case st := <-ch:
		if st.err != nil {
			t.Fatalf("start lockd: %v", st.err)
		}
		t.Cleanup(func() {
			if err := st.s.Close(); err != nil {
				t.Errorf("close lockd: %v", err)
			}
		})
		addr := st.s.RESPAddr()
		if err := waitPing(addr, nil); err != nil {
			t.Fatalf("lockd at %s: %v", addr, err)
		}
		return addr
	case <-time.After(lockdStartTimeout):
		t.Fatalf("lockd: server.New did not return within %v", lockdStartTimeout)
		return ""
	}
}
