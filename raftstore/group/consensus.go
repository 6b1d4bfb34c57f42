package group

import (
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
	ReloadConfig(rc raft.ReloadableConfig) error
	Shutdown() raft.Future
}

// hashiRaft is hashicorp/raft as a group's engine: *raft.Raft, and what it
// does in other terms.
type hashiRaft struct{ *raft.Raft }

var _ consensus = hashiRaft{}

// WatchLeader implements consensus with an observer whose filter sends the
// signal: no channel of observations, no goroutine.
func (h hashiRaft) WatchLeader(ch chan<- struct{}) (stop func()) {
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
