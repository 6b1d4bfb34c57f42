package logstore

import (
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// countingFSM counts applied commands and sums their 8-byte payloads.
type countingFSM struct {
	mu    sync.Mutex
	count uint64
	sum   uint64
}

func (f *countingFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	f.sum += binary.BigEndian.Uint64(l.Data)
	return f.count
}

func (f *countingFSM) state() (count, sum uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count, f.sum
}

func (f *countingFSM) Snapshot() (raft.FSMSnapshot, error) {
	count, sum := f.state()
	return fsmSnapshot{count: count, sum: sum}, nil
}

func (f *countingFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var buf [16]byte
	if _, err := io.ReadFull(rc, buf[:]); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count = binary.BigEndian.Uint64(buf[:8])
	f.sum = binary.BigEndian.Uint64(buf[8:])
	return nil
}

type fsmSnapshot struct{ count, sum uint64 }

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], s.count)
	binary.BigEndian.PutUint64(buf[8:], s.sum)
	if _, err := sink.Write(buf[:]); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}

// raftNode is a single-voter Raft group running on a Store in dir.
type raftNode struct {
	raft  *raft.Raft
	fsm   *countingFSM
	store *Store
	sh    *Shared // the store's Shared, when startSharedNode opened one
	trans *raft.InmemTransport
}

const raftTimeout = 10 * time.Second

// startNode opens the store in dir, bootstraps the cluster if there is no
// existing state, and waits until the node is leader.
func startNode(t *testing.T, dir string) *raftNode {
	t.Helper()
	store, err := Open(filepath.Join(dir, "raft-log"), Options{})
	requireNoErr(t, err, "Open")
	return startNodeOn(t, dir, store, nil)
}

// startSharedNode is startNode with the log in group 3 of a Shared.
func startSharedNode(t *testing.T, dir string) *raftNode {
	t.Helper()
	sh, err := OpenShared(filepath.Join(dir, "raft-log"), Options{})
	requireNoErr(t, err, "OpenShared")
	store, err := sh.Group(3, nil)
	requireNoErr(t, err, "Group")
	return startNodeOn(t, dir, store, sh)
}

func startNodeOn(t *testing.T, dir string, store *Store, sh *Shared) *raftNode {
	t.Helper()
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(dir, "snapshots"), 2, io.Discard)
	requireNoErr(t, err, "NewFileSnapshotStore")

	conf := raft.DefaultConfig()
	conf.LocalID = "node1"
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.SnapshotInterval = time.Hour // snapshots only when the test asks
	conf.SnapshotThreshold = 1 << 40
	conf.TrailingLogs = 10
	conf.LogOutput = io.Discard

	addr, trans := raft.NewInmemTransport("node1")
	hasState, err := raft.HasExistingState(store, store, snaps)
	requireNoErr(t, err, "HasExistingState")
	if !hasState {
		requireNoErr(t, raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{
			Servers: []raft.Server{{Suffrage: raft.Voter, ID: conf.LocalID, Address: addr}},
		}), "BootstrapCluster")
	}
	fsm := &countingFSM{}
	r, err := raft.NewRaft(conf, fsm, store, store, snaps, trans)
	requireNoErr(t, err, "NewRaft")
	n := &raftNode{raft: r, fsm: fsm, store: store, sh: sh, trans: trans}
	t.Cleanup(n.stop) // no-op if the test already stopped it

	deadline := time.Now().Add(raftTimeout)
	for r.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatalf("node did not become leader within %v (state %v)", raftTimeout, r.State())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n
}

func (n *raftNode) stop() {
	if n.raft == nil {
		return
	}
	_ = n.raft.Shutdown().Error()
	_ = n.trans.Close()
	_ = n.store.Close()
	if n.sh != nil {
		_ = n.sh.Close()
	}
	n.raft = nil
}

// apply applies commands carrying the values from..to-1, pipelined, and waits
// for all of them.
func (n *raftNode) apply(t *testing.T, from, to uint64) {
	t.Helper()
	futures := make([]raft.ApplyFuture, 0, to-from)
	for v := from; v < to; v++ {
		futures = append(futures, n.raft.Apply(binary.BigEndian.AppendUint64(nil, v), raftTimeout))
	}
	for i, f := range futures {
		if err := f.Error(); err != nil {
			t.Fatalf("Apply #%d: %v", from+uint64(i), err)
		}
	}
}

func expectFSM(t *testing.T, fsm *countingFSM, count uint64) {
	t.Helper()
	gotCount, gotSum := fsm.state()
	if wantSum := count * (count - 1) / 2; gotCount != count || gotSum != wantSum {
		t.Fatalf("FSM saw %d commands with sum %d, want %d with sum %d", gotCount, gotSum, count, wantSum)
	}
}

// TestRaftSingleNodeRestart runs a real single-node Raft on the store,
// applies 100 commands, restarts Raft on a reopened store and checks that
// the FSM is rebuilt with all 100 commands from the log.
func TestRaftSingleNodeRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	n.apply(t, 0, 100)
	expectFSM(t, n.fsm, 100)
	lastBefore, err := n.store.LastIndex()
	requireNoErr(t, err, "LastIndex")
	if lastBefore < 100 {
		t.Fatalf("LastIndex = %d after 100 applies", lastBefore)
	}
	n.stop()

	n = startNode(t, dir)
	// The Barrier commits after everything in the log, so the FSM must have
	// replayed the stored commands when it resolves.
	requireNoErr(t, n.raft.Barrier(raftTimeout).Error(), "Barrier")
	expectFSM(t, n.fsm, 100)
	first, _ := n.store.FirstIndex()
	last, _ := n.store.LastIndex()
	if first != 1 || last <= lastBefore {
		t.Fatalf("log bounds after restart = [%d, %d], want [1, >%d]", first, last, lastBefore)
	}
	term, err := n.store.GetUint64([]byte("CurrentTerm"))
	if err != nil || term < 2 {
		t.Fatalf("CurrentTerm after restart = %d, %v; want >= 2", term, err)
	}
	n.stop()
}

// TestRaftSnapshotCompactionRestart additionally takes a snapshot half way,
// which makes raft compact the log through DeleteRange, so the restarted
// FSM is rebuilt from the snapshot plus the remaining log.
func TestRaftSnapshotCompactionRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	n.apply(t, 0, 60)
	requireNoErr(t, n.raft.Snapshot().Error(), "Snapshot")
	first, _ := n.store.FirstIndex()
	if first <= 1 {
		t.Fatalf("FirstIndex = %d after snapshot; expected raft to compact the log", first)
	}
	var l raft.Log
	if err := n.store.GetLog(first-1, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(%d) below FirstIndex = %v", first-1, err)
	}
	n.apply(t, 60, 100)
	expectFSM(t, n.fsm, 100)
	n.stop()

	n = startNode(t, dir)
	requireNoErr(t, n.raft.Barrier(raftTimeout).Error(), "Barrier")
	expectFSM(t, n.fsm, 100)
	if got, _ := n.store.FirstIndex(); got != first {
		t.Fatalf("FirstIndex after restart = %d, want %d", got, first)
	}
	n.stop()
}

// A snapshot that cuts several deleteChunks of log, alone in its DB and in a
// Shared: the cut leaves exactly the trailing entries, and a restart rebuilds
// the FSM from the snapshot and that log.
func TestRaftCompactionInChunksRestart(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := "alone"
		start := startNode
		if shared {
			name, start = "shared", startSharedNode
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			n := start(t, dir)
			const applied = 3*deleteChunk + 100
			n.apply(t, 0, applied)
			requireNoErr(t, n.raft.Snapshot().Error(), "Snapshot")
			first, _ := n.store.FirstIndex()
			last, _ := n.store.LastIndex()
			if first < 3*deleteChunk || last-first+1 < 10 {
				t.Fatalf("after the snapshot the log is [%d..%d]; want it cut to its trailing entries", first, last)
			}
			var l raft.Log
			if err := n.store.GetLog(first-1, &l); !errors.Is(err, raft.ErrLogNotFound) {
				t.Fatalf("GetLog(%d) below FirstIndex = %v", first-1, err)
			}
			for i := first; i <= last; i++ {
				requireNoErr(t, n.store.GetLog(i, &l), "GetLog of a kept entry")
			}
			n.apply(t, applied, applied+50)
			n.stop()

			n = start(t, dir)
			requireNoErr(t, n.raft.Barrier(raftTimeout).Error(), "Barrier")
			expectFSM(t, n.fsm, applied+50)
			if got, _ := n.store.FirstIndex(); got != first {
				t.Fatalf("FirstIndex after restart = %d, want %d", got, first)
			}
			n.stop()
		})
	}
}
