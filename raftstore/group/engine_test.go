package group

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/multiraft"
	"github.com/lockd/lockd/resp"
)

// engineNet links in-process multiraft nodes.
type engineNet struct {
	mu    sync.RWMutex
	nodes map[uint64]*multiraft.Node
}

type engineLink struct{ net *engineNet }

func (l engineLink) Send(to uint64, frame []byte) {
	l.net.mu.RLock()
	n := l.net.nodes[to]
	l.net.mu.RUnlock()
	if n != nil {
		_ = n.Receive(frame)
	}
}

type engineReplica struct {
	node *multiraft.Node
	sh   *logstore.Shared
	m    *machine
}

// startEngineReplica starts node id of group 0 on dir with a fresh machine
// (restored from the node's snapshot and log, if it has any).
func startEngineReplica(t *testing.T, net *engineNet, id uint64, dir string) *engineReplica {
	t.Helper()
	sh, err := logstore.OpenShared(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := multiraft.NewNode(multiraft.Config{ID: id, Storage: multiraft.NewLogStorage(sh), Transport: engineLink{net},
		Tick: 2 * time.Millisecond, ElectionTicks: 50, HeartbeatTicks: 5, SnapshotEntries: 50, TrailingEntries: 10})
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine()
	if err := n.AddGroup(0, multiraft.GroupConfig{Voters: []uint64{1, 2, 3}, SM: &engineMachine{m: m}}); err != nil {
		t.Fatal(err)
	}
	net.mu.Lock()
	net.nodes[id] = n
	net.mu.Unlock()
	n.Start()
	return &engineReplica{node: n, sh: sh, m: m}
}

func (r *engineReplica) stop(t *testing.T, net *engineNet, id uint64) {
	net.mu.Lock()
	delete(net.nodes, id)
	net.mu.Unlock()
	r.node.Stop()
	if err := r.sh.Close(); err != nil {
		t.Error(err)
	}
}

// snapshotBytes is m's state as its snapshot writes it.
func snapshotBytes(t *testing.T, m *machine) []byte {
	t.Helper()
	write, err := (&engineMachine{m: m}).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := write()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMachineOnEngine: a group's machine runs unchanged on the multiraft
// engine: lock commands proposed there get the replies the same entries get
// from a machine applying them directly (as under hashicorp/raft), every
// replica ends in the same state, and a replica restarted with an empty
// machine rebuilds it from its snapshot and log.
func TestMachineOnEngine(t *testing.T) {
	net := &engineNet{nodes: map[uint64]*multiraft.Node{}}
	root := t.TempDir()
	dirs := map[uint64]string{}
	reps := map[uint64]*engineReplica{}
	for id := uint64(1); id <= 3; id++ {
		dirs[id] = fmt.Sprintf("%s/%d", root, id)
		reps[id] = startEngineReplica(t, net, id, dirs[id])
	}
	t.Cleanup(func() {
		for id, r := range reps {
			r.stop(t, net, id)
		}
	})
	var lead *engineReplica
	for deadline := time.Now().Add(20 * time.Second); lead == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		reps[1].node.Campaign(0)
		for _, r := range reps {
			if st, _ := r.node.Status(0); st.Leading {
				lead = r
			}
		}
	}

	direct := newMachine() // the same entries, applied as hashicorp/raft's FSM gets them
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	propose := func(args ...string) resp.Value {
		t.Helper()
		argv := make([][]byte, len(args))
		for i, a := range args {
			argv[i] = []byte(a)
		}
		now := time.Now().UnixMilli()
		data := command.Entry{Kind: command.KindCommand, Time: now, Wall: now, Args: argv}.Encode()
		var got any
		var err error
		var p *multiraft.Proposal
		for range 100 { // the leader may still be taking office
			if p, err = lead.node.ProposeAsync(0, data); err == nil {
				got, err = p.Result(ctx)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		index := p.Index()
		want := direct.ApplyBatch([]*raft.Log{{Index: index, Type: raft.LogCommand, Data: data}})[0]
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%v: %v on the engine, %v applied directly", args, got, want)
		}
		return got.(resp.Value)
	}
	for i := range 60 {
		name := "lock:" + strconv.Itoa(i%7)
		v := propose("LOCK.ACQUIRE", name, "owner-"+strconv.Itoa(i), "PX", "60000")
		if v.Kind == resp.KindInt && i%2 == 0 {
			propose("LOCK.RELEASE", name, strconv.FormatInt(v.Int, 10))
		}
	}

	converged := func(want []byte) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			same := true
			for _, r := range reps {
				if !bytes.Equal(snapshotBytes(t, r.m), want) {
					same = false
				}
			}
			if same {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("replicas differ from the machine that applied the entries directly")
			}
		}
	}
	converged(snapshotBytes(t, direct))

	reps[3].stop(t, net, 3)
	reps[3] = startEngineReplica(t, net, 3, dirs[3])
	propose("LOCK.ACQUIRE", "after-restart", "me", "PX", "60000")
	converged(snapshotBytes(t, direct))
}
