//go:build !compat_redis

package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/loopback"
	"github.com/lockd/lockd/raftstore"
	"github.com/lockd/lockd/server"
)

// startLockdCluster starts n in-process lockd nodes forming one cluster,
// closed in t.Cleanup, and returns their RESP addresses (node 1 first) once
// a write through node 1 succeeds.
func startLockdCluster(t *testing.T, n int) []string {
	t.Helper()
	ports, err := loopback.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	var peers []raftstore.Peer
	for i, port := range ports {
		peers = append(peers, raftstore.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	}
	servers := make([]*server.Server, n)
	errs := make(chan error, n)
	for i := range n {
		dir := t.TempDir()
		go func() {
			s, err := server.New(server.Config{NodeID: peers[i].ID, RESPAddr: "127.0.0.1:0", PeerAddr: peers[i].Addr,
				DataDir: dir, Peers: peers})
			servers[i] = s
			errs <- err
		}()
	}
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("start a node: %v", err)
			}
		case <-time.After(lockdStartTimeout):
			t.Fatalf("a node did not start within %v", lockdStartTimeout)
		}
	}
	addrs := make([]string, n)
	for i, s := range servers {
		t.Cleanup(func() { s.Close() })
		addrs[i] = s.RESPAddr()
	}
	c, err := dial(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	deadline := time.Now().Add(lockdStartTimeout)
	for {
		c.send(multibulk("SET", "cluster:ready", "1"))
		if o := c.read(replyTimeout); string(o.raw) == "+OK\r\n" {
			break
		} else if o.end != "" || time.Now().After(deadline) {
			t.Fatalf("no write through node 1: %v", o)
		}
		time.Sleep(pollEvery)
	}
	return addrs
}

// TestTrackingThreeNodes: a RESP3 client tracking keys on node 1 is told of
// writes made through the other nodes — a SET, an expiry decided by the log,
// a FLUSHALL — by node 1 when it applies them, and reads the new value after.
func TestTrackingThreeNodes(t *testing.T) {
	addrs := startLockdCluster(t, 3)
	tracker, err := dial(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer tracker.close()
	do := func(c *conn, args ...string) string {
		t.Helper()
		c.send(multibulk(args...))
		o := c.read(replyTimeout)
		if o.end != "" {
			t.Fatalf("%v: %v", args, o)
		}
		return string(o.raw)
	}
	// expect reads frames on the tracker until want (bounded), failing on
	// anything else.
	expect := func(want string) {
		t.Helper()
		o := tracker.read(replyTimeout)
		if string(o.raw) != want {
			t.Fatalf("tracker got %v, want %q", o, want)
		}
	}
	do(tracker, "HELLO", "3")
	if got := do(tracker, "CLIENT", "TRACKING", "ON"); got != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING ON: %q", got)
	}
	for i, via := range addrs[1:] {
		w, err := dial(via)
		if err != nil {
			t.Fatal(err)
		}
		defer w.close()
		key := fmt.Sprintf("k%d", i)
		if got := do(tracker, "GET", key); got != "_\r\n" {
			t.Fatalf("GET %s: %q", key, got)
		}
		val := fmt.Sprintf("v%d", i)
		if got := do(w, "SET", key, val); got != "+OK\r\n" {
			t.Fatalf("SET through node %d: %q", i+2, got)
		}
		expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\n" + key + "\r\n")
		if got := do(tracker, "GET", key); got != fmt.Sprintf("$2\r\n%s\r\n", val) {
			t.Fatalf("GET %s after the invalidation: %q", key, got)
		}
	}
	w, err := dial(addrs[2])
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	// An expiry: the SET's invalidation, then the expiry's, from a tick entry.
	do(tracker, "GET", "e")
	do(w, "SET", "e", "x", "PX", "1000")
	expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ne\r\n")
	if got := do(tracker, "GET", "e"); got != "$1\r\nx\r\n" && got != "_\r\n" {
		t.Fatalf("GET e: %q", got)
	}
	expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ne\r\n")
	if got := do(tracker, "GET", "e"); got != "_\r\n" {
		t.Fatalf("GET e after its expiry's invalidation: %q", got)
	}
	// A lock granted through another node changes its key.
	do(tracker, "GET", "lk")
	if got := do(w, "LOCK.ACQUIRE", "lk", "owner1", "PX", "10000"); strings.HasPrefix(got, "-") {
		t.Fatalf("LOCK.ACQUIRE: %q", got)
	}
	expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nlk\r\n")
	// FLUSHALL: every key. Each Raft group applies its own FLUSHALL, so a
	// cluster of several groups sends one such invalidation per group.
	do(tracker, "GET", "k0")
	do(w, "FLUSHALL")
	flushed := ">2\r\n$10\r\ninvalidate\r\n_\r\n"
	expect(flushed)
	got := do(tracker, "GET", "k0")
	for got == flushed {
		got = string(tracker.read(replyTimeout).raw)
	}
	if got != "_\r\n" {
		t.Fatalf("GET k0 after FLUSHALL: %q", got)
	}
}
