package multiraft

import (
	"slices"
	"testing"
	"time"
)

// TestProposeAsyncAndBarrier: an asynchronous proposal's Done closes with
// its result; a barrier returns once everything before it applied, and the
// state machine never sees it.
func TestProposeAsyncAndBarrier(t *testing.T) {
	c := newCluster(t, 3, 1)
	leads := c.spread()
	n := c.nodes[leads[0]]
	var ps []*Proposal
	for i := range 20 {
		p, err := n.ProposeAsync(0, []byte("k="+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if err := n.Barrier(ctxT(t), 0); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		select {
		case <-p.Done():
		default:
			t.Fatalf("proposal %d not done after a barrier proposed after it", i)
		}
		v, err := p.Result(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "", false: string(rune('a' + i - 1))}[i == 0]; v != want {
			t.Fatalf("proposal %d: %q, want %q", i, v, want)
		}
	}
	_, indexes := c.sms[leads[0]][0].snapshot()
	for i, p := range ps {
		if p.Index() != indexes[i] {
			t.Fatalf("proposal %d: Index %d, applied at %d", i, p.Index(), indexes[i])
		}
	}
	st, _ := n.Status(0)
	if len(indexes) != 20 || slices.Contains(indexes, st.Applied) {
		t.Fatalf("the state machine applied indexes %v; the barrier's (%d) must not be among them", indexes, st.Applied)
	}
	if _, err := c.nodes[c.ids[int(leads[0])%3]].ProposeAsync(0, []byte("x=1")); err != ErrNotLeader {
		t.Fatalf("ProposeAsync at a follower: %v", err)
	}
}

// TestStatusAndLeaderChanged: LeaderChanged's channel closes when the
// leadership moves, and Status then names the new leader on every node,
// with commit, applied and last indexes in order.
func TestStatusAndLeaderChanged(t *testing.T) {
	c := newCluster(t, 3, 1)
	leads := c.spread()
	old := leads[0]
	to := c.ids[int(old)%3]
	chs := map[uint64]<-chan struct{}{}
	for _, id := range c.ids {
		chs[id] = c.nodes[id].LeaderChanged(0)
	}
	c.nodes[old].TransferLeadership(0, to)
	for id, ch := range chs {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("node %d: no change of leader seen", id)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ok := true
		for _, id := range c.ids {
			st, _ := c.nodes[id].Status(0)
			ok = ok && st.Lead == to && st.Leading == (id == to)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the nodes do not all name the new leader")
		}
	}
	if _, err := c.nodes[to].Propose(ctxT(t), 0, []byte("a=1")); err != nil {
		t.Fatal(err)
	}
	st, _ := c.nodes[to].Status(0)
	if st.Applied == 0 || st.Commit < st.Applied || st.Last < st.Commit {
		t.Fatalf("status %+v: want 0 < applied <= commit <= last", st)
	}
}

// TestTakeSnapshot: a snapshot on demand, long before SnapshotEntries.
func TestTakeSnapshot(t *testing.T) {
	c := newCluster(t, 3, 1)
	leads := c.spread()
	n := c.nodes[leads[0]]
	if _, err := n.Propose(ctxT(t), 0, []byte("a=1")); err != nil {
		t.Fatal(err)
	}
	before := n.Snapshots.Load()
	n.TakeSnapshot(0)
	for deadline := time.Now().Add(10 * time.Second); n.Snapshots.Load() == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot taken")
		}
	}
}

// TestStatusAfterRestart: a node that restarts after its group moved to a
// newer term learns the term and the leader from one message; its Status
// then names that leader.
func TestStatusAfterRestart(t *testing.T) {
	c := newCluster(t, 3, 1)
	leads := c.spread()
	old := leads[0]
	down := c.ids[int(old)%3] // a follower
	c.stop(down)
	to := c.ids[(int(old)+1)%3] // the other follower
	c.nodes[old].TransferLeadership(0, to)
	for deadline := time.Now().Add(10 * time.Second); !leading(c.nodes[to], 0); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the leadership did not move")
		}
	}
	c.start(down)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st, _ := c.nodes[down].Status(0); st.Lead == to {
			break
		}
		if time.Now().After(deadline) {
			st, _ := c.nodes[down].Status(0)
			t.Fatalf("the restarted node names %d as leader (term %d), want %d", st.Lead, st.Term, to)
		}
	}
}
