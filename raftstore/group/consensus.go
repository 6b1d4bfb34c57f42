package group

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// consensus is what a group asks of its Raft engine, all in one place:
// hashicorp/raft (hashiRaft) today, whose methods these mostly are, each with
// its contract. The node-wide engine (package multiraft) is to satisfy it
// next (issue 50), which turns the hashicorp-specific parts (futures,
// reloadable config) into the group's own terms one by one, as WatchLeader
// did for observers.
type consensus interface {
	// The log: proposing, and where it stands.
	Apply(cmd []byte, timeout time.Duration) raft.ApplyFuture
	Barrier(timeout time.Duration) raft.Future
	Snapshot() raft.SnapshotFuture
	AppliedIndex() uint64
	CommitIndex() uint64
	LastIndex() uint64

	// Leadership.
	State() raft.RaftState
	LeaderWithID() (raft.ServerAddress, raft.ServerID)
	CurrentTerm() uint64
	LastContact() time.Time
	VerifyLeader() raft.Future
	LeaderCh() <-chan bool
	// WatchLeader sends on ch, without blocking (give it room for one),
	// after each change of the leader this replica knows, until stop.
	WatchLeader(ch chan<- struct{}) (stop func())
	LeadershipTransfer() raft.Future
	LeadershipTransferToServer(id raft.ServerID, address raft.ServerAddress) raft.Future

	// Members.
	BootstrapCluster(configuration raft.Configuration) raft.Future
	GetConfiguration() raft.ConfigurationFuture
	AddVoter(id raft.ServerID, address raft.ServerAddress, prevIndex uint64, timeout time.Duration) raft.IndexFuture
	AddNonvoter(id raft.ServerID, address raft.ServerAddress, prevIndex uint64, timeout time.Duration) raft.IndexFuture
	DemoteVoter(id raft.ServerID, prevIndex uint64, timeout time.Duration) raft.IndexFuture
	RemoveServer(id raft.ServerID, prevIndex uint64, timeout time.Duration) raft.IndexFuture

	// Running.
	Stats() map[string]string
	ReloadableConfig() raft.ReloadableConfig
	// PokeFollower makes a follower check for a silent leader now, not
	// at its next timer (watchContact).
	PokeFollower() error
	// SetTrailingLogs sets how many entries the log keeps after a
	// snapshot (logbytes.go).
	SetTrailingLogs(n uint64) error
	Shutdown() raft.Future
}

// hashiRaft is hashicorp/raft as a group's engine: *raft.Raft, and what it
// does in other terms.
type hashiRaft struct {
	*raft.Raft
	reloadMu sync.Mutex // serialises ReloadConfig's read-modify-write (PokeFollower, SetTrailingLogs)
}

var _ consensus = (*hashiRaft)(nil)

// WatchLeader implements consensus with an observer whose filter sends the
// signal: no channel of observations, no goroutine.
func (h *hashiRaft) WatchLeader(ch chan<- struct{}) (stop func()) {
	observer := raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if _, ok := o.Data.(raft.LeaderObservation); ok {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		return false // nothing for the observer's channel: it has none
	})
	h.RegisterObserver(observer)
	return func() { h.DeregisterObserver(observer) }
}

// PokeFollower implements consensus: a ReloadConfig that lowers the
// heartbeat timeout fires hashicorp/raft's follower timer at once (its
// documented effect: "On follower, update current timer to use the shorter
// new value"); the timeout goes back a moment later. The lowered value
// differs by a millisecond, so the check it runs is the one the timer would
// have run.
func (h *hashiRaft) PokeFollower() error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	rc := h.ReloadableConfig()
	base := rc.HeartbeatTimeout
	rc.HeartbeatTimeout = base - time.Millisecond
	if err := h.ReloadConfig(rc); err != nil {
		return fmt.Errorf("lowering the heartbeat timeout: %w", err)
	}
	rc.HeartbeatTimeout = base
	if err := h.ReloadConfig(rc); err != nil {
		return fmt.Errorf("restoring the heartbeat timeout: %w", err)
	}
	return nil
}

// SetTrailingLogs implements consensus (ReloadConfig; the other reloadable
// settings stay).
func (h *hashiRaft) SetTrailingLogs(n uint64) error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	rc := h.ReloadableConfig()
	rc.TrailingLogs = n
	return h.ReloadConfig(rc)
}
