package mux

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Header bytes for the end-to-end test: one Raft group and an echo service
// sharing each node's port.
const (
	headerRaft byte = 1
	headerEcho byte = 2
)

// listFSM records every applied command in order.
type listFSM struct {
	mu   sync.Mutex
	cmds []string
}

func (f *listFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, string(l.Data))
	return nil
}

func (f *listFSM) applied() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cmds...)
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("not supported") }
func (f *listFSM) Restore(io.ReadCloser) error         { return errors.New("not supported") }

type raftNode struct {
	id    raft.ServerID
	mux   *Mux
	trans *raft.NetworkTransport
	fsm   *listFSM
	raft  *raft.Raft
}

// startRaftNodes starts n Raft nodes, each with its NetworkTransport on a
// mux Layer of its own port, all bootstrapped with the same configuration.
// Everything is shut down when the test ends.
func startRaftNodes(t *testing.T, n int) []*raftNode {
	t.Helper()
	logOut := &testWriter{t: t}
	t.Cleanup(logOut.stop) // registered first, so it runs after the shutdown below

	nodes := make([]*raftNode, n)
	var servers []raft.Server
	for i := range nodes {
		m, err := Listen("127.0.0.1:0", testLogger(t))
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
		id := raft.ServerID(fmt.Sprintf("n%d", i))
		trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream:  m.Handle(headerRaft),
			MaxPool: 3,
			Timeout: 2 * time.Second,
			Logger:  hclog.New(&hclog.LoggerOptions{Name: "transport-" + string(id), Output: logOut, Level: hclog.Info}),
		})
		if got, want := string(trans.LocalAddr()), m.Addr().String(); got != want {
			t.Fatalf("transport LocalAddr = %s, want the mux's %s", got, want)
		}
		nodes[i] = &raftNode{id: id, mux: m, trans: trans, fsm: &listFSM{}}
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: id, Address: trans.LocalAddr()})
	}

	served := make(chan error, n)
	for _, nd := range nodes {
		go func() { served <- nd.mux.Serve() }()
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd.raft != nil {
				if err := nd.raft.Shutdown().Error(); err != nil {
					t.Errorf("%s: raft shutdown: %v", nd.id, err)
				}
			}
			nd.trans.Close()
			if err := nd.mux.Close(); err != nil {
				t.Errorf("%s: mux close: %v", nd.id, err)
			}
		}
		for range nodes {
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("Serve returned %v after Close", err)
				}
			case <-time.After(waitTimeout):
				t.Errorf("Serve did not return within %v of Close", waitTimeout)
				return
			}
		}
	})

	for _, nd := range nodes {
		conf := raft.DefaultConfig()
		conf.LocalID = nd.id
		conf.HeartbeatTimeout = 200 * time.Millisecond
		conf.ElectionTimeout = 200 * time.Millisecond
		conf.LeaderLeaseTimeout = 100 * time.Millisecond
		conf.CommitTimeout = 5 * time.Millisecond
		conf.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-" + string(nd.id), Output: logOut, Level: hclog.Info})

		logs, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, logs, logs, snaps, nd.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatalf("%s: BootstrapCluster: %v", nd.id, err)
		}
		r, err := raft.NewRaft(conf, nd.fsm, logs, logs, snaps, nd.trans)
		if err != nil {
			t.Fatalf("%s: NewRaft: %v", nd.id, err)
		}
		nd.raft = r
	}
	return nodes
}

// waitLeader polls until exactly one node is leader and every node knows it.
func waitLeader(t *testing.T, nodes []*raftNode) *raftNode {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		var leader *raftNode
		leaders := 0
		for _, nd := range nodes {
			if nd.raft.State() == raft.Leader {
				leader, leaders = nd, leaders+1
			}
		}
		agreed := leaders == 1
		for _, nd := range nodes {
			if addr, _ := nd.raft.LeaderWithID(); agreed && addr != leader.trans.LocalAddr() {
				agreed = false
			}
		}
		if agreed {
			return leader
		}
		if time.Now().After(deadline) {
			t.Fatalf("no agreed leader within %v", waitTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// echoServer echoes every connection on l until l is closed.
func echoServer(l *Layer) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}

// echoClient round-trips random payloads to the echo layer at addr, one
// connection per round trip, until stop is closed. It returns the number of
// round trips, or the first failure.
func echoClient(addr string, stop <-chan struct{}) (int, error) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
	for n := 0; ; n++ {
		select {
		case <-stop:
			return n, nil
		default:
		}
		c, err := Dial(addr, headerEcho, waitTimeout)
		if err != nil {
			return n, err
		}
		msg := make([]byte, 1+rng.IntN(4096))
		for i := range msg {
			msg[i] = byte(rng.Uint32())
		}
		c.SetDeadline(time.Now().Add(waitTimeout))
		_, err = c.Write(msg)
		got := make([]byte, len(msg))
		if err == nil {
			_, err = io.ReadFull(c, got)
		}
		c.Close()
		if err != nil {
			return n, fmt.Errorf("echo round trip %d: %w", n, err)
		}
		if !bytes.Equal(got, msg) {
			return n, fmt.Errorf("echo round trip %d: reply differs from the %d bytes sent", n, len(msg))
		}
	}
}

// TestRaftOverMux runs a three-node hashicorp/raft cluster whose transports
// share each node's port with an echo service: the nodes elect a leader and
// replicate 50 entries to all three while echo clients hammer the same ports.
func TestRaftOverMux(t *testing.T) {
	nodes := startRaftNodes(t, 3)
	for _, nd := range nodes {
		go echoServer(nd.mux.Handle(headerEcho))
	}

	stop := make(chan struct{})
	type echoResult struct {
		trips int
		err   error
	}
	results := make(chan echoResult, len(nodes))
	for _, nd := range nodes {
		go func() {
			n, err := echoClient(nd.mux.Addr().String(), stop)
			results <- echoResult{n, err}
		}()
	}
	var stopOnce sync.Once
	stopEcho := func() { stopOnce.Do(func() { close(stop) }) }
	defer stopEcho()

	const entries = 50
	want := make([]string, entries)
	for i := range want {
		want[i] = fmt.Sprintf("entry-%02d", i)
	}
	applied := 0
	deadline := time.Now().Add(waitTimeout)
	for applied < entries {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d entries applied within %v", applied, entries, waitTimeout)
		}
		leader := waitLeader(t, nodes)
		i := applied
		if err := leader.raft.Apply([]byte(want[i]), time.Second).Error(); err != nil {
			// Leadership moved mid-apply; a lost entry would show up as
			// a mismatch below, a duplicate likewise.
			t.Logf("apply %d on %s: %v; retrying", i, leader.id, err)
			continue
		}
		applied++
	}

	for _, nd := range nodes {
		var got []string
		for {
			got = nd.fsm.applied()
			if len(got) >= entries {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s applied %d of %d entries within %v", nd.id, len(got), entries, waitTimeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s applied %v, want %v", nd.id, got, want)
		}
	}

	stopEcho()
	total := 0
	for range nodes {
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("echo client: %v", r.err)
			}
			if r.trips == 0 {
				t.Fatalf("an echo client completed no round trip while Raft ran")
			}
			total += r.trips
		case <-time.After(waitTimeout):
			t.Fatalf("echo client did not stop within %v", waitTimeout)
		}
	}
	t.Logf("replicated %d entries to %d nodes alongside %d echo round trips", entries, len(nodes), total)
}
