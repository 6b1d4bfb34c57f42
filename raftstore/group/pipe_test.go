package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// writeSome commits n SETs through the leader and waits for every node to
// apply them.
func writeSome(t *testing.T, c *cluster, n int) {
	t.Helper()
	_, s := c.leader()
	for i := 0; i < n; i++ {
		v := s.Do(context.Background(), []command.Request{req("SET", fmt.Sprintf("k%d", i), "v", "PX", "60000")})[0]
		if v.Kind != resp.KindSimple {
			t.Fatalf("SET %d: %v", i, v)
		}
	}
	c.converge()
}

// A cluster's replication runs on appendpipe: the leader's appends reach
// both followers on pipes, and none falls back to msgpack.
func TestReplicationUsesAppendPipe(t *testing.T) {
	c := newCluster(t, 3)
	writeSome(t, c, 50)
	li, leader := c.leader()
	if sent, _, fallbacks := leader.trans.Stats(); sent == 0 || fallbacks != 0 {
		t.Fatalf("leader: %d appends on pipes, %d fallbacks; want some and none", sent, fallbacks)
	}
	for i, s := range c.running() {
		if _, served, _ := s.trans.Stats(); i != li && served == 0 {
			t.Fatalf("follower %s served nothing from a pipe", c.peers[i].ID)
		}
	}
}

// A rolling upgrade: a node that does not serve appendpipe (one from before
// it) is replicated to through hashicorp/raft's own pipeline, and replicates
// that way itself when it leads; every node applies every write either way.
func TestAppendPipeMixedCluster(t *testing.T) {
	const old = 2
	c := newClusterWith(t, 3, func(i int, cfg *Config) { cfg.noAppendPipe = i == old })
	for _, to := range []int{old, 0, old, 1} {
		leadBy(t, c, to)
		before, _, _ := c.node(to).trans.Stats()
		writeSome(t, c, 20)
		sent, _, fallbacks := c.node(to).trans.Stats()
		sent -= before
		if to == old && sent != 0 {
			t.Fatalf("the old node, leading, sent %d appends on pipes", sent)
		}
		if to != old && sent == 0 {
			t.Fatalf("%s, leading, sent no appends on pipes", c.peers[to].ID)
		}
		if fallbacks == 0 {
			t.Fatalf("%s, leading, opened no pipeline of hashicorp/raft's (to the old node, or as it)", c.peers[to].ID)
		}
	}
	if _, served, _ := c.node(old).trans.Stats(); served != 0 {
		t.Fatalf("the old node served %d pipe requests", served)
	}
	_, leader := c.leader()
	if _, _, fallbacks := leader.trans.Stats(); fallbacks == 0 {
		t.Fatal("no leader fell back to hashicorp/raft's pipeline for the old node")
	}
}

// leadBy transfers the leadership to node to, unless it leads, and waits
// until the cluster agrees.
func leadBy(t *testing.T, c *cluster, to int) *Store {
	t.Helper()
	li, s := c.leader()
	if li != to {
		if err := s.raft.LeadershipTransferToServer(raft.ServerID(c.peers[to].ID), raft.ServerAddress(c.peers[to].Addr)).Error(); err != nil {
			t.Fatalf("transfer to %s: %v", c.peers[to].ID, err)
		}
	}
	// The old leader's own view of its office lags its step-down a little.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if li, s = c.leader(); li == to {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s leads, want %s", c.peers[li].ID, c.peers[to].ID)
		}
	}
}

// A rolling upgrade from a lockd from before batch entries needs no setting:
// while a member greets the leader's pipelines as such a node does (version
// 1), the leader writes an entry per write, which that node applies; once it
// runs this version (restarted), the leader's next pipeline to it hears so,
// and a pipeline of writes goes into batch entries again.
func TestBatchEntriesWaitForEveryMember(t *testing.T) {
	const old = 2
	upgraded := false
	c := newClusterWith(t, 3, func(i int, cfg *Config) {
		if i == old && !upgraded {
			cfg.pipeVersion = 1
		}
	})
	s := leadBy(t, c, 0)
	writeSome(t, c, 5) // the leader's pipelines are up
	addr := raft.ServerAddress(c.peers[old].Addr)
	if v := s.trans.PeerVersion(addr); v != 1 {
		t.Fatalf("the old node's version as the leader heard it: %d, want 1", v)
	}
	if n := pipelinedEntries(t, s, 100, "a"); n < 100 {
		t.Fatalf("100 pipelined writes took %d entries with a member from before batch entries, want one each", n)
	}
	c.converge() // the old node applied every one

	c.crash(old)
	upgraded = true
	c.start(old)
	for deadline := time.Now().Add(15 * time.Second); s.trans.PeerVersion(addr) != pipeVersion; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the upgraded node's version as the leader heard it: %d, want %d", s.trans.PeerVersion(addr), pipeVersion)
		}
		writeSome(t, c, 1) // replication reconnects to it
	}
	if n := pipelinedEntries(t, s, 100, "b"); n > 20 {
		t.Fatalf("100 pipelined writes took %d entries once every member runs this version: batch entries expected", n)
	}
	c.converge()
}

// Every group's three headers on the peer port are distinct from every
// other header: a collision would hand one group's connections to another.
func TestPeerHeadersDistinct(t *testing.T) {
	seen := map[byte]string{}
	for g := 0; g < MaxGroups; g++ {
		r, f := groupHeaders(g)
		for _, h := range []struct {
			b    byte
			what string
		}{{r, "raft"}, {f, "forward"}, {pipeHeader(g), "pipe"}} {
			if prev, dup := seen[h.b]; dup {
				t.Fatalf("header %#x: group %d %s and %s", h.b, g, h.what, prev)
			}
			seen[h.b] = fmt.Sprintf("group %d %s", g, h.what)
		}
	}
}
