package raftstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
)

// heldLog is a node's shared-log hook that, once armed, holds every batch
// until released: the node's fsyncs stall while its Raft keeps running.
type heldLog struct {
	armed   atomic.Bool
	release chan struct{}
	once    sync.Once
}

func (h *heldLog) hook() error {
	if h.armed.Load() {
		<-h.release
	}
	return nil
}

// letGo disarms h and lets every held batch go; later calls do nothing.
func (h *heldLog) letGo() {
	h.armed.Store(false)
	h.once.Do(func() { close(h.release) })
}

// answeredOnRelease fails the test if reply already holds the answer to a
// write the leader's held log holds; then lets the log go and expects OK.
func answeredOnRelease(t *testing.T, h *heldLog, reply chan resp.Value) {
	t.Helper()
	select {
	case v := <-reply:
		t.Fatalf("the client was answered %v before the leader's copy was on disk", v)
	default:
	}
	h.letGo()
	select {
	case v := <-reply:
		if v.String() != "OK" {
			t.Fatalf("SET after the release: %v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client was not answered after the leader's write was released")
	}
}

// TestLeaderFsyncRunsWithReplication: with the group leader's own log write
// held, a write still reaches both followers' logs (the leader sent it
// without waiting for its fsync), yet no replica applies it and the client
// is not answered; once the leader's write is on disk, the client gets its
// reply and the followers apply it. On nodes of several groups (one shared
// log) and of one (the group's log of its own, with its own committer).
func TestLeaderFsyncRunsWithReplication(t *testing.T) {
	for _, groups := range []int{1, 2} {
		t.Run(fmt.Sprintf("groups=%d", groups), func(t *testing.T) { testLeaderFsyncRunsWithReplication(t, groups) })
	}
}

func testLeaderFsyncRunsWithReplication(t *testing.T, groups int) {
	holds := []*heldLog{{release: make(chan struct{})}, {release: make(chan struct{})}, {release: make(chan struct{})}}
	c := newNodeClusterTB(t, 3, groups, holds[0].hook, holds[1].hook, holds[2].hook)
	const g = 0
	key := keyIn(c.nodes[0].ShardMap(), g, "k")
	if v := ndo(c.nodes[0], "SET", key, "before"); v.String() != "OK" {
		t.Fatalf("SET before: %v", v)
	}
	li := -1
	for i, nd := range c.nodes {
		if nd.Group(g).IsLeader() {
			li = i
		}
	}
	if li < 0 {
		t.Fatal("group 0 has no leader")
	}
	leader := c.nodes[li].Group(g)
	var followers []*Store
	for i, nd := range c.nodes {
		if i != li {
			followers = append(followers, nd.Group(g))
		}
	}
	applied := func(s *Store) uint64 {
		s.m.wmu.Lock()
		defer s.m.wmu.Unlock()
		return s.m.applied
	}

	before := leader.raft.LastIndex()
	h := holds[li]
	h.armed.Store(true)
	defer h.letGo()
	reply := make(chan resp.Value, 1)
	go func() { reply <- ndo(c.nodes[li], "SET", key, "after") }()

	// The followers store the entry while the leader's own write is held.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		for _, f := range followers {
			if f.raft.LastIndex() > before {
				n++
			}
		}
		if n == len(followers) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the followers did not receive the write while the leader's fsync was held")
		}
		time.Sleep(5 * time.Millisecond)
	}
	entry := followers[0].raft.LastIndex()
	// Several commit timeouts pass (each sends the followers the commit
	// index): nobody applies the entry and the client waits.
	for end := time.Now().Add(6 * commitTimeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		select {
		case v := <-reply:
			t.Fatalf("the client was answered %v before the leader's copy was on disk", v)
		default:
		}
		for _, s := range append([]*Store{leader}, followers...) {
			if a := applied(s); a >= entry {
				t.Fatalf("a replica applied index %d (entry %d) before the leader's copy was on disk", a, entry)
			}
		}
	}

	answeredOnRelease(t, h, reply)
	for _, f := range followers {
		select {
		case <-f.m.appliedCh(entry):
		case <-time.After(10 * time.Second):
			t.Fatalf("a follower did not apply index %d after the release", entry)
		}
	}
}

// A node started alone writes its log without deferring (it has no
// follower to overlap with); once its cluster has grown (a member added with
// RAFT ADD), its leader sends a write to the new follower while its own
// fsync is still held, without a restart, and answers the client only once
// that fsync is done.
func TestGrownNodeDefers(t *testing.T) {
	h := &heldLog{release: make(chan struct{})}
	a := openConfig(t, Config{NodeID: "n1", DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, BeforeLogWrite: h.hook})
	defer a.Close()
	b, err := Open(Config{NodeID: "n2", DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", Join: true, ApplyTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v := do(a, "SET", "k", "alone"); v.String() != "OK" {
		t.Fatalf("SET alone: %v", v)
	}
	if a.logs.Durable() != a.raft.LastIndex() {
		t.Fatalf("alone, the log is durable to %d of %d: a lone voter's write returns once on disk", a.logs.Durable(), a.raft.LastIndex())
	}
	ctx := context.Background()
	add := command.Request{Op: command.Admin{Action: "add", ID: "n2", Addr: b.PeerAddr()}, Spec: command.AdminSpec}
	if v := a.Do(ctx, []command.Request{add})[0]; v.String() != "OK" {
		t.Fatalf("RAFT ADD: %v", v)
	}
	if v := do(a, "SET", "k", "grown"); v.String() != "OK" {
		t.Fatalf("SET after the add: %v", v)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.raft.LastIndex() < a.raft.LastIndex() {
		if time.Now().After(deadline) {
			t.Fatal("the new member did not catch up")
		}
		time.Sleep(5 * time.Millisecond)
	}

	before := a.raft.LastIndex()
	h.armed.Store(true)
	defer h.letGo()
	reply := make(chan resp.Value, 1)
	go func() { reply <- do(a, "SET", "k", "held") }()
	for b.raft.LastIndex() <= before {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the follower did not receive the write while the grown leader's fsync was held")
		}
		time.Sleep(5 * time.Millisecond)
	}
	answeredOnRelease(t, h, reply)
}
