package group

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/multiraft"
	"github.com/lockd/lockd/resp"
)

// engineRafts starts nodes n1..n<count> (voters: the first three) of group 0
// on the engine, each with a group machine, and returns their consensus.
func engineRafts(t *testing.T, count int) (map[raft.ServerID]*engineRaft, *enginePeers, *engineNet) {
	t.Helper()
	net := &engineNet{nodes: map[uint64]*multiraft.Node{}}
	peers := newEnginePeers()
	var voters []uint64
	for i := 1; i <= 3; i++ {
		voters = append(voters, peers.add(raft.ServerID(fmt.Sprintf("n%d", i)), raft.ServerAddress(fmt.Sprintf("127.0.0.1:%d", 7000+i))))
	}
	out := map[raft.ServerID]*engineRaft{}
	for i := 1; i <= count; i++ {
		id := raft.ServerID(fmt.Sprintf("n%d", i))
		n64 := peers.add(id, raft.ServerAddress(fmt.Sprintf("127.0.0.1:%d", 7000+i)))
		sh, err := logstore.OpenShared(t.TempDir(), logstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		node, err := multiraft.NewNode(multiraft.Config{ID: n64, Storage: multiraft.NewLogStorage(sh), Transport: engineLink{net},
			Tick: 2 * time.Millisecond, ElectionTicks: 50, HeartbeatTicks: 5})
		if err != nil {
			t.Fatal(err)
		}
		gc := multiraft.GroupConfig{SM: &engineMachine{m: newMachine()}}
		if i <= 3 {
			gc.Voters = voters
		}
		if err := node.AddGroup(0, gc); err != nil {
			t.Fatal(err)
		}
		net.mu.Lock()
		net.nodes[n64] = node
		net.mu.Unlock()
		node.Start()
		e := newEngineRaft(node, 0, id, peers)
		out[id] = e
		t.Cleanup(func() {
			e.Shutdown()
			node.Stop()
			if err := sh.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	return out, peers, net
}

// waitEngineLeader waits, bounded, for one of rs to lead and returns it.
func waitEngineLeader(t *testing.T, rs map[raft.ServerID]*engineRaft) (raft.ServerID, *engineRaft) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for id, r := range rs {
			if r.State() == raft.Leader {
				return id, r
			}
		}
		rs["n1"].node.Campaign(0)
	}
	t.Fatal("no leader")
	return "", nil
}

// TestEngineRaftConsensus: a group on the engine answers as hashicorp/raft
// does where a Store asks: futures with replies, indexes and hashicorp's
// errors; leadership, its channel and its transfer; the configuration and
// its changes; INFO's statistics.
func TestEngineRaftConsensus(t *testing.T) {
	rs, _, _ := engineRafts(t, 4)
	leadID, lead := waitEngineLeader(t, rs)
	select {
	case got := <-lead.LeaderCh():
		if !got {
			t.Fatal("LeaderCh said false on the new leader")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LeaderCh said nothing on the new leader")
	}
	now := time.Now().UnixMilli()
	entry := command.Entry{Kind: command.KindCommand, Time: now, Wall: now,
		Args: [][]byte{[]byte("LOCK.ACQUIRE"), []byte("l"), []byte("me"), []byte("PX"), []byte("60000")}}.Encode()
	f := lead.Apply(entry, time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Response().(resp.Value); !ok || v.Kind != resp.KindInt || f.Index() == 0 {
		t.Fatalf("Apply: response %v, index %d", f.Response(), f.Index())
	}
	b := lead.Barrier(time.Second)
	if err := b.Error(); err != nil || b.(raft.IndexFuture).Index() <= f.Index() || lead.AppliedIndex() < b.(raft.IndexFuture).Index() {
		t.Fatalf("Barrier: %v, index %d after the entry's %d, applied %d", err, b.(raft.IndexFuture).Index(), f.Index(), lead.AppliedIndex())
	}
	if err := lead.VerifyLeader().Error(); err != nil {
		t.Fatal(err)
	}
	var follower *engineRaft
	for id, r := range rs {
		if id != leadID && id != "n4" {
			follower = r
		}
	}
	if err := follower.Apply(entry, time.Second).Error(); !errors.Is(err, raft.ErrNotLeader) {
		t.Fatalf("Apply at a follower: %v, want raft.ErrNotLeader", err)
	}
	if err := follower.VerifyLeader().Error(); !errors.Is(err, raft.ErrNotLeader) {
		t.Fatalf("VerifyLeader at a follower: %v", err)
	}
	if addr, id := follower.LeaderWithID(); id != leadID || addr == "" {
		t.Fatalf("a follower names %q at %q as leader, want %q", id, addr, leadID)
	}
	if st := lead.Stats(); st["state"] != "Leader" || st["num_peers"] != "2" || st["applied_index"] == "0" {
		t.Fatalf("Stats: %v", st)
	}

	// n4 joins as a non-voter, becomes a voter, and the leadership moves to it.
	if err := lead.AddNonvoter("n4", "127.0.0.1:7004", 0, time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := lead.AddVoter("n4", "127.0.0.1:7004", 0, time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	f2 := lead.GetConfiguration()
	if err := f2.Error(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range f2.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			ids = append(ids, string(s.ID))
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"n1", "n2", "n3", "n4"}) {
		t.Fatalf("voters %v", ids)
	}
	for deadline := time.Now().Add(10 * time.Second); rs["n4"].AppliedIndex() < b.(raft.IndexFuture).Index(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("n4 did not catch up")
		}
	}
	if err := lead.LeadershipTransferToServer("n4", "").Error(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); rs["n4"].State() != raft.Leader; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the leadership did not move to n4")
		}
	}
	if err := rs["n4"].RemoveServer(leadID, 0, time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if got := len(rs["n4"].GetConfiguration().Configuration().Servers); got != 3 {
		t.Fatalf("%d servers after a removal from four", got)
	}
}
