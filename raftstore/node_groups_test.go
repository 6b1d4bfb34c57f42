package raftstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/raftstore/group/grouptest"
	"github.com/lockd/lockd/resp"
)

// done is a context that has ended: AppliedSessionOwner given it reads this
// replica's applied state once and does not wait.
var done = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// A node's LogBytes is shared among its groups: each keeps its log within
// its share.
func TestNodeLogBytesShared(t *testing.T) {
	const logBytes, value = 4 << 20, 128 << 10 // two groups: 2 MiB each
	nd := openLoneNode(t, Config{ApplyTimeout: 5 * time.Second, Groups: 2, LogBytes: logBytes})
	m := nd.ShardMap()
	val := strings.Repeat("v", value)
	for g := range 2 {
		for i := range 64 { // 8 MiB a group
			if v := ndo(nd, "SET", keyIn(m, g, fmt.Sprintf("big%d", i%4)), val); v.String() != "OK" {
				t.Fatalf("group %d: SET = %.100q", g, v.String())
			}
		}
	}
	// Each group keeps after a snapshot the entries half its share holds:
	// 8 of these (16 if each group had the node's whole bound).
	keep := uint64(logBytes / 2 / 2 / value)
	for g, s := range nd.gs() {
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			n := s.Raft().ReloadableConfig().TrailingLogs
			first, _ := s.Logs().FirstIndex()
			if n <= keep && first > 1 {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("group %d keeps %d entries after a snapshot (log from %d) after 8 MiB of %d KiB values; its share keeps %d",
					g, n, first, value>>10, keep)
			}
		}
	}
}

// Across groups: a session's owner goes with its attach to each group, so
// every group refuses another team's LOCK.ACQUIRE … SESSION on it; an attach
// that another team's acquire would cause is refused by group 0 (nothing is
// attached); another team's SESSION.CLOSE changes no group; the owner's
// close releases the session's locks in every group.
func TestNodeSessionOwnersAcrossGroups(t *testing.T) {
	const groups = 3
	c := newNodeCluster(t, 3, groups)
	n := c.nodes[1]
	grouptest.TeamUsers(t, n)
	deadline := time.Now().Add(15 * time.Second)
	for on := false; !on; {
		on = true
		for _, nd := range c.nodes {
			for _, s := range nd.gs() {
				on = on && s.OwnersOn()
			}
		}
		if !on && time.Now().After(deadline) {
			t.Fatal("owners not on in every group within 15 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := n.ShardMap()
	open := grouptest.DoAs(n, "billing", "SESSION.OPEN", "TTL", "5000")
	if open.Kind != resp.KindMap {
		t.Fatal(open)
	}
	id := fmt.Sprint(open.Elems[1].Int)
	toks := map[string]int64{}
	for g := range groups {
		name := keyIn(m, g, "billing/lock")
		v := grouptest.DoAs(n, "billing", "LOCK.ACQUIRE", name, "w1", "SESSION", id)
		if v.Kind != resp.KindInt {
			t.Fatalf("billing's acquire of %s (group %d): %v", name, g, v)
		}
		toks[name] = v.Int
	}
	for g := range groups {
		if v := grouptest.DoAs(c.nodes[2], "payouts", "LOCK.ACQUIRE", keyIn(m, g, "payouts/x"), "p1", "SESSION", id); !grouptest.IsSessionRefusal(v) {
			t.Errorf("payouts' acquire in group %d with billing's session: %v", g, v)
		}
	}
	// A session not yet attached to group 2: payouts' acquire there is
	// refused by group 0, and group 2 attaches nothing.
	open2 := grouptest.DoAs(n, "billing", "SESSION.OPEN")
	id2 := uint64(open2.Elems[1].Int)
	if v := grouptest.DoAs(c.nodes[0], "payouts", "LOCK.ACQUIRE", keyIn(m, 2, "payouts/y"), "p1", "SESSION", fmt.Sprint(id2)); !grouptest.IsSessionRefusal(v) {
		t.Errorf("payouts' acquire attaching billing's session to group 2: %v", v)
	}
	for _, nd := range c.nodes {
		_, attached, _ := nd.gs()[2].AppliedSessionOwner(done, id2) // this replica's state now: done does not wait
		if attached {
			t.Errorf("%s: group 2 attached billing's session for payouts", nd.cfg.NodeID)
		}
	}
	if v := grouptest.DoAs(c.nodes[0], "payouts", "SESSION.CLOSE", id); !grouptest.IsSessionRefusal(v) {
		t.Errorf("payouts' SESSION.CLOSE across groups: %v", v)
	}
	for name, tok := range toks {
		if v := grouptest.DoAs(n, "billing", "LOCK.VALIDATE", name, fmt.Sprint(tok)); v.Int != 1 {
			t.Errorf("billing's lock %s lost: %v", name, v)
		}
	}
	if v := grouptest.DoAs(c.nodes[2], "billing", "SESSION.CLOSE", id); v.Int != groups {
		t.Errorf("billing's close released %v locks, want %d", v, groups)
	}
}
