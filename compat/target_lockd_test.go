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
// password. COMPAT_TARGET=redis compares redis-server with a second
// redis-server instead, which proves the harness and its cases.
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
	type started struct {
		s   *server.Server
		err error
	}
	ch := make(chan started, 1)
	dir := t.TempDir()
	go func() {
		s, err := server.New(server.Config{
			RESPAddr:    "127.0.0.1:0",
			PeerAddr:    "127.0.0.1:0",
			DataDir:     dir,
			RequirePass: pass,
		})
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
		return "lockd", addr
	case <-time.After(lockdStartTimeout):
		t.Fatalf("lockd: server.New did not return within %v", lockdStartTimeout)
		return "", ""
	}
}
