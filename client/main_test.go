package client_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/loopback"
	"github.com/lockd/lockd/server"
	"github.com/redis/go-redis/v9"
)

// Bounds of the integration tests. Every wait polls and is bounded.
const (
	startTimeout = 30 * time.Second // a server answering PING
	pollEvery    = 10 * time.Millisecond
)

// lockdAddr is the RESP address of the single-node lockd that TestMain
// starts in-process for the tests and examples of this package.
var lockdAddr string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lockd-client-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := server.New(server.Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start lockd:", err)
		return 1
	}
	defer s.Close()
	lockdAddr = s.RESPAddr()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// nameSeq makes lock names unique across the runs of -count=N, which share
// one lockd.
var nameSeq atomic.Int64

// lockName returns base with a suffix no other call returns.
func lockName(base string) string { return fmt.Sprintf("%s:%d", base, nameSeq.Add(1)) }

// newRedis returns a go-redis client of addr, closed with the test.
func newRedis(t testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: addr}
	for _, f := range opts {
		f(o)
	}
	rc := redis.NewClient(o)
	t.Cleanup(func() { rc.Close() })
	return rc
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(pollEvery)
	}
}

// freePort returns a 127.0.0.1 port that was free a moment ago (another
// process may take it before the caller binds it).
func freePort(t testing.TB) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts returns n distinct 127.0.0.1 ports that were free a moment ago:
// it holds each open until all are chosen, so the kernel cannot hand out one
// twice (one at a time, a port closed can be the next one given).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := loopback.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// startRedis starts a redis-server on a free 127.0.0.1 port and kills it with
// the test. It returns the address.
func startRedis(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH (%v): plain-Redis mode is tested against Redis 7 "+
			"(Debian: apt-get install redis-server; `make deps` installs it)", err)
	}
	dir := t.TempDir()
	for attempt := 1; ; attempt++ { // the free port can be taken before redis binds it
		port := freePort(t)
		cmd := exec.Command(bin, "--save", "", "--appendonly", "no", "--port", strconv.Itoa(port),
			"--bind", "127.0.0.1", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		up := false
		for deadline := time.Now().Add(startTimeout); time.Now().Before(deadline); time.Sleep(pollEvery) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := rc.Ping(ctx).Err()
			cancel()
			if err == nil {
				up = true
				break
			}
			select {
			case <-exited:
				deadline = time.Time{}
			default:
			}
		}
		rc.Close()
		if up {
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			return addr
		}
		cmd.Process.Kill()
		<-exited
		if attempt == 3 {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server did not start:\n%s", log)
		}
	}
}
