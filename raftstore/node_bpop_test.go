package raftstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// A blocked pop whose key's slot moves to another group while it waits is
// queued again there and served by a push in its new group; keys of two
// groups are refused CROSSSLOT.
func TestNodeMoveRequeuesBlockedPop(t *testing.T) {
	c := newNodeCluster(t, 3, 2)
	n := c.nodes[0]
	m := n.ShardMap()
	key := keyIn(m, 0, "queue")
	if v := ndo(n, "BLPOP", key, keyIn(m, 1, "other"), "0"); v.String() != ErrCrossSlot {
		t.Fatalf("BLPOP over two groups: %v", v)
	}
	slot := strconv.Itoa(int(shard.Slot([]byte(key))))
	got := make(chan resp.Value, 1)
	go func() { got <- ndo(c.nodes[1], "BLPOP", key, "20") }()
	waitFor(t, 10*time.Second, "the pop to queue", func() bool { return n.Group(0).BlockedPops() == 1 })
	move := command.Request{Op: command.Admin{Action: "moveslots", ID: slot + "-" + slot, Addr: "1"}, Spec: command.AdminSpec}
	if v := c.nodes[2].Do(context.Background(), []command.Request{move})[0]; v.Int != 1 {
		t.Fatalf("MOVESLOTS: %v", v)
	}
	waitFor(t, 10*time.Second, "the pop to queue again in group 1", func() bool { return n.Group(1).BlockedPops() == 1 })
	if v := ndo(c.nodes[2], "RPUSH", key, "x"); v.Int != 1 {
		t.Fatalf("RPUSH: %v", v)
	}
	select {
	case v := <-got:
		if v.Kind != resp.KindArray || len(v.Elems) != 2 || v.Elems[1].String() != "x" {
			t.Fatalf("the re-queued pop got %v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the re-queued pop was never served")
	}
}
