package multiraft

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// smallSnapshots makes groups snapshot every 20 entries and keep 5.
func smallSnapshots(cfg *Config) { cfg.SnapshotEntries, cfg.TrailingEntries = 20, 5 }

// write proposes n keys prefix-0.. through g's leader and records them.
func (c *cluster) write(g Group, prefix string, n int, want map[string]string) {
	c.t.Helper()
	lead := c.waitLeader(g)
	for i := range n {
		k := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := c.nodes[lead].Propose(ctxT(c.t), g, []byte(k+"=v")); err != nil {
			c.t.Fatal(err)
		}
		want[k] = "v"
	}
}

// TestSnapshotCatchUp: a follower cut off while its leader's log moves past
// what it holds (the log compacted behind a snapshot) is brought up to date
// by a snapshot once back; after every node restarts, each rebuilds its
// state from its stored snapshot and log.
func TestSnapshotCatchUp(t *testing.T) {
	c := newClusterWith(t, 3, 1, smallSnapshots)
	c.spread()
	want := []map[string]string{{}}
	c.write(0, "a", 10, want[0])
	c.converge(want)
	lagger := c.ids[2]
	c.net.isolate(lagger, true, c.ids)
	c.write(0, "b", 100, want[0])
	lead := c.waitLeader(0)
	if c.nodes[lead].Snapshots.Load() == 0 {
		t.Fatal("the leader took no snapshot in 100 entries")
	}
	c.net.isolate(lagger, false, c.ids)
	c.converge(want)
	if c.sms[lagger][0].restores == 0 {
		t.Fatal("the lagging follower caught up without a snapshot: the log was not compacted")
	}

	for _, id := range c.ids {
		c.stop(id)
	}
	for _, id := range c.ids {
		c.start(id)
	}
	c.converge(want) // from each node's own snapshot and log, before any new leader
	c.spread()
	c.write(0, "c", 5, want[0])
	c.converge(want)
}

// TestMembershipChange: a node joins a running group (as a learner, from a
// snapshot, then a voter), a member leaves, and the group goes on with the
// new members alone; a second change while one is pending is refused.
func TestMembershipChange(t *testing.T) {
	c := newClusterWith(t, 3, 1, smallSnapshots)
	c.spread()
	want := []map[string]string{{}}
	c.write(0, "a", 50, want[0])
	lead := c.waitLeader(0)
	n := c.nodes[lead]

	c.join(4)
	if _, err := n.ChangeMembers(ctxT(t), 0, pb.ConfChangeV2{Changes: []pb.ConfChangeSingle{{Type: pb.ConfChangeAddLearnerNode, NodeID: 4}}}); err != nil {
		t.Fatal(err)
	}
	c.converge(want) // node 4 too
	if _, learners, _ := n.Members(0); !slices.Equal(learners, []uint64{4}) {
		t.Fatalf("learners %v, want [4]", learners)
	}
	if index, err := n.ChangeMembers(ctxT(t), 0, pb.ConfChangeV2{Changes: []pb.ConfChangeSingle{{Type: pb.ConfChangeAddNode, NodeID: 4}}}); err != nil {
		t.Fatal(err)
	} else if st, _ := n.Status(0); index == 0 || index > st.Applied {
		t.Fatalf("the change's index %d; applied %d", index, st.Applied)
		t.Fatal(err)
	}

	// Two changes in one turn: Raft takes the first and drops the second.
	// The driver is held while both are handed to it.
	leaver := c.ids[(int(lead))%3] // a follower of the first three
	gate, held := make(chan struct{}), make(chan struct{})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	defer release() // a failure below must not leave the driver held
	n.control(func() { close(held); <-gate })
	<-held
	errs := make(chan error, 2)
	for _, id := range []uint64{leaver, 4} {
		go func() {
			_, err := n.ChangeMembers(ctxT(t), 0, pb.ConfChangeV2{Changes: []pb.ConfChangeSingle{{Type: pb.ConfChangeRemoveNode, NodeID: id}}})
			errs <- err
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n.box.mu.Lock()
		queued := len(n.box.ctl)
		n.box.mu.Unlock()
		if queued == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d changes queued", queued)
		}
	}
	release()
	var refused, done int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			done++
		case errors.Is(err, ErrChangeRefused):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if done != 1 || refused != 1 {
		t.Fatalf("two changes in one turn: %d applied, %d refused; want 1 and 1", done, refused)
	}
	voters, _, _ := n.Members(0)
	if len(voters) != 3 {
		t.Fatalf("voters %v after one removal of four", voters)
	}
	removed := []uint64{1, 2, 3, 4}
	removed = slices.DeleteFunc(removed, func(id uint64) bool { return slices.Contains(voters, id) })
	if removed[0] == lead {
		t.Fatalf("the leader was removed: voters %v", voters)
	}
	c.stop(removed[0])
	c.write(0, "b", 10, want[0])
	c.converge(want)
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range voters {
		for {
			got, _, _ := c.nodes[id].Members(0)
			if slices.Equal(got, voters) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: voters %v, want %v", id, got, voters)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// learned records the member contexts each node was told of (OnMember).
type learned struct {
	mu  sync.Mutex
	got map[uint64]map[uint64]string // node → member → context
}

func (l *learned) tune(cfg *Config) {
	smallSnapshots(cfg)
	self := cfg.ID
	cfg.OnMember = func(_ Group, id uint64, ctx []byte) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.got[self] == nil {
			l.got[self] = map[uint64]string{}
		}
		l.got[self][id] = string(ctx)
	}
}

// wait waits (bounded) until node has been told exactly want.
func (l *learned) wait(t *testing.T, node uint64, want map[uint64]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		got := maps.Clone(l.got[node])
		l.mu.Unlock()
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d was told of members %v, want %v", node, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMemberContexts: every replica learns every member's context: the
// first voters' from the group's first snapshot, an added member's from its
// change, a joiner all of them from the snapshot it installs, and a
// restarted replica again from its storage alone.
func TestMemberContexts(t *testing.T) {
	l := &learned{got: map[uint64]map[uint64]string{}}
	c := newClusterWith(t, 3, 1, l.tune)
	first := map[uint64]string{1: "node-1", 2: "node-2", 3: "node-3"}
	for _, id := range c.ids {
		l.wait(t, id, first)
	}
	c.spread()
	want := []map[string]string{{}}
	c.write(0, "a", 50, want[0]) // past two snapshots: the joiner installs one
	n := c.nodes[c.waitLeader(0)]
	big := pb.ConfChangeV2{Changes: []pb.ConfChangeSingle{{Type: pb.ConfChangeAddLearnerNode, NodeID: 4}}, Context: make([]byte, maxMemberContext+1)}
	if _, err := n.ChangeMembers(ctxT(t), 0, big); !errors.Is(err, ErrChangeRefused) {
		t.Fatalf("a change with a %d-byte context: %v, want %v", len(big.Context), err, ErrChangeRefused)
	}
	c.join(4)
	add := pb.ConfChangeV2{Changes: []pb.ConfChangeSingle{{Type: pb.ConfChangeAddLearnerNode, NodeID: 4}}, Context: []byte("node-4")}
	if _, err := n.ChangeMembers(ctxT(t), 0, add); err != nil {
		t.Fatal(err)
	}
	c.converge(want)
	all := maps.Clone(first)
	all[4] = "node-4"
	for _, id := range c.ids {
		l.wait(t, id, all)
	}
	c.stop(4)
	l.mu.Lock()
	delete(l.got, 4)
	l.mu.Unlock()
	c.start(4) // a joiner: no voters, no contexts given
	l.wait(t, 4, all)
}
